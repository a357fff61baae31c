#!/usr/bin/env bash
# The first call cut to what ~6 minutes of device time hold (most of the session's went to machines
# that could not be started): the landed kernels' bench_kernels table with SDPA in the same call,
# the FP8 forward at N = 16384 (full, causal) and its outlier accuracy study, then compare at sizes
# no earlier call ran. Each step saves what it has, so a call cut at its limit keeps the steps above.
set -u
W=/tmp/call_short; source kernels/tools/device_call_env.sh
timeout 210 bash kernels/tools/bench_kernels.sh $B $W/bench; echo "bench_kernels.sh rc=$?" >> $W/bench/progress.log
save
for causal in 0 1; do timeout 25 $B/bench_attention_forward_fp8 --one 16384 $causal >> $W/fp8-one.txt 2>&1; echo "rc=$?" >> $W/fp8-one.txt; done
save
timeout 60 $B/bench_attention_forward_fp8 --accuracy > $W/fp8-accuracy.txt 2>&1; echo "rc=$?" >> $W/fp8-accuracy.txt
save
timeout 130 $B/flashsim-gpu compare -s attn-fa2-mma,bwd-mma --sizes attn:18x7168x128,attn:9x14336x64,attn:30x5120x64 \
  --causal both --dtype bf16 --csv $W/compare.csv > $W/compare.txt 2>&1; echo "compare rc=$?" >> $W/compare.txt
save
cat $W/env.txt; tail -2 $W/bench/progress.log
grep -h "within 15\|attn-fwd.*16x16384x128\|attn-bwd.*16x16384x128" $W/bench/bench_kernels.txt | cut -c1-160
grep -h "rc=\|TFLOP\|x lower\|ratio" $W/fp8-*.txt | cut -c1-160 | tail -12
grep -h "within\|rc=" $W/compare.txt | cut -c1-200
