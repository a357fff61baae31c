#!/usr/bin/env bash
# Does the exchange's burst cost the ring its clock? The same settled rows with NCCL at 1 CTA (a
# slower, longer exchange) and as they are; and P = 1 (the step kernel beside the plain kernel on
# the same problem) with the SM clock of both.
set -u
G=.devcarry/bin/flashsim-gpu; D=$OUT/smclock2; mkdir -p $D
export NCCL_NVLS_ENABLE=0
for d in /usr/local/cuda/lib64 "$(dirname "$(find /usr/local /opt /usr/lib -name 'libnccl.so.2' 2>/dev/null | head -1)")"; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"; done
one() { # NAME ARGS
  local name=$1; shift
  local f=$D/$name.txt
  timeout 100 $G ring --heads 8 --split zigzag --repeats 3 --sm-clock 100 "$@" > $f 2>&1
  echo "== $name rc=$? $(grep -o 'valid=[A-Z]*' $f) $(grep -o 'ring_ms=[0-9.]* comp_ms=[0-9.]* comm_ms=[0-9.]* one_ms=[0-9.]*.*eff=[0-9.]*' $f) $(grep -o 'sm_mhz.*' $f)"
}
one p1-fwd16k-d128-h8 --gpus 1 --n 16384 --d 128
one p1-fwd16k-d128-h16 --gpus 1 --n 16384 --d 128 --heads 16
one p1-fwd32k-d128-h8-causal --gpus 1 --n 32768 --d 128 --causal
one p1-fwd16k-d64-h16 --gpus 1 --n 16384 --d 64 --heads 16
one p1-bwd16k-d128-h8 --gpus 1 --n 16384 --d 128 --backward
one p4-fwd256k-d64-copy --gpus 4 --n 262144 --d 64 --transport copy
one p4-fwd256k-d64-nccl1 --gpus 4 --n 262144 --d 64 --transport nccl --nccl-ctas 1
one p4-fwd256k-d64-nccl --gpus 4 --n 262144 --d 64 --transport nccl
one p4-bwd128k-d128-nccl1 --gpus 4 --n 131072 --d 128 --backward --transport nccl --nccl-ctas 1
one p4-bwd128k-d128-copy-streams1 --gpus 4 --n 131072 --d 128 --backward --transport copy --streams 1
cd $OUT && tar czf smclock2.tgz smclock2 && rm -rf smclock2
