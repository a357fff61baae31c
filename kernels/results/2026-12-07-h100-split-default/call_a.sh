#!/usr/bin/env bash
# One H100, 2026-12-07 (evening): the launchers with the split tail as their default from N = 8192
# (full mask; sim::split_tail_by_default). bench_kernels with SDPA in the same call, then the split
# against whole tiles (FLASHSIM_FWD_SPLIT=0) at the rows it changes, interleaved, and the GPU tests.
set -u
W=/tmp/call_a; source kernels/tools/device_call_env.sh
timeout 230 bash kernels/tools/bench_kernels.sh $B $W/bench; echo "bench_kernels.sh rc=$?" >> $W/bench/progress.log
save
for r in 1 2; do
  for s in "" 0; do
    f=$W/heads-split${s:-default}-$r.txt
    { FLASHSIM_FWD_SPLIT=$s timeout 40 $B/bench_attention_forward_fast --heads 128 16384 16 17
      FLASHSIM_FWD_SPLIT=$s timeout 40 $B/bench_attention_forward_fast --heads 64 16384 32
      FLASHSIM_FWD_SPLIT=$s timeout 40 $B/bench_attention_forward_fp8 --one 16384 0; echo "rc=$?"; } > $f 2>&1
  done
done
save
{ timeout 150 $B/test_kernels_gpu; echo "test_kernels_gpu rc=$?"; } > $W/tests.txt 2>&1
save
cat $W/env.txt; tail -2 $W/bench/progress.log
grep -h "within 15\|attn-fwd.*16x16384x128" $W/bench/bench_kernels.txt | cut -c1-160
grep -h "TFLOP" $W/heads-*.txt | sed 's/  */ /g' | cut -c1-150
grep -h "rc=" $W/*.txt; tail -3 $W/tests.txt
