#!/usr/bin/env bash
# Where the fast attention kernels' warps stall, instruction by instruction: ncu's warp-state
# sampling (SourceCounters) on one launch each of the d = 128 and d = 64 forward, the backward and
# the FP8 forward, exported per SASS instruction (ncu --page source). kernels/tools/sass_stalls.py
# groups the samples by instruction class (products, their waits, MUFU, FP32 arithmetic, barriers)
# to put beside the time model's per-unit busy cycles (issue 32: which one is wrong).
# Usage: kernels/tools/ncu_source_stalls.sh BIN_DIR OUT_DIR
#   BIN_DIR holds flashsim-gpu, bench_attention_backward_fast and bench_attention_forward_fp8.
set -u
bin=${1:?usage: ncu_source_stalls.sh BIN_DIR OUT_DIR}
out=${2:?usage: ncu_source_stalls.sh BIN_DIR OUT_DIR}
. "$(dirname "$0")/ncu_common.sh"
ncu_setup ncu_source_stalls.sh "$out"
sections=(--section SourceCounters --section WarpStateStats --section SpeedOfLight)
profile() {  # NAME KERNEL_REGEX SKIP COMMAND...
  local name=$1 regex=$2 skip=$3; shift 3
  timeout 240 ncu "${sections[@]}" -k "regex:$regex" --launch-skip "$skip" --launch-count 1 -f -o "$out/$name" "$@" \
    > "$out/$name.log" 2>&1
  echo "$name profile rc=$?" | tee -a "$out/summary.txt"
  ncu -i "$out/$name.ncu-rep" --page source --csv --print-source sass > "$out/$name-sass.csv" 2> "$out/$name-sass.err"
  echo "$name source rc=$? $(wc -l < "$out/$name-sass.csv") lines" | tee -a "$out/summary.txt"
  ncu -i "$out/$name.ncu-rep" --page details --csv > "$out/$name-details.csv" 2>> "$out/$name-sass.err"
}
compare=("$bin/flashsim-gpu" compare --repeats 1 --no-profile --no-check --causal no --dtype bf16)
profile fwd128 attn_fwd_ws_kernel 0 "${compare[@]}" -s attn-fa2-mma --sizes attn:16x16384x128
profile fwd64 attn_fwd_ws_kernel 0 "${compare[@]}" -s attn-fa2-mma --sizes attn:32x16384x64
profile bwd128 attn_bwd_ws_kernel 1 "$bin/bench_attention_backward_fast" --one 128 16384 0 bf16
profile bwd64 attn_bwd_ws_kernel 1 "$bin/bench_attention_backward_fast" --one 64 16384 0 bf16
profile fp8 attn_fwd_fp8_kernel 2 "$bin/bench_attention_forward_fp8" --one 16384 0 0
