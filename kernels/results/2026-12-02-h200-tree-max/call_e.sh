#!/usr/bin/env bash
# One H200, 2026-12-02, fifth call: the d = 128 launcher (bf16, full) at batch x heads counts whose
# 128-row Q tiles divide evenly over the 132 SMs (33 heads: 2112 tiles at N = 8192, 4224 at 16384) or
# not (32 and 16: 2048 tiles, 68 SMs take 16 and 64 take 15; 34 and 17: 2176, 64 SMs take 17), twice.
set -u
B=.devcarry/bin
W=/tmp/call_e; mkdir -p $W
save() { tar czf $OUT/all.tgz -C $W .; }
export PATH=/usr/local/cuda/bin:$PATH
for d in /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64; do [ -d $d ] && export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d; done
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv; } > $W/env.txt 2>&1
timeout 100 $B/bench_attention_forward_fast --heads 128 8192 32 33 34 > $W/heads-8192.txt 2>&1; echo "rc=$?" >> $W/heads-8192.txt
save
timeout 100 $B/bench_attention_forward_fast --heads 128 16384 16 17 33 > $W/heads-16384.txt 2>&1; echo "rc=$?" >> $W/heads-16384.txt
save
cat $W/heads-8192.txt $W/heads-16384.txt
