#!/usr/bin/env bash
# Experiment binary: what before the timed ring batch makes it slow (256k, d = 64, full forward).
set -u
G=.devcarry/exp/flashsim-gpu; D=$OUT/exp; mkdir -p $D
export NCCL_NVLS_ENABLE=0
for d in /usr/local/cuda/lib64 "$(dirname "$(find /usr/local /opt /usr/lib -name 'libnccl.so.2' 2>/dev/null | head -1)")"; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"; done
one() { # NAME ENV... -- ARGS
  local name=$1; shift
  local f=$D/$name.txt
  env "$@" timeout 60 $G ring --heads 8 --gpus 4 --n 262144 --d 64 --split zigzag --transport copy --repeats 3 > $f 2>&1
  echo "$name $(grep -o 'valid=[A-Z]*' $f) $(grep -o 'ring_ms=[0-9.]* comp_ms=[0-9.]* comm_ms=[0-9.]* one_ms=[0-9.]*.*eff=[0-9.]*' $f)" | tee -a $D/exp.txt
}
one default X=1
one settle-with-compute FLASHSIM_EXP_SETTLE_MODE=1
one settle-with-exchange FLASHSIM_EXP_SETTLE_MODE=2
one reset-kv FLASHSIM_EXP_RESET_KV=1
one default-again X=1
tar czf $OUT/exp.tgz -C $OUT exp
