#!/usr/bin/env bash
# One H200, 2026-12-02, second call (issue 36): the forward launchers' kernels with each row's
# maximum as a tree (tile::kExpsFirstTreeMax at d = 128, kExpThenAddTreeMax at d = 64) beside the
# launchers, checked at small sizes then timed at every N with the SM clock after each run: d = 128
# twice, d = 64 twice.
set -u
B=.devcarry/bin
W=/tmp/call_b; mkdir -p $W
save() { tar czf $OUT/all.tgz -C $W .; }
export PATH=/usr/local/cuda/bin:$PATH
for d in /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64; do [ -d $d ] && export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d; done
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv; } > $W/env.txt 2>&1
for r in 1 2; do
  for d in 128 64; do
    timeout 130 $B/bench_attention_forward_fast --variants $d "TreeMax" > $W/fwd$d-treemax-$r.txt 2>&1; echo "rc=$?" >> $W/fwd$d-treemax-$r.txt
    save
  done
done
grep -h "rc=\|ALL OK\|SOME\|FAIL" $W/*.txt | sort | uniq -c
grep -h "N=8192\|N=16384" $W/fwd128-treemax-1.txt | head -24
