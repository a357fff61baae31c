#!/usr/bin/env bash
# One GPU's batch for the fast backward (kernels/RESULTS.md, "Backward version 7 at d = 64, and
# racecheck settled"): compute-sanitizer racecheck on shapes that reuse the Q / dO ring and end on
# either consumer's turn, and on the ring's accumulating form; sanitize_fast.sh over every kernel;
# version 7 beside version 6 (--ab-table 8); the GPU tests; bench_kernels.sh with SDPA.
# Usage: kernels/tools/bwd_checks_gpu.sh BIN_DIR OUT_DIR
#   BIN_DIR holds bench_attention_backward_fast, test_kernels_gpu and what sanitize_fast.sh and
#   bench_kernels.sh take (e.g. build/default/bin). Exit status 1 if a sanitizer or check failed.
set -u
usage="usage: bwd_checks_gpu.sh BIN_DIR OUT_DIR"
[ $# -eq 2 ] || { echo "$usage" >&2; exit 2; }
B=$1 O=$2
[ -x "$B/bench_attention_backward_fast" ] || { echo "bwd_checks_gpu.sh: no bench_attention_backward_fast in '$B'; $usage" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$O"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}
{ date -u; nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv; sha256sum "$B"/*; } > "$O/env.txt" 2>&1
head -3 "$O/env.txt"
RC=(compute-sanitizer --tool racecheck --racecheck-report hazard --error-exitcode 9)
rc() { local name=$1; shift; ( timeout 300 "$@" > "$O/rc-$name.txt" 2>&1; echo "rc=$?" >> "$O/rc-$name.txt" ) & }
# 3 tiles end on consumer 0's turn, 1 tile on consumer 0's, 6 on consumer 1's; n = 333 reuses the ring
rc d64-n333 "${RC[@]}" "$B/bench_attention_backward_fast" --check 64 333 0
rc d64-n333c "${RC[@]}" "$B/bench_attention_backward_fast" --check 64 333 1 fp16
rc d128-n64 "${RC[@]}" "$B/bench_attention_backward_fast" --check 128 64 0
rc d128-n333c "${RC[@]}" "$B/bench_attention_backward_fast" --check 128 333 1 fp16
rc ring "${RC[@]}" "$B/test_kernels_gpu" "[ring]"
( timeout 400 "$here/sanitize_fast.sh" "$B" "$O/sanitize_fast" --parallel > "$O/sanitize_fast.txt" 2>&1
  echo "rc=$?" >> "$O/sanitize_fast.txt" ) &
wait
status=0
for f in "$O"/rc-*.txt "$O/sanitize_fast.txt"; do
  r=$(grep -oE 'rc=[0-9]+' "$f" | tail -1)
  echo "$(basename "$f" .txt): $(grep -E 'RACECHECK SUMMARY' "$f" | tail -1 | grep -oE '\([0-9]+ errors') $r"
  [ "$r" = rc=0 ] || status=1
done
timeout 200 "$B/bench_attention_backward_fast" --ab-table 8 > "$O/ab-table.txt" 2>&1 || status=1
echo "ab-table: $(tail -1 "$O/ab-table.txt")"
timeout 60 "$B/test_kernels_gpu" > "$O/tests.txt" 2>&1 || status=1
echo "test_kernels_gpu: $(grep -E 'All tests passed|failed' "$O/tests.txt" | tail -1)"
timeout 300 "$here/bench_kernels.sh" "$B" "$O/bench" > "$O/bench.log" 2>&1 || status=1
tail -1 "$O/bench/bench_kernels.txt" 2>/dev/null | cut -c1-160
exit $status
