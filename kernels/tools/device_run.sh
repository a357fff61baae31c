#!/usr/bin/env bash
# One batch on a GPU machine: environment facts, GPU tests, compute-sanitizer (memcheck, racecheck)
# at the tiny sizes, the per-file drivers, and `flashsim-gpu compare` at small and large sizes.
# Usage: kernels/tools/device_run.sh BIN_DIR OUT_DIR [compare args...]
# BIN_DIR holds flashsim-gpu, test_kernels_gpu, matmul, softmax, attention_forward, attention_backward.
set -u
BIN=${1:?bin dir}
OUT=${2:?out dir}
shift 2
mkdir -p "$OUT"
for d in /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64 $(dirname "$(find / -name 'libcupti.so.13' 2>/dev/null | head -1)" 2>/dev/null); do
  [ -d "$d" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"
done
{
  date -u
  nvidia-smi -L
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
  ls /usr/local/cuda/lib64 | grep -E "cupti|nvperf"
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  ldd "$BIN/flashsim-gpu" | grep -E "cupti|nvperf|not found"
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

echo "== GPU tests"
timeout 120 "$BIN/test_kernels_gpu" > "$OUT/tests.txt" 2>&1; echo "test_kernels_gpu rc=$?" | tee -a "$OUT/tests.txt"
tail -4 "$OUT/tests.txt"

echo "== compare"
timeout 300 "$BIN/flashsim-gpu" compare --json "$OUT/compare.json" --csv "$OUT/compare.csv" "$@" > "$OUT/compare.txt" 2> "$OUT/compare.err"
echo "compare rc=$?"
tail -3 "$OUT/compare.err"
cat "$OUT/compare.txt"

echo "== compute-sanitizer"
SAN="compare --sizes tiny --no-profile --repeats 1 --dtype fp32,bf16"
{
  timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 "$BIN/flashsim-gpu" $SAN; echo "memcheck rc=$?"
  timeout 90 compute-sanitizer --tool racecheck --racecheck-report hazard --error-exitcode 9 "$BIN/flashsim-gpu" $SAN; echo "racecheck rc=$?"
} > "$OUT/sanitizer.txt" 2>&1
grep -E "rc=|ERROR SUMMARY|RACECHECK SUMMARY|hazard" "$OUT/sanitizer.txt" | head -20

echo "== per-file drivers"
{
  for exe in matmul softmax attention_forward attention_backward; do
    echo "--- $exe"; timeout 20 "$BIN/$exe"; echo "$exe rc=$?"
  done
} > "$OUT/dev.txt" 2>&1
grep -E "rc=|FAIL" "$OUT/dev.txt"

