#!/usr/bin/env bash
# One H100 (nvidia-h100-x1), 2026-12-07, second call, the binaries of call a: the whole bench_kernels
# table a second time (SDPA in the same call: the second of issue 36's two calls), the d = 128
# launchers beside their kernels before the fence of 2026-12-02 (the pair the model and the H200
# measured) and with the last round split (FLASHSIM_FWD_SPLIT=1), then the GPU tests and
# compute-sanitizer over every fast kernel (sanitize_fast.sh: the FP8 forward included).
set -u
W=/tmp/call_b; source kernels/tools/device_call_env.sh
timeout 210 bash kernels/tools/bench_kernels.sh $B $W/bench; echo "bench_kernels.sh rc=$?" >> $W/bench/progress.log
save
timeout 70 $B/bench_attention_forward_fast --variants 128 "kExpsFirstTreeMax tail kRescaleUnderS" > $W/fwd128-fence-pair.txt 2>&1; echo "rc=$?" >> $W/fwd128-fence-pair.txt
save
FLASHSIM_FWD_SPLIT=1 timeout 40 $B/bench_attention_forward_fast --heads 128 8192 32 33 > $W/fwd128-split-on.txt 2>&1; echo "rc=$?" >> $W/fwd128-split-on.txt
timeout 40 $B/bench_attention_forward_fast --heads 128 8192 32 33 > $W/fwd128-split-off.txt 2>&1; echo "rc=$?" >> $W/fwd128-split-off.txt
save
( SANITIZE_TIMEOUT=200 timeout 230 bash kernels/tools/sanitize_fast.sh $B $W/sanitize --parallel > $W/sanitize.txt 2>&1; echo "sanitize_fast rc=$?" >> $W/sanitize.txt ) &
{ timeout 150 $B/test_kernels_gpu; echo "test_kernels_gpu rc=$?"; } > $W/tests.txt 2>&1
wait
save
cat $W/env.txt; tail -2 $W/bench/progress.log
grep -h "within 15\|attn-fwd.*16x16384x128\|attn-bwd.*16x16384x128" $W/bench/bench_kernels.txt | cut -c1-160
grep -h "rc=\|ALL OK\|SOME" $W/*.txt | sort | uniq -c
grep -h "16384\|8192" $W/fwd128-fence-pair.txt | grep -v check | sed 's/  */ /g' | cut -c1-170
grep -h "heads\|ms" $W/fwd128-split-*.txt | cut -c1-160 | head -12
cat $W/sanitize.txt | cut -c1-160; tail -3 $W/tests.txt
