#!/usr/bin/env bash
# One H200, 2026-12-02 (third session), first call (issues 32 and 36): did ptxas keep backward
# version 7's exponentials under dP^T (the SASS of every warp-specialized backward kernel,
# sass_wait_placement.py), and what does fencing the wait for dP^T after them (launch_bwd PRODUCTS 9)
# do: full checks at odd sizes and side by side with version 7 at N >= 8192 (--ab-table 9), then
# sustained ABBA phases at N = 16384, d = 128 and 64 (--ab).
set -u
B=.devcarry/bin
W=/tmp/call_a; mkdir -p $W
save() { tar czf $OUT/all.tgz -C $W .; }
export PATH=/usr/local/cuda/bin:$PATH
for d in /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64; do [ -d $d ] && export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d; done
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv; } > $W/env.txt 2>&1
cuobjdump -sass $B/bench_attention_backward_fast > /tmp/sass_bwd.txt
python3 kernels/tools/sass_wait_placement.py /tmp/sass_bwd.txt attn_bwd_ws_kernel > $W/wait-placement.txt 2>&1
grep -n "Function" /tmp/sass_bwd.txt > $W/sass-functions.txt
gzip -c /tmp/sass_bwd.txt > $W/sass-bwd.txt.gz
save
timeout 200 $B/bench_attention_backward_fast --ab-table 9 > $W/ab-table.txt 2>&1; echo "rc=$?" >> $W/ab-table.txt
save
for d in 128 64; do
  timeout 60 $B/bench_attention_backward_fast --ab $d 16384 0 3 9 > $W/ab-$d-16384-full.txt 2>&1; echo "rc=$?" >> $W/ab-$d-16384-full.txt
  save
done
cat $W/wait-placement.txt | cut -c1-400
grep -h "rc=\|ALL OK\|SOME" $W/*.txt | sort | uniq -c
grep -h "TFLOP" $W/ab-table.txt | cut -c1-140
grep -h "TFLOP\|mean" $W/ab-*-16384-full.txt | cut -c1-160
