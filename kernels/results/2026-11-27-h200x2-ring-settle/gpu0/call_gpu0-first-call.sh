#!/usr/bin/env bash
# The first diagnosis call as it ran (its concurrent case hung: `wait` with no job waited for the nvidia-smi sampler; call_gpu0b.sh is the mended second call).
# Why GPU 0 is slower in the ring: per-GPU one-GPU times alone and concurrent, ring in both device orders, clocks logged.
set -u
B=.devcarry/bin; G=$B/flashsim-gpu; D=$OUT/d; mkdir -p $D/logs
export NCCL_NVLS_ENABLE=0
for d in /usr/local/cuda/lib64 "$(dirname "$(find /usr/local /opt /usr/lib -name 'libnccl.so.2' 2>/dev/null | head -1)")"; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"; done
{ date -u; nvidia-smi -L; nvidia-smi topo -m; nvidia-smi -q -d POWER,TEMPERATURE,CLOCK | head -120; } > $D/env.txt 2>&1
head -4 $D/env.txt
nvidia-smi --query-gpu=timestamp,index,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv,noheader -lms 100 > $D/smi.csv 2>&1 &
SMI=$!
mark() { echo "$(date -u +%Y/%m/%d\ %H:%M:%S.%3N) $*" >> $D/phases.txt; }
one() { # NAME VISIBLE ARGS...
  local name=$1 vis=$2; shift 2
  mark "start $name"
  CUDA_VISIBLE_DEVICES=$vis timeout 120 $G ring --heads 8 "$@" > $D/logs/$name.txt 2>&1; echo "rc=$?" >> $D/logs/$name.txt
  mark "end $name"
  echo "$name $(grep -o 'ring_ms=[0-9.]* comp_ms=[0-9.]* comm_ms=[0-9.]* one_ms=[0-9.]*.*eff=[0-9.]*' $D/logs/$name.txt) $(grep -c PASS $D/logs/$name.txt)pass" | tee -a $D/summary.txt
}
pair() { # NAME ARGS... : P=1 on physical 0 and 1 at once
  local name=$1; shift
  mark "start $name"
  CUDA_VISIBLE_DEVICES=0 timeout 120 $G ring --heads 8 "$@" > $D/logs/$name-g0.txt 2>&1 &
  CUDA_VISIBLE_DEVICES=1 timeout 120 $G ring --heads 8 "$@" > $D/logs/$name-g1.txt 2>&1
  wait %2 2>/dev/null; wait
  mark "end $name"
  for g in g0 g1; do echo "$name-$g $(grep -o 'ring_ms=[0-9.]* comp_ms=[0-9.]* comm_ms=[0-9.]* one_ms=[0-9.]*' $D/logs/$name-$g.txt)" | tee -a $D/summary.txt; done
}
F64="--n 131072 --d 64 --split zigzag --transport copy --repeats 5"
B128="--n 65536 --d 128 --split zigzag --transport copy --repeats 5 --backward"
FC64="--n 131072 --d 64 --causal --split zigzag --transport copy --repeats 5"
for round in 1 2; do
  one r$round-p2-fwd64full-01 0,1 --gpus 2 $F64
  one r$round-p2-fwd64full-10 1,0 --gpus 2 $F64
  one r$round-p1-fwd64full-g0 0 --gpus 1 $F64
  one r$round-p1-fwd64full-g1 1 --gpus 1 $F64
  pair r$round-p1-fwd64full-both --gpus 1 $F64
  one r$round-p2-bwd128full-01 0,1 --gpus 2 $B128
  one r$round-p2-bwd128full-10 1,0 --gpus 2 $B128
  one r$round-p1-bwd128full-g0 0 --gpus 1 $B128
  one r$round-p1-bwd128full-g1 1 --gpus 1 $B128
  pair r$round-p1-bwd128full-both --gpus 1 $B128
  one r$round-p2-fwd64causal-01 0,1 --gpus 2 $FC64
  one r$round-p2-fwd64causal-10 1,0 --gpus 2 $FC64
done
kill $SMI
for f in $D/logs/r1-p2-*; do echo "== $f"; grep -A7 "| GPU | step" $f; done > $D/steps.txt
tar czf $OUT/gpu0.tgz -C $OUT d
cat $D/summary.txt
