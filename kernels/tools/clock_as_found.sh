#!/usr/bin/env bash
# The SM clock a kernel holds as found (power cap, no locked clock): nvidia-smi samples every 20 ms
# while flashsim-gpu compare runs one shape many times in a row, a phase a kernel; then
# kernels/tools/clock_phases.py OUT_DIR/smi.csv OUT_DIR/phases.txt prints each phase's clock.
# Usage: kernels/tools/clock_as_found.sh BIN_DIR OUT_DIR   (BIN_DIR holds flashsim-gpu)
set -u
bin=${1:?usage: clock_as_found.sh BIN_DIR OUT_DIR}
out=${2:?usage: clock_as_found.sh BIN_DIR OUT_DIR}
command -v nvidia-smi > /dev/null || { echo "clock_as_found.sh: nvidia-smi is not on the PATH" >&2; exit 2; }
. "$(dirname "$0")/ncu_common.sh"
cupti_path
mkdir -p "$out"
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv,noheader -lms 20 > "$out/smi.csv" &
smi=$!
phase() {  # NAME REPEATS COMPARE_ARGS...
  local name=$1 reps=$2; shift 2
  sleep 1
  echo "$name start $(date +%s.%N)" >> "$out/phases.txt"
  "$bin/flashsim-gpu" compare --repeats "$reps" --no-profile --no-check --dtype bf16 "$@" > "$out/phase_$name.txt" 2>&1
  echo "$name end $(date +%s.%N)" >> "$out/phases.txt"
}
phase fwd128 1000 --causal no -s attn-fa2-mma --sizes attn:16x16384x128
phase fwd128c 1000 --causal yes -s attn-fa2-mma --sizes attn:16x16384x128
phase fwd64 900 --causal no -s attn-fa2-mma --sizes attn:32x16384x64
phase bwd128 400 --causal no -s bwd-mma --sizes attn:16x16384x128
phase bwd64 400 --causal no -s bwd-mma --sizes attn:32x16384x64
kill "$smi"
python3 "$(dirname "$0")/clock_phases.py" "$out/smi.csv" "$out/phases.txt"
