#!/usr/bin/env bash
# compute-sanitizer memcheck and racecheck over every kernel, at small odd sizes:
#   flashsim-gpu compare over every schedule (tiny sizes, fp32/bf16; the SIMT kernels included),
#   flashsim-gpu compare (softmax-fast, attn-fa2-mma, bwd-mma; fp32/bf16/fp16, attention 2x77x128),
#   the attention drivers' --sanitize runs (every launcher and forward variant, n = 77 / 100),
#   bench_matmul_fast --check on edge shapes (no cuBLAS in the checked run; each shape with aligned
#   and with misaligned pointers, split-k off, auto and forced to s=3, which takes the stream-k
#   fixup; ragged shapes take the padded copies, the direct C stores and 128-wide tiles).
# Usage: kernels/tools/sanitize_fast.sh BIN_DIR OUT_DIR
#   BIN_DIR holds flashsim-gpu, bench_attention_forward_fast, bench_attention_backward_fast and
#   bench_matmul_fast (e.g. build/default/bin). Prints one line per run; exit status 1 if any
#   run reported an error or hazard or failed its checks.
set -u
bin=${1:?usage: sanitize_fast.sh BIN_DIR OUT_DIR}
out=${2:?usage: sanitize_fast.sh BIN_DIR OUT_DIR}
mkdir -p "$out"
for d in /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"
done
if ! command -v compute-sanitizer > /dev/null; then
  echo "sanitize_fast.sh: compute-sanitizer is not on the PATH (it ships with the CUDA toolkit)" >&2
  exit 2
fi
status=0
run() {  # run NAME TOOL ARGS...: one sanitizer run, its log in OUT_DIR/NAME-TOOL.txt
  local name=$1 tool=$2
  shift 2
  local log="$out/$name-$tool.txt" extra=()
  [ "$tool" = racecheck ] && extra=(--racecheck-report hazard)
  timeout 300 compute-sanitizer --tool "$tool" "${extra[@]}" --error-exitcode 9 "$@" > "$log" 2>&1
  local rc=$?
  echo "$name $tool rc=$rc: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1)"
  [ $rc -eq 0 ] || status=1
}
for tool in memcheck racecheck; do
  run compare-all "$tool" "$bin/flashsim-gpu" compare --sizes tiny --no-profile --repeats 1 --dtype fp32,bf16
  run compare "$tool" "$bin/flashsim-gpu" compare --sizes tiny,attn:2x77x128 --no-profile --repeats 1 \
    --dtype fp32,bf16,fp16 -s softmax-fast,attn-fa2-mma,bwd-mma
  run attn-fwd "$tool" "$bin/bench_attention_forward_fast" --sanitize
  run attn-bwd "$tool" "$bin/bench_attention_backward_fast" --sanitize
  run matmul-200x136x72 "$tool" "$bin/bench_matmul_fast" --check 200 136 72
  run matmul-1000x777x300 "$tool" "$bin/bench_matmul_fast" --check 1000 777 300
  run matmul-4096x4096x72 "$tool" "$bin/bench_matmul_fast" --check 4096 4096 72  # enough tiles for the 256-wide ones
done
exit $status
