#!/usr/bin/env bash
# Why the settled 4-GPU ring runs slower than its compute alone (256k, d = 64, full forward: ring 75-78
# ms against 68 compute + 1.1 exchange): one compute stream, NCCL, no settling, the default; then the
# P = 2 table on two of the four GPUs (--baseline all, settled).
set -u
B=.devcarry/bin; G=$B/flashsim-gpu; D=$OUT/diag; mkdir -p $D/logs
export NCCL_NVLS_ENABLE=0
for d in /usr/local/cuda/lib64 "$(dirname "$(find /usr/local /opt /usr/lib -name 'libnccl.so.2' 2>/dev/null | head -1)")"; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"; done
one() { # NAME ARGS...
  local name=$1; shift
  local f=$D/logs/$name.txt
  timeout 60 $G ring --heads 8 --gpus 4 --n 262144 --d 64 --split zigzag --repeats 3 "$@" > $f 2>&1
  echo "$name $(grep -o 'valid=[A-Z]*' $f) $(grep -o 'ring_ms=[0-9.]* comp_ms=[0-9.]* comm_ms=[0-9.]* one_ms=[0-9.]*.*eff=[0-9.]*' $f)" | tee -a $D/diag.txt
}
one default --transport copy
one streams1 --transport copy --streams 1
one nccl --transport nccl
one settle0 --transport copy --settle-ms 0
one default2 --transport copy
one launch-pair --transport copy --launch pair
mkdir -p $OUT/p2
P2_SIZES="65536 131072" RING_BUDGET_S=200 TRANSPORT=copy FULL_SPLIT=zigzag kernels/tools/ring_backward_gpu.sh $B $OUT/p2 p2 > $OUT/p2/script.txt 2>&1
tar czf $OUT/diag-p2-logs.tgz -C $OUT diag/logs p2/logs && rm -rf $D/logs $OUT/p2/logs
python3 kernels/tools/ring_table.py $OUT/p2/results.txt | cut -d'|' -f2-6,14-20
