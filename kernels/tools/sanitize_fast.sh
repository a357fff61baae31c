#!/usr/bin/env bash
# compute-sanitizer memcheck and racecheck over every kernel, at small odd sizes:
#   flashsim-gpu compare over every schedule (tiny sizes, fp32/bf16; the SIMT kernels included),
#   flashsim-gpu compare (softmax-fast, attn-fa2-mma, bwd-mma; fp32/bf16/fp16, attention 2x77x128),
#   the attention drivers' --sanitize runs (every launcher and forward variant, n = 77 / 100; the
#   FP8 forward's quantize pass and every variant at n = 77 / 333, and n = 77 over 300 heads),
#   bench_matmul_fast --check on edge shapes (no cuBLAS in the checked run; each shape with aligned
#   and with misaligned pointers, split-k off, auto and forced to s=3, which takes the stream-k
#   fixup; ragged shapes take the padded copies, the direct C stores and 128-wide tiles).
# Usage: kernels/tools/sanitize_fast.sh BIN_DIR OUT_DIR [--parallel]
#   SANITIZE_TIMEOUT (seconds, default 300) bounds each run.
#   --parallel starts all 16 runs at once (each is bound by the sanitizer's host-side work, so on a
#   16-core GPU machine this fits one 10-minute call); the lines are then printed at the end.
#   BIN_DIR holds flashsim-gpu, bench_attention_forward_fast, bench_attention_backward_fast,
#   bench_attention_forward_fp8 and bench_matmul_fast (e.g. build/default/bin). Prints one line per run; exit status 1 if any
#   run reported an error or hazard or failed its checks.
set -u
bin=${1:?usage: sanitize_fast.sh BIN_DIR OUT_DIR [--parallel]}
out=${2:?usage: sanitize_fast.sh BIN_DIR OUT_DIR [--parallel]}
parallel=0
case "${3:-}" in
  "") ;;
  --parallel) parallel=1 ;;
  *) echo "sanitize_fast.sh: unknown option '$3' (expected --parallel)" >&2; exit 2 ;;
esac
mkdir -p "$out"
for d in /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"
done
if ! command -v compute-sanitizer > /dev/null; then
  echo "sanitize_fast.sh: compute-sanitizer is not on the PATH (it ships with the CUDA toolkit)" >&2
  exit 2
fi
status=0
one() {  # one NAME TOOL ARGS...: one sanitizer run, its log in OUT_DIR/NAME-TOOL.txt, its line in .line
  local name=$1 tool=$2
  shift 2
  local log="$out/$name-$tool.txt" extra=()
  [ "$tool" = racecheck ] && extra=(--racecheck-report hazard)
  timeout "${SANITIZE_TIMEOUT:-300}" compute-sanitizer --tool "$tool" "${extra[@]}" --error-exitcode 9 "$@" > "$log" 2>&1
  local rc=$?
  echo "$name $tool rc=$rc: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1)" > "$log.line"
}
runs=()
run() {
  runs+=("$1-$2")
  if [ $parallel -eq 1 ]; then one "$@" & else one "$@"; cat "$out/$1-$2.txt.line"; fi
}
for tool in memcheck racecheck; do
  run compare-all "$tool" "$bin/flashsim-gpu" compare --sizes tiny --no-profile --repeats 1 --dtype fp32,bf16
  run compare "$tool" "$bin/flashsim-gpu" compare --sizes tiny,attn:2x77x128 --no-profile --repeats 1 \
    --dtype fp32,bf16,fp16 -s softmax-fast,attn-fa2-mma,bwd-mma
  run attn-fwd "$tool" "$bin/bench_attention_forward_fast" --sanitize
  run attn-bwd "$tool" "$bin/bench_attention_backward_fast" --sanitize
  run attn-fp8 "$tool" "$bin/bench_attention_forward_fp8" --sanitize
  run matmul-200x136x72 "$tool" "$bin/bench_matmul_fast" --check 200 136 72
  run matmul-1000x777x300 "$tool" "$bin/bench_matmul_fast" --check 1000 777 300
  run matmul-4096x4096x72 "$tool" "$bin/bench_matmul_fast" --check 4096 4096 72  # enough tiles for the 256-wide ones
done
wait
if [ $parallel -eq 1 ]; then for r in "${runs[@]}"; do cat "$out/$r.txt.line"; done; fi
for r in "${runs[@]}"; do grep -q ' rc=0: ' "$out/$r.txt.line" || status=1; done
rm -f "$out"/*.txt.line
exit $status
