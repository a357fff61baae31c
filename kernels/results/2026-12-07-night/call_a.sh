#!/usr/bin/env bash
# One H100, 2026-12-07 (night), first call, binaries of the landed tree (b9b53a3) plus the forward
# driver's new d = 64 variants (128-row tiles in causal pairs, two consumers): bench_kernels with
# SDPA (issue 36's second call on the tree with the split default and the longest-first backward);
# the d = 64 variants at the short sizes where version 5 is 1.04-1.18x cuDNN, twice; compare on the
# split tail's bytes (16x16384x128 full) and on the causal backward in its new order (24x6144x128).
set -u
W=/tmp/call_a; source kernels/tools/device_call_env.sh
timeout 170 bash kernels/tools/bench_kernels.sh $B $W/bench; echo "bench_kernels.sh rc=$?" >> $W/bench/progress.log
save
for r in 1 2; do
  { timeout 90 $B/bench_attention_forward_fast --variants 64 "tail kRescaleUnderS" 1024 1024c 2048 2048c 4096c; echo "rc=$?"; } > $W/d64-variants-$r.txt 2>&1
  save
done
{ timeout 90 $B/flashsim-gpu compare -s attn-fa2-mma --sizes attn:16x16384x128 --dtype bf16 --csv $W/compare-split.csv; echo "rc=$?"; } > $W/compare-split.txt 2>&1
{ timeout 90 $B/flashsim-gpu compare -s bwd-mma --sizes attn:24x6144x128 --causal both --dtype bf16 --csv $W/compare-bwd.csv; echo "rc=$?"; } > $W/compare-bwd.txt 2>&1
save
cat $W/env.txt; tail -1 $W/bench/progress.log
grep -h "within 15\|attn-fwd.*16x16384x128" $W/bench/bench_kernels.txt | cut -c1-160
for r in 1 2; do grep -h "TFLOP\|FAIL\|rc=" $W/d64-variants-$r.txt | sed 's/  */ /g' | cut -c1-150; done
grep -v "^\[" $W/compare-split.txt | tail -8 | cut -c1-220; grep -v "^\[" $W/compare-bwd.txt | tail -8 | cut -c1-220
