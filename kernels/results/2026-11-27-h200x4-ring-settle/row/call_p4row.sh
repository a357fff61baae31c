#!/usr/bin/env bash
# P = 4, 128k, d = 128 full backward again: settle 200, 0, 200
set -u
B=.devcarry/bin; G=$B/flashsim-gpu; D=$OUT/row; mkdir -p $D
export NCCL_NVLS_ENABLE=0
for d in /usr/local/cuda/lib64 "$(dirname "$(find /usr/local /opt /usr/lib -name 'libnccl.so.2' 2>/dev/null | head -1)")"; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"; done
nvidia-smi -L > $D/env.txt
for st in 200 0 200; do
  f=$D/bwd128k-d128-full-settle$st-$(date +%s).txt
  timeout 100 $G ring --heads 8 --gpus 4 --n 131072 --d 128 --split zigzag --transport copy --repeats 3 --backward --settle-ms $st > $f 2>&1
  echo "settle=$st $(grep -o 'valid=[A-Z]*' $f) $(grep -o 'ring_ms=[0-9.]* comp_ms=[0-9.]* comm_ms=[0-9.]* one_ms=[0-9.]*.*eff=[0-9.]*' $f)" | tee -a $D/summary.txt
done
