#!/usr/bin/env bash
# One H200 (asked as nvidia-h200; the reply says which card came), 2026-12-07 (night), binaries as
# call a: the H200 half of issues 32 and 36 on the tree with the split default and the longest-first
# causal backward: bench_kernels with SDPA, the FP8 forward's full run (checks, accuracy study,
# timing), the d = 128 forward at N = 16384 on 16 and 17 heads, the GPU tests.
set -u
W=/tmp/call_b; source kernels/tools/device_call_env.sh
timeout 170 bash kernels/tools/bench_kernels.sh $B $W/bench; echo "bench_kernels.sh rc=$?" >> $W/bench/progress.log
save
{ timeout 150 $B/bench_attention_forward_fp8; echo "rc=$?"; } > $W/fp8.txt 2>&1
save
{ timeout 40 $B/bench_attention_forward_fast --heads 128 16384 16 17; echo "rc=$?"; } > $W/heads-d128.txt 2>&1
{ timeout 150 $B/test_kernels_gpu; echo "test_kernels_gpu rc=$?"; } > $W/tests.txt 2>&1
save
cat $W/env.txt; tail -1 $W/bench/progress.log
grep -h "within 15\|attn-fwd.*16x16384x128" $W/bench/bench_kernels.txt | cut -c1-160
grep -h "TFLOP\|ratio\|geometric\|FAIL\|rc=" $W/fp8.txt | sed 's/  */ /g' | tail -30 | cut -c1-160
grep -h "TFLOP\|rc=" $W/heads-d128.txt | sed 's/  */ /g' | cut -c1-150; tail -2 $W/tests.txt
