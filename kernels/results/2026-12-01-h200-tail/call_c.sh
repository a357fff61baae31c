#!/usr/bin/env bash
# One H200, 2026-12-01, third call: the tree with every launcher on kRescaleUnderS (d = 64 too): the
# GPU tests (the ring's step kernels among them), the d = 64 launchers against their previous
# kernels, PyTorch SDPA's rates, bench_kernels' forward and backward rows beside them (SM clock read
# after each timed run; the time model's prediction in every row), compare at sizes outside the
# benchmark (no CPU check: the call's minutes go to the GPU).
set -u
B=.devcarry/bin
W=/tmp/call_c; mkdir -p $W
save() { tar czf $OUT/all.tgz -C $W .; }
export PATH=/usr/local/cuda/bin:$PATH
for d in /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64; do [ -d $d ] && export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d; done
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv; python3 -c 'import torch; print(torch.__version__)'; } > $W/env.txt 2>&1
{ timeout 100 $B/test_kernels_gpu; echo "test_kernels_gpu rc=$?"; } > $W/tests.txt 2>&1
save
timeout 80 $B/bench_attention_forward_fast --variants 64 "tail" > $W/fwd64-tail.txt 2>&1; echo "rc=$?" >> $W/fwd64-tail.txt
save
PYTHONUNBUFFERED=1 timeout 150 python3 kernels/tools/sdpa_reference.py > $W/sdpa.tsv 2> $W/sdpa.err; echo "sdpa rc=$?" >> $W/sdpa.err
save
timeout 150 $B/bench_kernels --ops attn-fwd --ref $W/sdpa.tsv --csv $W/bench-fwd.csv > $W/bench-fwd.txt 2> $W/bench-fwd.err; echo "bench fwd rc=$?" >> $W/bench-fwd.err
save
{ timeout 80 $B/flashsim-gpu compare --no-check -s attn-fa2-mma,bwd-mma --sizes attn:12x6144x128,attn:24x3072x64,attn:6x12288x128 --causal both --repeats 10 --csv $W/compare.csv; echo "compare rc=$?"; } > $W/compare.txt 2>&1
save
timeout 200 $B/bench_kernels --ops attn-bwd --ref $W/sdpa.tsv --csv $W/bench-bwd.csv > $W/bench-bwd.txt 2> $W/bench-bwd.err; echo "bench bwd rc=$?" >> $W/bench-bwd.err
save
grep -h "rc=\|ALL OK\|SOME" $W/*.txt $W/*.err | sort | uniq -c
tail -12 $W/bench-fwd.txt; tail -4 $W/bench-bwd.txt; tail -16 $W/compare.txt
