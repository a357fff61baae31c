#!/usr/bin/env bash
# Pacing the copy engines (--pace K --pace-gap-us G): does the settled ring keep the compute-only
# clock when its exchange is spread over the step? And P = 1 after the buffer fix.
set -u
G=.devcarry/bin/flashsim-gpu; D=$OUT/pace; mkdir -p $D
export NCCL_NVLS_ENABLE=0
for d in /usr/local/cuda/lib64 "$(dirname "$(find /usr/local /opt /usr/lib -name 'libnccl.so.2' 2>/dev/null | head -1)")"; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"; done
one() { # NAME ARGS
  local name=$1; shift
  local f=$D/$name.txt
  timeout 100 $G ring --heads 8 --split zigzag --repeats 3 --sm-clock 100 "$@" > $f 2>&1
  echo "== $name rc=$? $(grep -o 'valid=[A-Z]*' $f) $(grep -o 'ring_ms=[0-9.]* comp_ms=[0-9.]* comm_ms=[0-9.]* one_ms=[0-9.]*.*eff=[0-9.]*' $f) $(grep -o 'pace=.*' $f)"
}
one p1-fwd16k-d128 --gpus 1 --n 16384 --d 128
one fwd256k-d64-pace1 --gpus 4 --n 262144 --d 64 --transport copy
one fwd256k-d64-pace32-g200 --gpus 4 --n 262144 --d 64 --transport copy --pace 32 --pace-gap-us 200
one fwd256k-d64-pace128-g50 --gpus 4 --n 262144 --d 64 --transport copy --pace 128 --pace-gap-us 50
one bwd128k-d128-pace1 --gpus 4 --n 131072 --d 128 --backward --transport copy
one bwd128k-d128-pace32-g150 --gpus 4 --n 131072 --d 128 --backward --transport copy --pace 32 --pace-gap-us 150
one bwd128k-d128-pace128-g40 --gpus 4 --n 131072 --d 128 --backward --transport copy --pace 128 --pace-gap-us 40
cd $OUT && tar czf pace.tgz pace && rm -rf pace
