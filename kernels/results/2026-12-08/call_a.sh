#!/usr/bin/env bash
# One GPU asked as nvidia-h200 (the reply says which card came), 2026-12-08, binaries of the landed
# tree (695395b): bench_kernels with SDPA (the H200 half of issues 32 and 36 on this tree), the FP8
# forward's full run (checks, accuracy study, timing), the GPU tests, compare on the split tail's
# bytes and on the causal backward at sizes outside the benchmark.
set -u
W=/tmp/call_a; source kernels/tools/device_call_env.sh
timeout 200 bash kernels/tools/bench_kernels.sh $B $W/bench; echo "bench_kernels.sh rc=$?" >> $W/bench/progress.log
save
{ timeout 150 $B/bench_attention_forward_fp8; echo "rc=$?"; } > $W/fp8.txt 2>&1
save
{ timeout 90 $B/flashsim-gpu compare -s attn-fa2-mma --sizes attn:16x16384x128 --dtype bf16 --csv $W/compare-split.csv; echo "rc=$?"; } > $W/compare-split.txt 2>&1
{ timeout 90 $B/flashsim-gpu compare -s bwd-mma --sizes attn:24x6144x128 --causal both --dtype bf16 --csv $W/compare-bwd.csv; echo "rc=$?"; } > $W/compare-bwd.txt 2>&1
save
{ timeout 150 $B/test_kernels_gpu; echo "test_kernels_gpu rc=$?"; } > $W/tests.txt 2>&1
save
cat $W/env.txt; tail -1 $W/bench/progress.log
grep -h "within 15\|attn-fwd.*16x16384x128" $W/bench/bench_kernels.txt | cut -c1-160
grep -h "TFLOP\|ratio\|geometric\|FAIL\|rc=" $W/fp8.txt | sed 's/  */ /g' | tail -30 | cut -c1-160
grep -v "^\[" $W/compare-split.txt | tail -8 | cut -c1-220; grep -v "^\[" $W/compare-bwd.txt | tail -8 | cut -c1-220
tail -2 $W/tests.txt
