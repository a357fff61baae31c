#!/usr/bin/env bash
# One H200, 2026-12-01: the consumer-loop probe's tile stamps (issue 32), the d = 128 forward with O's
# rescale under S_j's products (kRescaleUnderS, issue 36) twice, the loop without copies and handshakes
# on flat inputs, the GPU tests (the ring's sums among them), compare at sizes outside the benchmark,
# and the SASS of the launcher's and the variant's loops. Binaries built on the CPU machine, carried.
set -u
B=.devcarry/bin
# $OUT takes 8 files at most: every log goes to $W, packed into $W/all.tgz after each step
W=/tmp/call_a; mkdir -p $W
save() { tar czf $OUT/all.tgz -C $W .; }
export PATH=/usr/local/cuda/bin:$PATH
for d in /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64; do [ -d $d ] && export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d; done
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv; } > $W/env.txt 2>&1
timeout 150 $B/probe_consumer_loop > $W/probe-consumer-loop.txt 2>&1; echo "rc=$?" >> $W/probe-consumer-loop.txt
save
timeout 150 $B/bench_attention_forward_fast --variants 128 "tail" > $W/fwd-tail-1.txt 2>&1; echo "rc=$?" >> $W/fwd-tail-1.txt
save
{ timeout 150 $B/test_kernels_gpu; echo "test_kernels_gpu rc=$?"; } > $W/tests.txt 2>&1
save
cuobjdump -sass $B/probe_consumer_loop > /tmp/probe.sass; cuobjdump -sass $B/bench_attention_forward_fast > /tmp/fwd.sass
python3 kernels/results/2026-11-29-h200-fwd-load-diagnostics/sass_loop_counts.py /tmp/probe.sass:consumer_loop_kernelILi0ELb0ELb1ELb1ELb1ELb0E \
  /tmp/fwd.sass:attn_fwd_ws_kernelI13__nv_bfloat16Li128ELi128ELi2ELb0ELi1ELb0ELi2ELi1ELb0ELi0ELi0EEE \
  /tmp/fwd.sass:attn_fwd_ws_kernelI13__nv_bfloat16Li128ELi128ELi2ELb0ELi1ELb0ELi2ELi1ELb0ELi0ELi1EEE > $W/sass-loop-counts.txt 2>&1
python3 - /tmp/probe.sass /tmp/fwd.sass > $W/loops.sass <<'PY'
import re, sys  # only the functions that the counts name: the whole binary's SASS is too large to bring back
keep = ("consumer_loop_kernelILi0ELb0ELb1ELb1ELb1ELb0E", "attn_fwd_ws_kernelI13__nv_bfloat16Li128ELi128ELi2ELb0ELi1ELb0ELi2ELi1ELb0ELi0ELi0EEE",
        "attn_fwd_ws_kernelI13__nv_bfloat16Li128ELi128ELi2ELb0ELi1ELb0ELi2ELi1ELb0ELi0ELi1EEE")
for path in sys.argv[1:]:
    for part in re.split(r"\n(?=\s*Function : )", open(path).read()):
        if any(k in part.split("\n", 1)[0] for k in keep): print(part)
PY
save
{ timeout 120 $B/flashsim-gpu compare -s attention --sizes attn:12x6144x128,attn:24x3072x64,attn:6x12288x128 --causal both --repeats 10 --csv $W/compare.csv; echo "compare rc=$?"; } > $W/compare.txt 2>&1
save
timeout 120 $B/bench_attention_forward_fast --variants 128 "tail" > $W/fwd-tail-2.txt 2>&1; echo "rc=$?" >> $W/fwd-tail-2.txt
save
FLASHSIM_FWD_FLAT_INPUTS=1 timeout 60 $B/bench_attention_forward_fast --variants 128 "kLoadsNoSync" > $W/fwd-flat-nosync.txt 2>&1; echo "rc=$?" >> $W/fwd-flat-nosync.txt
save
grep -h "rc=\|ALL OK\|SOME\|FAIL" $W/*.txt | sort | uniq -c
grep -h -E "^bf16 d=128 N=(4096|8192|16384)" $W/fwd-tail-*.txt | sed -E 's/v6 ws 2c x128 st2 //; s/err O.*//'
grep -A12 -i "stamp" $W/probe-consumer-loop.txt | head -40
