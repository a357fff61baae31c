#!/usr/bin/env bash
# P = 4 table (64k, 128k, 256k), settled, the one-GPU baseline on every GPU at once (--baseline all,
# the new default), clocks per GPU per run; then --baseline gpu0 against all on two rows, interleaved.
set -u
B=.devcarry/bin; G=$B/flashsim-gpu; D=$OUT/p4; mkdir -p $D/ab
{ date -u; nvidia-smi -L; nvidia-smi topo -m; nvidia-smi -q -d POWER | grep -i "limit" | head -8; } > $D/env.txt 2>&1
CLOCKS=1 P4_SIZES="65536 131072 262144" RING_BUDGET_S=360 TRANSPORT=copy FULL_SPLIT=zigzag kernels/tools/ring_backward_gpu.sh $B $D p4 > $D/script.txt 2>&1
echo "table rc=$?"
export NCCL_NVLS_ENABLE=0
ab() { # NAME ARGS...
  local name=$1; shift
  for r in 1; do for bl in gpu0 all; do
    local f=$D/ab/$name-$bl-r$r.txt
    timeout 60 $G ring --heads 8 --gpus 4 --split zigzag --transport copy --repeats 3 --baseline $bl "$@" > $f 2>&1
    echo "$name baseline=$bl r$r $(grep -o 'valid=[A-Z]*' $f) $(grep -o 'ring_ms=[0-9.]* comp_ms=[0-9.]* comm_ms=[0-9.]* one_ms=[0-9.]*.*eff=[0-9.]*' $f)" | tee -a $D/ab.txt
  done; done
}
ab n256k-d64-full-fwd --n 262144 --d 64
ab n128k-d128-full-bwd --n 131072 --d 128 --backward
python3 kernels/tools/clock_phases.py $D/smi.csv $D/phases.txt > $D/clocks.txt 2>&1
gzip -f $D/smi.csv
tar czf $OUT/p4-logs.tgz -C $D logs ab && rm -rf $D/logs $D/ab
python3 kernels/tools/ring_table.py $D/results.txt | cut -d'|' -f2-6,14-20
