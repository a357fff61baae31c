#!/usr/bin/env bash
# The hops wait for the buffer's last reader (kv_free, acc_done) instead of the whole step; pacing
# by rate (--pace-gbs). Settled rows that were below the bar, P = 4 and P = 2.
set -u
G=.devcarry/bin/flashsim-gpu; D=$OUT/pace2; mkdir -p $D
export NCCL_NVLS_ENABLE=0
for d in /usr/local/cuda/lib64 "$(dirname "$(find /usr/local /opt /usr/lib -name 'libnccl.so.2' 2>/dev/null | head -1)")"; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"; done
one() { # NAME ARGS
  local name=$1; shift
  local f=$D/$name.txt
  timeout 100 $G ring --heads 8 --split zigzag --repeats 3 --sm-clock 100 --transport copy "$@" > $f 2>&1
  echo "== $name rc=$? $(grep -o 'valid=[A-Z]*' $f) $(grep -o 'ring_ms=[0-9.]* comp_ms=[0-9.]* comm_ms=[0-9.]* one_ms=[0-9.]*.*eff=[0-9.]*' $f) $(grep -o 'pace_gbs=.*' $f)"
}
one p4-fwd64k-d128 --gpus 4 --n 65536 --d 128
one p4-fwd64k-d64 --gpus 4 --n 65536 --d 64
one p4-fwd256k-d64 --gpus 4 --n 262144 --d 64
one p4-fwd256k-d64-pace20 --gpus 4 --n 262144 --d 64 --pace-gbs 20
one p4-fwd256k-d64-pace50 --gpus 4 --n 262144 --d 64 --pace-gbs 50
one p4-bwd128k-d128 --gpus 4 --n 131072 --d 128 --backward
one p4-bwd128k-d128-pace40 --gpus 4 --n 131072 --d 128 --backward --pace-gbs 40
one p4-bwd128k-d128-pace80 --gpus 4 --n 131072 --d 128 --backward --pace-gbs 80
one p4-bwd64k-d128 --gpus 4 --n 65536 --d 128 --backward
one p2-bwd128k-d128 --gpus 2 --n 131072 --d 128 --backward
one p2-bwd128k-d128-pace40 --gpus 2 --n 131072 --d 128 --backward --pace-gbs 40
cd $OUT && tar czf pace2.tgz pace2 && rm -rf pace2
