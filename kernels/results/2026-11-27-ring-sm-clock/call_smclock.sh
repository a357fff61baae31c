#!/usr/bin/env bash
# The SM clock between steps (--sm-clock) in the slow settled rings and the fast unsettled ones,
# and one-GPU "rings" (P = 1: the step kernel on all n beside the plain kernel) for the 64k overhead.
set -u
G=.devcarry/bin/flashsim-gpu; D=$OUT/smclock; mkdir -p $D
export NCCL_NVLS_ENABLE=0
for d in /usr/local/cuda/lib64 "$(dirname "$(find /usr/local /opt /usr/lib -name 'libnccl.so.2' 2>/dev/null | head -1)")"; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"; done
nvidia-smi --query-gpu=index,name,clocks.max.sm,power.limit --format=csv > $D/env.txt 2>&1
one() { # NAME ARGS
  local name=$1; shift
  local f=$D/$name.txt
  timeout 100 $G ring --heads 8 --split zigzag --transport copy --repeats 3 "$@" > $f 2>&1
  echo "== $name rc=$? $(grep -o 'valid=[A-Z]*' $f) $(grep -o 'ring_ms=[0-9.]* comp_ms=[0-9.]* comm_ms=[0-9.]* one_ms=[0-9.]*.*eff=[0-9.]*' $f) $(grep -o 'sm_mhz.*' $f)"
  grep '^SMCLOCK' $f | head -40
}
one p4-fwd256k-d64-settled --gpus 4 --n 262144 --d 64 --sm-clock 100
one p4-fwd256k-d64-settle0 --gpus 4 --n 262144 --d 64 --sm-clock 100 --settle-ms 0
one p4-bwd128k-d128-settled --gpus 4 --n 131072 --d 128 --backward --sm-clock 100
one p4-bwd128k-d128-settle0 --gpus 4 --n 131072 --d 128 --backward --sm-clock 100 --settle-ms 0
one p1-fwd16k-d128 --gpus 1 --n 16384 --d 128
one p1-fwd64k-d128 --gpus 1 --n 65536 --d 128
one p1-fwd16k-d64 --gpus 1 --n 16384 --d 64
one p4-fwd64k-d128 --gpus 4 --n 65536 --d 128
one p4-fwd64k-d128-streams1 --gpus 4 --n 65536 --d 128 --streams 1
cd $OUT && tar czf smclock.tgz smclock && rm -rf smclock
