#!/usr/bin/env bash
# One H200, 2026-12-02 (second session), fourth call: the fences of call c did not move the wait (cuobjdump); now a divergent branch on the row sums, as the FP8 kTrace stamps have it, before the wait
# for P V (tail kWaitAfterSoftmax, fp8 wait-after-softmax). Does ptxas now keep the exponentials under
# P V (sass_wait_placement.py), and what does that do to the time? bf16 d = 128 and d = 64, both masks,
# beside the launchers, twice; with Q from shared memory too (fewer live registers: the Q-register
# kernels serialize their products, ptxas C7512); FP8 at N = 8192 and 16384 (variants: 0 default,
# 4 128 keys, 9 the wait kept with 224 keys, 11 with 128 keys and Q from shared memory), twice;
# the FP8 small checks of every variant.
set -u
B=.devcarry/bin
W=/tmp/call_d; mkdir -p $W
save() { tar czf $OUT/all.tgz -C $W .; }
export PATH=/usr/local/cuda/bin:$PATH
for d in /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64; do [ -d $d ] && export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d; done
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv; } > $W/env.txt 2>&1
for b in bench_attention_forward_fast bench_attention_forward_fp8; do
  cuobjdump -sass $B/$b > /tmp/sass_$b.txt
  python3 kernels/tools/sass_wait_placement.py /tmp/sass_$b.txt > $W/wait-placement-$b.txt 2>&1
done
gzip -c /tmp/sass_bench_attention_forward_fast.txt > $W/sass-bench_attention_forward_fast.txt.gz
save
for r in 1 2; do
  timeout 60 $B/bench_attention_forward_fast --variants 128 "kWaitAfterSoftmax" > $W/fwd128-wait-$r.txt 2>&1; echo "rc=$?" >> $W/fwd128-wait-$r.txt
  save
done
timeout 60 $B/bench_attention_forward_fast --variants 64 "kWaitAfterSoftmax" > $W/fwd64-wait-1.txt 2>&1; echo "rc=$?" >> $W/fwd64-wait-1.txt
save
for r in 1 2; do
  for n in 16384 8192; do for cv in "0 0" "0 4" "0 9" "0 11" "1 0" "1 11"; do set -- $cv
    timeout 30 $B/bench_attention_forward_fp8 --one $n $1 $2 > $W/fp8-$n-$1-v$2-$r.txt 2>&1; echo "rc=$?" >> $W/fp8-$n-$1-v$2-$r.txt
  done; done
  save
done
timeout 90 $B/bench_attention_forward_fp8 --sanitize > $W/fp8-checks.txt 2>&1; echo "rc=$?" >> $W/fp8-checks.txt
save
for f in $W/wait-placement-*.txt; do grep -c "0 EX2, after" $f; grep -v "no window" $f | grep -c "/ [1-9][0-9]* EX2, after the wait [0-9]* / [0-2] EX2"; done
grep -h "rc=\|ALL OK\|SOME\|FAIL\|bad" $W/*.txt | sort | uniq -c
grep -h "full\|causal" $W/fwd128-wait-*.txt $W/fwd64-wait-1.txt | grep -v check | sed 's/  */ /g' | cut -c1-170
grep -h "TFLOP" $W/fp8-*.txt | sed 's/  */ /g' | cut -c1-150
