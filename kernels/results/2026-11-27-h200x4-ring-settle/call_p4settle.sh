#!/usr/bin/env bash
# P = 4 table (64k, 128k) with each batch after its mode settled (--settle-ms 200, the new default), clocks per GPU.
# then settle 0 against 200 on four rows, interleaved twice.
set -u
B=.devcarry/bin; G=$B/flashsim-gpu; D=$OUT/p4; mkdir -p $D/ab
export NCCL_NVLS_ENABLE=0
for d in /usr/local/cuda/lib64 "$(dirname "$(find /usr/local /opt /usr/lib -name 'libnccl.so.2' 2>/dev/null | head -1)")"; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"; done
{ date -u; nvidia-smi -L; nvidia-smi topo -m; nvidia-smi -q -d POWER | grep -i "limit" | head -8; } > $D/env.txt 2>&1
nvidia-smi --query-gpu=timestamp,index,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv,noheader -lms 20 > $D/smi.csv 2>&1 &
SMI=$!
P4_SIZES="65536 131072" RING_BUDGET_S=300 TRANSPORT=copy FULL_SPLIT=zigzag kernels/tools/ring_backward_gpu.sh $B $D p4 > $D/script.txt 2>&1
echo "table rc=$?"; grep -c "rc=0" $D/results.txt; grep -v "rc=0" $D/results.txt | head -3
ab() { # NAME ARGS...
  local name=$1; shift
  for r in 1 2; do for st in 0 200; do
    local f=$D/ab/$name-settle$st-r$r.txt
    echo "# started $(date -u +%Y/%m/%d\ %H:%M:%S.%3N) UTC" > $f
    local t0=$(date +%s.%N)
    timeout 100 $G ring --heads 8 --gpus 2 --split zigzag --transport copy --repeats 3 --settle-ms $st "$@" >> $f 2>&1
    echo "rc=$? wall_s=$(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $t0}")" >> $f
    echo "$name settle=$st r$r $(grep -o 'valid=[A-Z]*' $f) $(grep -o 'ring_ms=[0-9.]* comp_ms=[0-9.]* comm_ms=[0-9.]* one_ms=[0-9.]*.*eff=[0-9.]*' $f)" | tee -a $D/ab.txt
  done; done
}
kill $SMI; sleep 0.2
# phases from the logs: start stamp and wall time of every run
for f in $D/logs/*.txt $D/ab/*.txt; do
  s=$(head -1 $f | sed 's/# started //; s/ UTC//'); w=$(grep -o 'wall_s=[0-9.]*' $f | tail -1 | cut -d= -f2)
  [ -n "$s" ] && [ -n "$w" ] && { e=$(date -u -d "$s" +%s.%N); echo "$(basename $f .txt) start $e"; echo "$(basename $f .txt) end $(awk "BEGIN{printf \"%.3f\", $e + $w}")"; }
done > $D/phases.txt
python3 kernels/tools/clock_phases.py $D/smi.csv $D/phases.txt > $D/clocks.txt 2>&1; tail -8 $D/clocks.txt
tar czf $OUT/p4-logs.tgz -C $D logs ab && rm -rf $D/logs $D/ab
cat $D/results.txt | cut -c1-60
