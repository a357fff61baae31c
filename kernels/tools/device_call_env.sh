# Sourced by the device calls' scripts (kernels/results/*/call_*.sh) from the repository root on a
# GPU machine: B (the binaries built on the CPU machine and carried packed as .devcarry/bins.tar.xz,
# unpacked when it changes), W (the call's work folder, emptied and created), save (W packed into $OUT/all.tgz), the CUDA
# tools and libraries on the paths, and W/env.txt (date, GPU, driver, clocks, power limit).
#   W=/tmp/call_x; source kernels/tools/device_call_env.sh
B=.devcarry/bin
# a machine can keep ignored paths and /tmp from an earlier call: unpack whenever the carried
# archive differs from the one unpacked, and start W empty (stale files once rode along in all.tgz)
stamp=$(md5sum < .devcarry/bins.tar.xz)
if [ "$(cat $B/.stamp 2>/dev/null)" != "$stamp" ]; then
  rm -rf $B && tar xJf .devcarry/bins.tar.xz -C .devcarry && echo "$stamp" > $B/.stamp
fi
rm -rf "$W" && mkdir -p "$W"
save() { tar czf "$OUT/all.tgz" -C "$W" .; }
export PATH=/usr/local/cuda/bin:$PATH
for d in /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64; do
  [ -d $d ] && export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d
done
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv; } > "$W/env.txt" 2>&1
