#!/usr/bin/env bash
# Each timed batch's clock and power per GPU, by mode (ring, compute only, exchange only, one GPU):
# flashsim-gpu ring prints PHASE lines (each batch's wall-clock edges); nvidia-smi samples every 20 ms.
set -u
B=.devcarry/bin; G=$B/flashsim-gpu; D=$OUT/modes; mkdir -p $D/logs
export NCCL_NVLS_ENABLE=0
for d in /usr/local/cuda/lib64 "$(dirname "$(find /usr/local /opt /usr/lib -name 'libnccl.so.2' 2>/dev/null | head -1)")"; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"; done
nvidia-smi --query-gpu=timestamp,index,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv,noheader -lms 20 > $D/smi.csv 2>&1 &
SMI=$!
one() { # NAME ARGS...
  local name=$1; shift
  local f=$D/logs/$name.txt
  timeout 90 $G ring --heads 8 --gpus 4 --split zigzag --transport copy --repeats 3 "$@" > $f 2>&1
  grep '^PHASE' $f | sed "s/^PHASE /$name:/" >> $D/phases.txt
  echo "$name $(grep -o 'valid=[A-Z]*' $f) $(grep -o 'ring_ms=[0-9.]* comp_ms=[0-9.]* comm_ms=[0-9.]* one_ms=[0-9.]*.*eff=[0-9.]*' $f)" | tee -a $D/runs.txt
}
one n256k-d64-full-fwd --n 262144 --d 64
one n256k-d64-full-fwd-settle0 --n 262144 --d 64 --settle-ms 0
one n128k-d128-full-bwd --n 131072 --d 128 --backward
one n128k-d128-full-bwd-settle0 --n 131072 --d 128 --backward --settle-ms 0
kill $SMI; sleep 0.3
python3 kernels/tools/clock_phases.py $D/smi.csv $D/phases.txt --floor 150 > $D/clocks.txt 2>&1
gzip -f $D/smi.csv; tar czf $OUT/modes-logs.tgz -C $D logs && rm -rf $D/logs
cat $D/clocks.txt | awk '{print}' | head -100
