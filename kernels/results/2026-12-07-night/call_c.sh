#!/usr/bin/env bash
# 2026-12-07 (night), third call (asked as nvidia-h200 with no machine held; the reply says which card
# came), binaries as calls a and b but the forward driver (tree 6baff58): bench_kernels with SDPA, the FP8
# forward's full run, version 5's own variants at d = 64 on the short causal sizes (the launcher's
# rows nearest cuDNN; new: its blocks heaviest first across groups of 16 or 64 heads), twice; the GPU
# tests.
set -u
W=/tmp/call_c; source kernels/tools/device_call_env.sh
timeout 170 bash kernels/tools/bench_kernels.sh $B $W/bench; echo "bench_kernels.sh rc=$?" >> $W/bench/progress.log
save
{ timeout 120 $B/bench_attention_forward_fp8; echo "rc=$?"; } > $W/fp8.txt 2>&1
save
for r in 1 2; do
  { timeout 60 $B/bench_attention_forward_fast --variants 64 "v5 wgmma" 1024c 2048c; echo "rc=$?"; } > $W/d64-v5-variants-$r.txt 2>&1
done
{ timeout 150 $B/test_kernels_gpu; echo "test_kernels_gpu rc=$?"; } > $W/tests.txt 2>&1
save
cat $W/env.txt; tail -1 $W/bench/progress.log
grep -h "within 15\|SM clock\|attn-fwd.*16x16384x128" $W/bench/bench_kernels.txt | cut -c1-160
grep -h "accuracy per\|N=16384" $W/fp8.txt | sed 's/  */ /g' | cut -c1-160
grep -h "TFLOP\|FAIL\|rc=" $W/d64-v5-variants-*.txt | sed 's/  */ /g' | cut -c1-150; tail -2 $W/tests.txt
