#!/usr/bin/env bash
# 2026-12-07, after the time model's shared-memory staging (commit 2bf0b20): sizes no call had run,
# measured with the landed kernels (the binaries of calls a-c) and predicted on the CPU afterwards
# by the new model (kernels/tools/time_model_eval.py --replay-compare), and bench_kernels a third
# time (issue 36's rows against cuDNN).
set -u
W=/tmp/call_d; source kernels/tools/device_call_env.sh
timeout 220 $B/flashsim-gpu compare -s attn-fa2-mma,bwd-mma --sizes attn:24x6144x128,attn:12x12288x64,attn:40x4608x64 \
  --causal both --dtype bf16 --csv $W/compare.csv > $W/compare.txt 2>&1; echo "compare rc=$?" >> $W/compare.txt
save
timeout 220 bash kernels/tools/bench_kernels.sh $B $W/bench; echo "bench_kernels.sh rc=$?" >> $W/bench/progress.log
save
cat $W/env.txt; grep -h "within\|rc=" $W/compare.txt | cut -c1-200; tail -2 $W/bench/progress.log
grep -h "within 15\|attn-fwd.*16x16384x128" $W/bench/bench_kernels.txt | cut -c1-160
