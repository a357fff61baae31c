# Sourced by the ncu scripts (ncu_cycles.sh, ncu_source_stalls.sh): ncu on the PATH, the output
# folder made, and CUPTI's library (which flashsim-gpu links) on the loader's path.
# Usage: ncu_setup SCRIPT_NAME OUT_DIR
ncu_setup() {
  command -v ncu > /dev/null || { echo "$1: ncu is not on the PATH" >&2; exit 2; }
  mkdir -p "$2"
  local d
  for d in /usr/local/cuda/extras/CUPTI/lib64 $(dirname "$(find / -name 'libcupti.so.13' 2>/dev/null | head -1)" 2>/dev/null); do
    [ -d "$d" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"
  done
}
