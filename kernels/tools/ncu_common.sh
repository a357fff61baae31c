# Sourced by the GPU scripts (ncu_cycles.sh, ncu_source_stalls.sh, clock_as_found.sh).
# cupti_path: CUPTI's library (which flashsim-gpu links) on the loader's path.
cupti_path() {
  local d
  for d in /usr/local/cuda/extras/CUPTI/lib64 $(dirname "$(find / -name 'libcupti.so.13' 2>/dev/null | head -1)" 2>/dev/null); do
    [ -d "$d" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"
  done
}
# ncu_setup SCRIPT_NAME OUT_DIR: ncu on the PATH, the output folder made, CUPTI's path set.
ncu_setup() {
  command -v ncu > /dev/null || { echo "$1: ncu is not on the PATH" >&2; exit 2; }
  mkdir -p "$2"
  cupti_path
}
