#!/usr/bin/env bash
# One H100, 2026-12-07 (evening), second call: the split tail as the default at d = 128 only (call a
# measured 1.3 % more clocks split at d = 64), and the causal backward's blocks longest first.
# bench_kernels with SDPA in the same call; the backward beside the binary built before the order
# change (bench_attention_backward_fast_lightfirst, shortest first), ABAB; d = 64 at N = 16384 on
# its default against the split forced (FLASHSIM_FWD_SPLIT=1); compute-sanitizer over the fast
# kernels; the GPU tests.
set -u
W=/tmp/call_b; source kernels/tools/device_call_env.sh
timeout 230 bash kernels/tools/bench_kernels.sh $B $W/bench; echo "bench_kernels.sh rc=$?" >> $W/bench/progress.log
save
for r in 1 2; do
  for b in bench_attention_backward_fast_lightfirst bench_attention_backward_fast; do
    { timeout 60 $B/$b --d128; echo "rc=$?"; } > $W/bwd-d128-$b-$r.txt 2>&1
  done
done
save
for r in 1 2; do
  for s in "" 1; do
    f=$W/d64-split${s:-default}-$r.txt
    { FLASHSIM_FWD_SPLIT=$s timeout 40 $B/bench_attention_forward_fast --heads 64 16384 32; echo "rc=$?"; } > $f 2>&1
  done
done
save
( SANITIZE_TIMEOUT=200 timeout 230 bash kernels/tools/sanitize_fast.sh $B $W/sanitize --parallel > $W/sanitize.txt 2>&1; echo "sanitize_fast rc=$?" >> $W/sanitize.txt ) &
{ timeout 150 $B/test_kernels_gpu; echo "test_kernels_gpu rc=$?"; } > $W/tests.txt 2>&1
wait
save
cat $W/env.txt; tail -1 $W/bench/progress.log
grep -h "within 15\|attn-fwd.*16x16384x128" $W/bench/bench_kernels.txt | cut -c1-160
for f in $W/bwd-d128-*; do echo "== $(basename $f)"; grep -h "TFLOP" $f | sed 's/  */ /g' | cut -c1-120; done
grep -h "TFLOP" $W/d64-*.txt | sed 's/  */ /g' | cut -c1-130
cat $W/sanitize.txt | cut -c1-160; tail -2 $W/tests.txt
