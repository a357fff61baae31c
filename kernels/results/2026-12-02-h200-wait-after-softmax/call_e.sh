#!/usr/bin/env bash
# One H200, 2026-12-02 (second session), fifth call: the d = 128 launchers with the softmax kept
# under P V (kFwd128Tail = kWaitAfterSoftmax) as landed: their SASS, the launcher beside its previous
# kernels (tail kRescaleUnderS, the wait hoisted), the whole bench_kernels table (SDPA in the same
# call), test_kernels_gpu, and memcheck over the forward driver's small checks.
set -u
B=.devcarry/bin
W=/tmp/call_e; mkdir -p $W
save() { tar czf $OUT/all.tgz -C $W .; }
export PATH=/usr/local/cuda/bin:$PATH
for d in /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64; do [ -d $d ] && export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d; done
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv; } > $W/env.txt 2>&1
cuobjdump -sass $B/bench_attention_forward_fast > /tmp/sass_fwd.txt
python3 kernels/tools/sass_wait_placement.py /tmp/sass_fwd.txt attn_fwd_ws_kernel > $W/wait-placement.txt 2>&1
save
timeout 60 $B/bench_attention_forward_fast --variants 128 "kExpsFirstTreeMax tail kRescaleUnderS" > $W/fwd128-pair.txt 2>&1; echo "rc=$?" >> $W/fwd128-pair.txt
save
timeout 150 bash kernels/tools/bench_kernels.sh $B $W/bench; echo "bench_kernels.sh rc=$?" >> $W/bench/progress.log
save
( timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 $B/bench_attention_forward_fast --sanitize > $W/memcheck.txt 2>&1; echo "memcheck rc=$?" >> $W/memcheck.txt ) &
{ timeout 110 $B/test_kernels_gpu; echo "test_kernels_gpu rc=$?"; } > $W/tests.txt 2>&1
wait
save
grep -c "/ 66 EX2, after the wait [0-9]* / 0 EX2" $W/wait-placement.txt
grep -h "rc=\|ALL OK\|SOME\|ERROR SUMMARY\|test cases\|FAIL" $W/*.txt $W/bench/*.log 2>/dev/null | sort | uniq -c
grep -h "16384\|8192" $W/fwd128-pair.txt | grep -v check | sed 's/  */ /g' | cut -c1-170
grep -h "attn-fwd.*x128 .*full\|attn-fwd.*x128 .*causal" $W/bench/bench_kernels.txt | cut -c1-150
