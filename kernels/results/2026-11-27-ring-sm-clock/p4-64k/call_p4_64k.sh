#!/usr/bin/env bash
# The P = 4 table at 64k with the landed tree: the hops wait for their buffer's last reader
# (kv_free, acc_done); settled; the SM clock of every batch (--sm-clock 20, on its own stream).
set -u
B=.devcarry/bin; D=$OUT/p4; mkdir -p $D
{ date -u; nvidia-smi -L; nvidia-smi topo -m; } > $D/env.txt 2>&1
RING_ARGS="--sm-clock 20" P4_SIZES="65536" RING_BUDGET_S=110 TRANSPORT=copy FULL_SPLIT=zigzag \
  kernels/tools/ring_backward_gpu.sh $B $D p4 > $D/script.txt 2>&1
echo "table rc=$?"
tar czf $OUT/p4-logs.tgz -C $D logs && rm -rf $D/logs
python3 kernels/tools/ring_table.py --clocks $D/results.txt | cut -d'|' -f2-6,14-17,20-23
