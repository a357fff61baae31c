#!/usr/bin/env bash
# One H100, 2026-12-07 (evening), third call, the binaries of call b (tree 60466b1): bench_kernels
# with SDPA a second time, and flashsim-gpu compare on the backward at the sizes where the L2 model
# had over-predicted the causal reads (24x6144x128, 0.69, with the shortest blocks first), both
# masks (cut to what the session's last 430 s of device time could hold).
set -u
W=/tmp/call_c; source kernels/tools/device_call_env.sh
timeout 150 bash kernels/tools/bench_kernels.sh $B $W/bench; echo "bench_kernels.sh rc=$?" >> $W/bench/progress.log
save
timeout 80 $B/flashsim-gpu compare -s bwd-mma --sizes attn:24x6144x128 \
  --causal both --dtype bf16 --csv $W/compare.csv > $W/compare.txt 2>&1; echo "compare rc=$?" >> $W/compare.txt
save
cat $W/env.txt; tail -1 $W/bench/progress.log
grep -h "within 15\|attn-fwd.*16x16384x128" $W/bench/bench_kernels.txt | cut -c1-160
grep -h "bwd-mma\|within\|rc=" $W/compare.txt | grep -v "^\[" | cut -c1-200
