#!/usr/bin/env bash
# Each GPU's step starts (after its block arrived) in a settled ring against one after lighter work.
set -u
G=.devcarry/bin/flashsim-gpu; D=$OUT/steps; mkdir -p $D
export NCCL_NVLS_ENABLE=0
for d in /usr/local/cuda/lib64 "$(dirname "$(find /usr/local /opt /usr/lib -name 'libnccl.so.2' 2>/dev/null | head -1)")"; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"; done
one() { # NAME ARGS
  local name=$1; shift
  local f=$D/$name.txt
  timeout 80 $G ring --heads 8 --gpus 4 --split zigzag --transport copy --repeats 3 "$@" > $f 2>&1
  echo "== $name $(grep -o 'ring_ms=[0-9.]* comp_ms=[0-9.]* comm_ms=[0-9.]* one_ms=[0-9.]*.*eff=[0-9.]*' $f)"
  sed -n '/| GPU | step/,/^$/p' $f
}
one fwd256k-d64-settled --n 262144 --d 64
one fwd256k-d64-settle0 --n 262144 --d 64 --settle-ms 0
one fwd256k-d64-settled-streams1 --n 262144 --d 64 --streams 1
one fwd256k-d64-settle0-streams1 --n 262144 --d 64 --streams 1 --settle-ms 0
