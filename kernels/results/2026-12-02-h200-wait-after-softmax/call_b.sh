#!/usr/bin/env bash
# One H200, 2026-12-02 (second session), second call: call a's SASS showed the launcher's d = 128
# kernels waiting for P V (wait_group 0) before the softmax, not after it. Where every forward
# kernel (bf16/fp16 variants, FP8, the loop probe) has that wait, then the launcher's full-mask
# kernel with Q from shared memory and / or the other softmax order (fewer live registers), timed
# beside the launcher, twice.
set -u
B=.devcarry/bin
W=/tmp/call_b; mkdir -p $W
save() { tar czf $OUT/all.tgz -C $W .; }
export PATH=/usr/local/cuda/bin:$PATH
for d in /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64; do [ -d $d ] && export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d; done
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv; } > $W/env.txt 2>&1
for b in bench_attention_forward_fast bench_attention_forward_fp8 probe_consumer_loop; do
  cuobjdump -sass $B/$b > /tmp/sass_$b.txt
  python3 kernels/tools/sass_wait_placement.py /tmp/sass_$b.txt > $W/wait-placement-$b.txt 2>&1
  gzip -c /tmp/sass_$b.txt > $W/sass-$b.txt.gz
done
save
for r in 1 2; do
  timeout 100 $B/bench_attention_forward_fast --variants 128 "sched 1 Q smem" > $W/fwd128-regs-$r.txt 2>&1; echo "rc=$?" >> $W/fwd128-regs-$r.txt
  save
done
cut -c1-20,120-400 $W/wait-placement-*.txt | head -80
grep -h "rc=\|ALL OK\|SOME\|FAIL\|bad" $W/*.txt | sort | uniq -c
grep -h "full" $W/fwd128-regs-*.txt | grep -v check | cut -c1-200
