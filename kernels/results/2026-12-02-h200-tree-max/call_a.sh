#!/usr/bin/env bash
# One H200, 2026-12-02, first call (issue 36): backward version 7 with the tile's statistics read
# from shared memory before the product waits (launch_bwd PRODUCTS 9, FLASHSIM_BWD_VERSION=8) against
# version 7: full checks at odd sizes and side by side at N >= 8192 (--ab-table 9), sustained ABBA
# phases at d = 128, N = 16384 (--ab), then SDPA's rates and bench_kernels' backward rows with each.
set -u
B=.devcarry/bin
W=/tmp/call_a; mkdir -p $W
save() { tar czf $OUT/all.tgz -C $W .; }
export PATH=/usr/local/cuda/bin:$PATH
for d in /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64; do [ -d $d ] && export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d; done
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv; python3 -c 'import torch; print(torch.__version__)'; } > $W/env.txt 2>&1
timeout 170 $B/bench_attention_backward_fast --ab-table 9 > $W/ab-table.txt 2>&1; echo "rc=$?" >> $W/ab-table.txt
save
timeout 60 $B/bench_attention_backward_fast --ab 128 16384 0 3 9 > $W/ab-128-16384-full.txt 2>&1; echo "rc=$?" >> $W/ab-128-16384-full.txt
save
PYTHONUNBUFFERED=1 timeout 100 python3 kernels/tools/sdpa_reference.py > $W/sdpa.tsv 2> $W/sdpa.err; echo "sdpa rc=$?" >> $W/sdpa.err
save
timeout 110 $B/bench_kernels --ops attn-bwd --ref $W/sdpa.tsv --csv $W/bench-bwd-v7.csv > $W/bench-bwd-v7.txt 2> $W/bench-bwd-v7.err; echo "rc=$?" >> $W/bench-bwd-v7.err
save
FLASHSIM_BWD_VERSION=8 timeout 110 $B/bench_kernels --ops attn-bwd --ref $W/sdpa.tsv --csv $W/bench-bwd-v8.csv > $W/bench-bwd-v8.txt 2> $W/bench-bwd-v8.err; echo "rc=$?" >> $W/bench-bwd-v8.err
save
grep -h "rc=\|ALL OK\|SOME" $W/*.txt $W/*.err | sort | uniq -c
grep -h "TFLOP\|TF " $W/ab-table.txt | tail -40; tail -20 $W/ab-128-16384-full.txt; tail -4 $W/bench-bwd-v7.txt $W/bench-bwd-v8.txt
