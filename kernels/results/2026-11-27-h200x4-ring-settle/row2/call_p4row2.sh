#!/usr/bin/env bash
# P = 4, 128k, d = 128 full backward, settled: copy engines, NCCL, one compute stream
set -u
B=.devcarry/bin; G=$B/flashsim-gpu; D=$OUT/row2; mkdir -p $D
export NCCL_NVLS_ENABLE=0
for d in /usr/local/cuda/lib64 "$(dirname "$(find /usr/local /opt /usr/lib -name 'libnccl.so.2' 2>/dev/null | head -1)")"; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"; done
nvidia-smi -L > $D/env.txt
A="--heads 8 --gpus 4 --n 131072 --d 128 --split zigzag --repeats 3 --backward"
for v in "copy:--transport copy" "nccl:--transport nccl" "copy-streams1:--transport copy --streams 1"; do
  n=${v%%:*}; f=$D/$n.txt
  timeout 60 $G ring $A ${v#*:} > $f 2>&1
  echo "$n $(grep -o 'valid=[A-Z]*' $f) $(grep -o 'ring_ms=[0-9.]* comp_ms=[0-9.]* comm_ms=[0-9.]* one_ms=[0-9.]*.*eff=[0-9.]*' $f)" | tee -a $D/summary.txt
done
