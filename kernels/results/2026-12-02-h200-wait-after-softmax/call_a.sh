#!/usr/bin/env bash
# One H200, 2026-12-02 (second session): is the persistent Q-tile walk what the d = 128 forward's KV
# tile pays beyond the loop probe's? The launcher's loop (kExpsFirstTreeMax, kRescaleUnderS) over
# persistent blocks (sched 1, kStatic) and with one block a Q tile (sched 0, kOneTile, no walk held
# across the loop), timed in the same runs, twice; then both kernels' SASS counts.
set -u
B=.devcarry/bin
W=/tmp/call_a; mkdir -p $W
save() { tar czf $OUT/all.tgz -C $W .; }
export PATH=/usr/local/cuda/bin:$PATH
for d in /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64; do [ -d $d ] && export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d; done
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv; } > $W/env.txt 2>&1
for r in 1 2; do
  timeout 90 $B/bench_attention_forward_fast --variants 128 "kExpsFirstTreeMax" > $W/fwd128-walk-$r.txt 2>&1; echo "rc=$?" >> $W/fwd128-walk-$r.txt
  save
done
cuobjdump -sass $B/bench_attention_forward_fast > /tmp/sass_fwd.txt
for k in Li128ELi128ELi2ELb0ELi1ELb0ELi2ELi3ELb0ELi0ELi1EE Li128ELi128ELi2ELb0ELi0ELb0ELi2ELi3ELb0ELi0ELi1EE; do
  python3 kernels/tools/sass_opcode_counts.py /tmp/sass_fwd.txt "13__nv_bfloat16$k" HGMMA R2UR WARPSYNC BSSY MUFU STL LDL FFMA FMNMX ISETP FSEL BAR SYNCS
done > $W/sass-counts.txt 2>&1
# both kernels' whole SASS, for reading the loop offline (no cuobjdump on the CPU machine)
awk '/Function : /{keep = ($0 ~ /13__nv_bfloat16Li128ELi128ELi2ELb0ELi[01]ELb0ELi2ELi3ELb0ELi0ELi1EE/)} keep' /tmp/sass_fwd.txt | gzip > $W/sass-sched01.txt.gz
save
cat $W/sass-counts.txt
grep -h "rc=\|ALL OK\|SOME\|FAIL" $W/*.txt | sort | uniq -c
grep -h "full" $W/fwd128-walk-*.txt | cut -c1-200
