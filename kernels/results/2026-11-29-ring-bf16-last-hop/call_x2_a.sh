#!/usr/bin/env bash
# 2 x H200: the ring backward with its last dK/dV hop in the run's type. First the quick set (every
# P = 2 and P = 1 path validated; its P = 4 runs are refused on two GPUs) and fp16 on both transports;
# then the P = 2 table, settled, with the SM clock of every batch.
set -u
B=.devcarry/bin; D=$OUT/p2; Q=$OUT/quick; mkdir -p $D $Q
{ date -u; nvidia-smi -L; nvidia-smi topo -m; } > $D/env.txt 2>&1
RING_BUDGET_S=100 kernels/tools/ring_backward_gpu.sh $B $Q quick > $Q/script.txt 2>&1
echo "quick rc=$?"; cut -c1-200 $Q/results.txt | grep -v "quick-p4"
for t in copy nccl; do
  timeout 60 $B/flashsim-gpu ring --gpus 2 --n 16384 --d 128 --dtype fp16 --causal --split zigzag --transport $t --repeats 1 --backward > $Q/fp16-$t.txt 2>&1
  echo "fp16 $t rc=$? $(grep -o 'valid=[A-Z]* err_one=[^ ]* err_ref=[^ ]* err_lse=[^ ]* counted=[0-9]* posted=[0-9]* nvlink_tx=[-0-9]*' $Q/fp16-$t.txt)"
done
RING_ARGS="--sm-clock 20" P2_SIZES="65536 131072" RING_BUDGET_S=330 TRANSPORT=copy FULL_SPLIT=zigzag \
  kernels/tools/ring_backward_gpu.sh $B $D p2 > $D/script.txt 2>&1
echo "table rc=$?"
tar czf $OUT/p2-logs.tgz -C $D logs && rm -rf $D/logs
tar czf $OUT/quick-logs.tgz -C $Q logs && rm -rf $Q/logs
python3 kernels/tools/ring_table.py $D/results.txt | cut -d'|' -f2-6,14-20
grep -o 'sm_mhz.*' $D/results.txt
