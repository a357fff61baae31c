#!/usr/bin/env bash
# P = 4 at 256k, each batch after its mode settled (--settle-ms 200, the default), clocks per GPU per run.
set -u
B=.devcarry/bin; D=$OUT/p4; mkdir -p $D
{ date -u; nvidia-smi -L; nvidia-smi topo -m; nvidia-smi -q -d POWER | grep -i "limit" | head -8; } > $D/env.txt 2>&1
CLOCKS=1 P4_SIZES=262144 RING_BUDGET_S=420 TRANSPORT=copy FULL_SPLIT=zigzag kernels/tools/ring_backward_gpu.sh $B $D p4 > $D/script.txt 2>&1
echo "table rc=$?"
python3 kernels/tools/clock_phases.py $D/smi.csv $D/phases.txt > $D/clocks.txt 2>&1; tail -20 $D/clocks.txt
gzip -f $D/smi.csv
tar czf $OUT/p4-256k-logs.tgz -C $D logs && rm -rf $D/logs
python3 kernels/tools/ring_table.py $D/results.txt 2>&1 | tail -12
cut -c1-80 $D/results.txt
