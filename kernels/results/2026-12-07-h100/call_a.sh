#!/usr/bin/env bash
# One H100 (nvidia-h100-x1), 2026-12-07, first call: the landed kernels (tree 43c78de) on an H100
# for the first time since 2026-11-27 (every change since was measured on H200s only): the whole
# bench_kernels table with SDPA in the same call, the FP8 forward (checks at odd sizes, the outlier
# accuracy study, timing), and compare at sizes no earlier call ran (time and HBM bytes against the
# models), bf16 and FP8 (the d = 128 fence pair is in call b).
set -u
W=/tmp/call_a; source kernels/tools/device_call_env.sh
timeout 210 bash kernels/tools/bench_kernels.sh $B $W/bench; echo "bench_kernels.sh rc=$?" >> $W/bench/progress.log
save
timeout 90 $B/bench_attention_forward_fp8 > $W/fp8.txt 2>&1; echo "fp8 rc=$?" >> $W/fp8.txt
save
timeout 200 $B/flashsim-gpu compare -s attn-fa2-mma,bwd-mma --sizes attn:18x7168x128,attn:9x14336x64,attn:30x5120x64 \
  --causal both --dtype bf16 --csv $W/compare.csv > $W/compare.txt 2>&1; echo "compare rc=$?" >> $W/compare.txt
save
timeout 60 $B/flashsim-gpu compare -s attn-fp8 --sizes attn:10x10240x128,attn:18x7168x128 \
  --causal both --csv $W/compare-fp8.csv > $W/compare-fp8.txt 2>&1; echo "compare rc=$?" >> $W/compare-fp8.txt
save
cat $W/env.txt; tail -2 $W/bench/progress.log
grep -h "within 15\|attn-fwd.*16x16384x128\|attn-bwd.*16x16384x128" $W/bench/bench_kernels.txt | cut -c1-160
grep -h "rc=\|ALL OK\|FAIL\|16384" $W/fp8.txt | cut -c1-160 | tail -12
grep -h "within\|rc=" $W/compare.txt $W/compare-fp8.txt | cut -c1-200
