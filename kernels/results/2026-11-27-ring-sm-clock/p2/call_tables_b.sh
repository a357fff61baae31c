#!/usr/bin/env bash
# The hops wait for their buffer's last reader (kv_free, acc_done); the P = 2 table, settled, with
# the SM clock of every batch (--sm-clock 20, on its own stream); then the quick set (its P = 4 runs
# are refused on two GPUs; every P = 2 and P = 1 path validated once).
set -u
B=.devcarry/bin; D=$OUT/p2; Q=$OUT/quick; mkdir -p $D $Q
{ date -u; nvidia-smi -L; nvidia-smi topo -m; } > $D/env.txt 2>&1
RING_ARGS="--sm-clock 20" P2_SIZES="65536 131072" RING_BUDGET_S=330 TRANSPORT=copy FULL_SPLIT=zigzag \
  kernels/tools/ring_backward_gpu.sh $B $D p2 > $D/script.txt 2>&1
echo "table rc=$?"
RING_BUDGET_S=100 kernels/tools/ring_backward_gpu.sh $B $Q quick > $Q/script.txt 2>&1
echo "quick rc=$?"; cut -c1-220 $Q/results.txt
tar czf $OUT/p2-logs.tgz -C $D logs && rm -rf $D/logs
tar czf $OUT/quick-logs.tgz -C $Q logs && rm -rf $Q/logs
python3 kernels/tools/ring_table.py $D/results.txt | cut -d'|' -f2-6,14-20
grep -o 'sm_mhz.*' $D/results.txt
