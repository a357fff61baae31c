#!/usr/bin/env bash
# GPU 0 in the ring: clocks of both GPUs at 20 ms during long ring runs in both device orders; P = 1 on both at once.
set -u
B=.devcarry/bin; G=$B/flashsim-gpu; D=$OUT/d; mkdir -p $D/logs
export NCCL_NVLS_ENABLE=0
for d in /usr/local/cuda/lib64 "$(dirname "$(find /usr/local /opt /usr/lib -name 'libnccl.so.2' 2>/dev/null | head -1)")"; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"; done
nvidia-smi --query-gpu=timestamp,index,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv,noheader -lms 20 > $D/smi.csv 2>&1 &
SMI=$!
mark() { echo "$(date -u +%Y/%m/%d\ %H:%M:%S.%3N) $*" >> $D/phases.txt; }
one() { # NAME VISIBLE ARGS...
  local name=$1 vis=$2; shift 2
  mark "start $name"
  CUDA_VISIBLE_DEVICES=$vis timeout 100 $G ring --heads 8 "$@" > $D/logs/$name.txt 2>&1; echo "rc=$?" >> $D/logs/$name.txt
  mark "end $name"
  echo "$name $(grep -o 'ring_ms=[0-9.]* comp_ms=[0-9.]* comm_ms=[0-9.]* one_ms=[0-9.]*.*eff=[0-9.]*' $D/logs/$name.txt)" | tee -a $D/summary.txt
  grep -A8 "| GPU | step" $D/logs/$name.txt | tee -a $D/summary.txt | grep "^| [0-9]"
}
F64="--n 131072 --d 64 --split zigzag --transport copy"
B128="--n 65536 --d 128 --split zigzag --transport copy --backward"
one p2-fwd64full-01-r30 0,1 --gpus 2 $F64 --repeats 30
one p2-fwd64full-10-r30 1,0 --gpus 2 $F64 --repeats 30
one p2-bwd128full-01-r15 0,1 --gpus 2 $B128 --repeats 15
mark "start p1-both"
CUDA_VISIBLE_DEVICES=0 timeout 100 $G ring --heads 8 --gpus 1 $F64 --repeats 10 > $D/logs/p1-both-g0.txt 2>&1 &
P0=$!
CUDA_VISIBLE_DEVICES=1 timeout 100 $G ring --heads 8 --gpus 1 $F64 --repeats 10 > $D/logs/p1-both-g1.txt 2>&1
wait $P0
mark "end p1-both"
for g in g0 g1; do echo "p1-both-$g $(grep -o 'ring_ms=[0-9.]* comp_ms=[0-9.]* comm_ms=[0-9.]* one_ms=[0-9.]*' $D/logs/p1-both-$g.txt)" | tee -a $D/summary.txt; done
kill $SMI; sleep 0.2
tar czf $OUT/gpu0b.tgz -C $OUT d && rm -rf $D/logs
