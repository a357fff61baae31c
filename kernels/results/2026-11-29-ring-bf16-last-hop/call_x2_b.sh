#!/usr/bin/env bash
# 2 x H200: the P = 2 table again (the last hop in the run's type), a second sample of the same tree
set -u
B=.devcarry/bin; D=$OUT/p2b; mkdir -p $D
{ date -u; nvidia-smi -L; } > $D/env.txt 2>&1
RING_ARGS="--sm-clock 20" P2_SIZES="65536 131072" RING_BUDGET_S=250 TRANSPORT=copy FULL_SPLIT=zigzag \
  kernels/tools/ring_backward_gpu.sh $B $D p2 > $D/script.txt 2>&1
echo "table rc=$?"
tar czf $OUT/p2b-logs.tgz -C $D logs && rm -rf $D/logs
python3 kernels/tools/ring_table.py --clocks $D/results.txt | cut -d'|' -f2-6,8-11,14-17
