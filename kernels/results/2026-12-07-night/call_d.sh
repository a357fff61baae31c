#!/usr/bin/env bash
# 2026-12-07 (night), call c cut to what the session's last device time could hold (every start of
# call c failed): version 5's variants at d = 64 on the short causal sizes, twice (new: its blocks
# heaviest first across groups of 16 or 64 heads), then bench_kernels with SDPA. Binaries as call c's.
set -u
W=/tmp/call_d; source kernels/tools/device_call_env.sh
for r in 1 2; do
  { timeout 50 $B/bench_attention_forward_fast --variants 64 "v5 wgmma" 1024c 2048c; echo "rc=$?"; } > $W/d64-v5-variants-$r.txt 2>&1
done
save
timeout 150 bash kernels/tools/bench_kernels.sh $B $W/bench; echo "bench_kernels.sh rc=$?" >> $W/bench/progress.log
save
cat $W/env.txt; tail -1 $W/bench/progress.log
grep -h "TFLOP\|FAIL\|rc=" $W/d64-v5-variants-*.txt | sed 's/  */ /g' | cut -c1-150
grep -h "within 15\|attn-fwd.*16x16384x128" $W/bench/bench_kernels.txt | cut -c1-160
