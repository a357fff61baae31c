#!/bin/bash
# Runs bench_viewer (and one screenshot) with OpenGL drawn by the NVIDIA GPU of the device
# machine, which has no display and no Debian packages.
#
#   bench/viewer_gpu.sh prepare   # here (Debian 12, amd64): fills .devcarry/viewer/carry and .gl
#   bench/viewer_gpu.sh run       # there, from the repo root, carry: .gl .devcarry/viewer/carry
#   VIEWER_GPU_REPEAT=3 VIEWER_GPU_FRAMES=600 bench/viewer_gpu.sh run   # only repeats of the NVIDIA run
#
# The X server is a carried Debian Xvfb whose compiled-in paths (DRI driver, xkbcomp, XKB data)
# are rewritten to /tmp/fx, so nothing is unpacked into / except the GL loaders (.gl, as the
# device notes ask). Xvfb's own GLX is Mesa's (it needs swrast_dri.so to offer GLX at all); the
# client picks NVIDIA's GLX with __GLX_VENDOR_LIBRARY_NAME=nvidia, or NVIDIA's EGL with
# FLASHSIM_VIEWER_GL=egl. bench_viewer prints the GL renderer string: that is the proof.
set -u
C=.devcarry/viewer/carry

prepare() {
  set -e
  local B=build/viewergpu W=.devcarry/viewer
  [ -x $B/bin/bench_viewer ] || { echo "build $B first"; exit 1; }
  local o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
  mkdir -p .gl /tmp/amd64/partial $W/debs $C
  apt-get $o update >/dev/null
  (cd .gl && apt-get $o download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
  # Xvfb, xkbcomp, Mesa's software DRI driver, glxinfo/eglinfo, GLFW, fonts, and everything
  # they load but glibc and libstdc++ (the device has newer ones).
  (cd $W/debs && apt-get $o download xvfb x11-xkb-utils xkb-data libgl1-mesa-dri libglapi-mesa \
    mesa-utils-bin libwayland-client0 libwayland-egl1 fonts-dejavu-core libglfw3 libstb0 libaudit1 \
    libbrotli1 libbsd0 libbz2-1.0 libcap-ng0 libcap2 libdrm-amdgpu1 libdrm-intel1 libdrm-nouveau2 \
    libdrm-radeon1 libdrm2 libedit2 libelf1 libexpat1 libffi8 libfontenc1 libfreetype6 libgcrypt20 \
    libgpg-error0 libicu72 libllvm15 liblz4-1 liblzma5 libmd0 libpciaccess0 libpcre2-8-0 \
    libpixman-1-0 libpng16-16 libselinux1 libsensors5 libsystemd0 libtinfo6 libunwind8 libx11-6 \
    libx11-xcb1 libxau6 libxcb-dri3-0 libxcb1 libxcursor1 libxdmcp6 libxext6 libxfixes3 libxfont2 \
    libxi6 libxinerama1 libxkbfile1 libxml2 libxrandr2 libxrender1 libxxf86vm1 libz3-4 libzstd1 \
    zlib1g libxshmfence1 libglx-mesa0 libxcb-dri2-0 libxcb-glx0 libxcb-present0 \
    libxcb-randr0 libxcb-shm0 libxcb-sync1 libxcb-xfixes0)
  rm -rf $W/root $W/stage && mkdir -p $W/root $W/stage/bin $W/stage/lib $W/stage/dri $W/stage/fonts
  for f in $W/debs/*.deb; do dpkg -x "$f" $W/root; done
  local R=$W/root S=$W/stage
  cp -a $R/usr/bin/xkbcomp $S/bin/
  cp -a $R/usr/bin/glxinfo.x86_64-linux-gnu $S/bin/glxinfo
  cp -a $R/usr/bin/eglinfo.x86_64-linux-gnu $S/bin/eglinfo
  cp -a $R/usr/lib/x86_64-linux-gnu/*.so* $R/lib/x86_64-linux-gnu/*.so* $S/lib/
  (cd $S/lib && rm -f libicui18n* libicuio* libicutest* libicutu* libtic* libunwind-coredump* \
    libunwind-ptrace* libLLVM-15.so libexpatw* libdrop_ambient* libpsx*)
  cp -a $R/usr/lib/x86_64-linux-gnu/dri/swrast_dri.so $S/dri/  # the other *_dri.so are copies
  cp -a $R/usr/share/X11/xkb $S/xkb
  cp -a $R/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf $R/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf $S/fonts/
  python3 - $R/usr/bin/Xvfb $S/bin/Xvfb-fx <<'EOF'
import sys
d = bytearray(open(sys.argv[1], 'rb').read())
def patch(old, new):  # same place, NUL-padded: the strings are C strings
    i = d.find(old + b'\0')
    assert i > 0 and d.find(old + b'\0', i + 1) < 0, old
    d[i:i + len(old)] = new + b'\0' * (len(old) - len(new))
patch(b'/usr/lib/x86_64-linux-gnu/dri', b'/tmp/fx/dri')
patch(b'/usr/bin', b'/tmp/fx')  # where xkbcomp is looked for
patch(b'/usr/share/X11/xkb', b'/tmp/fx/xkb')
open(sys.argv[2], 'wb').write(d)
EOF
  chmod +x $S/bin/Xvfb-fx
  tar -C $S -cf - . | xz -T2 -6 > $C/xvfb-mesa.tar.xz
  for t in bench_viewer flashsim-viewer; do
    cp $B/bin/$t $C/$t
  done
  du -sh $C .gl
}

run() {
  local out=${OUT:-/tmp/viewer_gpu_out} S=/tmp/fxroot
  mkdir -p "$out" $S /tmp/fx
  for f in .gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
  tar -xJf $C/xvfb-mesa.tar.xz -C $S
  ln -sfn $S/bin/xkbcomp /tmp/fx/xkbcomp
  ln -sfn $S/dri /tmp/fx/dri
  ln -sfn $S/xkb /tmp/fx/xkb
  # The viewer reads DejaVu from its Debian path; add the two files only where they are absent.
  if [ ! -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ]; then
    mkdir -p /usr/share/fonts/truetype/dejavu && cp $S/fonts/*.ttf /usr/share/fonts/truetype/dejavu/
    echo "fonts: added DejaVuSans/DejaVuSansMono to /usr/share/fonts/truetype/dejavu"
  fi
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
  local nv
  nv=$(dirname "$(ldconfig -p | awk '/libGLX_nvidia.so.0/{print $NF; exit}')")
  [ "$nv" = . ] && nv=$(dirname "$(find /usr/local/nvidia /usr/lib /usr/lib64 -name 'libGLX_nvidia.so.0' 2>/dev/null | head -1)")
  echo "NVIDIA GL libraries in: $nv"
  ls /usr/local/nvidia/share/glvnd/egl_vendor.d/ /usr/share/glvnd/egl_vendor.d/ 2>/dev/null
  local d=${VIEWER_GPU_DISPLAY:-99}
  LD_LIBRARY_PATH=$S/lib $S/bin/Xvfb-fx :$d -screen 0 1280x800x24 -nolisten tcp >"$out/xvfb.log" 2>&1 &
  local xp=$!
  trap "kill $xp" EXIT
  for _ in $(seq 50); do [ -e /tmp/.X11-unix/X$d ] && break; sleep 0.1; done
  export DISPLAY=:$d LD_LIBRARY_PATH=$S/lib:$nv
  local egl=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
  [ -e $egl ] && export __EGL_VENDOR_LIBRARY_FILENAMES=$egl
  echo "== glxinfo -B, NVIDIA's GLX"; __GLX_VENDOR_LIBRARY_NAME=nvidia timeout 20 $S/bin/glxinfo -B 2>&1 | head -30
  echo "== eglinfo (first lines)"; timeout 20 $S/bin/eglinfo 2>&1 | grep -i -E "platform|vendor|renderer|version|error|fail" | head -20
  local bench="$C/bench_viewer lessons/06-online-softmax/solution.fsa"
  if [ "${VIEWER_GPU_REPEAT:-0}" -gt 0 ]; then
    # Only repeats of the NVIDIA run with more frames, then what the EGL switch gives here.
    for i in $(seq "$VIEWER_GPU_REPEAT"); do
      echo "== bench_viewer, NVIDIA's GLX, repeat $i"
      __GLX_VENDOR_LIBRARY_NAME=nvidia timeout 120 $bench --frames "${VIEWER_GPU_FRAMES:-600}" 2>&1 |
        tee "$out/bench_glx_nvidia_$i.txt"
    done
    echo "== bench_viewer, FLASHSIM_VIEWER_GL=egl"
    FLASHSIM_VIEWER_GL=egl timeout 60 $bench --frames 20 2>&1 | grep -E "^frames|verdict" | tee "$out/bench_egl.txt"
    nvidia-smi --query-gpu=clocks.sm,clocks.mem,utilization.gpu --format=csv
    return
  fi
  echo "== bench_viewer, NVIDIA's GLX"
  __GLX_VENDOR_LIBRARY_NAME=nvidia timeout 120 $bench 2>&1 | tee "$out/bench_glx_nvidia.txt"
  if ! grep -q "on NVIDIA" "$out/bench_glx_nvidia.txt"; then
    echo "== bench_viewer, EGL on the X11 window (GLX did not give NVIDIA)"
    FLASHSIM_VIEWER_GL=egl timeout 120 $bench 2>&1 | tee "$out/bench_egl.txt"
  fi
  local api=""
  grep -q "on NVIDIA" "$out/bench_glx_nvidia.txt" || api=egl
  echo "== screenshot at step 500000 (FLASHSIM_VIEWER_GL=$api)"
  __GLX_VENDOR_LIBRARY_NAME=nvidia FLASHSIM_VIEWER_GL=$api timeout 45 $C/flashsim-viewer --lessons-dir lessons \
    --screenshot "$out/viewer-gpu-1m.png" --step 500000 --param n=71429 lessons/06-online-softmax/solution.fsa
  echo "screenshot rc=$?"
  echo "== the same bench on Mesa llvmpipe, same machine"
  __GLX_VENDOR_LIBRARY_NAME=mesa LIBGL_DRIVERS_PATH=$S/dri timeout 100 $bench 2>&1 | tee "$out/bench_llvmpipe.txt"
}

case "${1:-}" in
  prepare) prepare ;;
  run) run ;;
  *) echo "usage: $0 prepare|run"; exit 2 ;;
esac
