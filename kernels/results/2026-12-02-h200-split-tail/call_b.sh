#!/usr/bin/env bash
# One H200, 2026-12-02, second call: call a's split kernels ran 20 % slower with the split or without
# it; their SASS (cuobjdump, call a2) had every wgmma descriptor in vector registers (R2UR 75 against
# 10), since the walk's divisions took the ring index off the uniform datapath. Here the per-block
# spans come from host tables: the SASS counts again, the launcher with the split and without it
# beside the kStatic kernel (d = 128, 64), FP8 both ways, the staircase, the tests, memcheck, and the
# whole bench_kernels table.
set -u
B=.devcarry/bin
W=/tmp/call_b; mkdir -p $W
save() { tar czf $OUT/all.tgz -C $W .; }
export PATH=/usr/local/cuda/bin:$PATH
for d in /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64; do [ -d $d ] && export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d; done
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv; } > $W/env.txt 2>&1
cuobjdump -sass $B/bench_attention_forward_fast > /tmp/sass_fwd.txt
cuobjdump -sass $B/bench_attention_forward_fp8 > /tmp/sass_fp8.txt
for k in Li128ELi128ELi2ELb0ELi1ELb0ELi2ELi3ELb0ELi0ELi1EE Li128ELi128ELi2ELb0ELi3ELb0ELi2ELi3ELb0ELi0ELi1EE Li64ELi128ELi3ELb1ELi1ELb1ELi3ELi0ELb0ELi0ELi1EE Li64ELi128ELi3ELb1ELi3ELb1ELi3ELi0ELb0ELi0ELi1EE; do
  python3 kernels/tools/sass_opcode_counts.py /tmp/sass_fwd.txt "13__nv_bfloat16$k" HGMMA R2UR WARPSYNC BSSY MUFU STL LDL
done > $W/sass-counts.txt 2>&1
python3 kernels/tools/sass_opcode_counts.py /tmp/sass_fp8.txt attn_fwd_fp8_kernelILi224 HGMMA R2UR WARPSYNC BSSY MUFU STL LDL >> $W/sass-counts.txt 2>&1
save
timeout 80 $B/bench_attention_forward_fast --variants 128 "sched 1 order kExpsFirstTreeMax" > $W/fwd128-split.txt 2>&1; echo "rc=$?" >> $W/fwd128-split.txt
FLASHSIM_FWD_SPLIT=0 timeout 80 $B/bench_attention_forward_fast --variants 128 "sched 1 order kExpsFirstTreeMax" > $W/fwd128-nosplit.txt 2>&1; echo "rc=$?" >> $W/fwd128-nosplit.txt
timeout 80 $B/bench_attention_forward_fast --variants 64 "st3 pp 1 sched 1 Q smem tail kRescaleUnderS" > $W/fwd64-split.txt 2>&1; echo "rc=$?" >> $W/fwd64-split.txt
save
for s in 1 0; do
  FLASHSIM_FWD_SPLIT=$s timeout 60 $B/bench_attention_forward_fast --heads 128 8192 32 33 34 > $W/heads-8192-split$s.txt 2>&1; echo "rc=$?" >> $W/heads-8192-split$s.txt
  FLASHSIM_FWD_SPLIT=$s timeout 150 $B/bench_attention_forward_fp8 > $W/fp8-split$s.txt 2>&1; echo "rc=$?" >> $W/fp8-split$s.txt
done
save
( timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 $B/bench_attention_forward_fast --sanitize > $W/memcheck.txt 2>&1; echo "memcheck rc=$?" >> $W/memcheck.txt ) &
( timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 $B/bench_attention_forward_fp8 --sanitize > $W/memcheck-fp8.txt 2>&1; echo "memcheck rc=$?" >> $W/memcheck-fp8.txt ) &
{ timeout 120 $B/test_kernels_gpu; echo "test_kernels_gpu rc=$?"; } > $W/tests.txt 2>&1
wait
save
timeout 200 bash kernels/tools/bench_kernels.sh $B $W/bench; echo "bench_kernels.sh rc=$?" >> $W/bench/progress.log
save
cat $W/sass-counts.txt
grep -h "rc=\|ALL OK\|SOME\|ERROR SUMMARY\|test cases\|FAIL" $W/*.txt $W/bench/*.log 2>/dev/null | sort | uniq -c
grep -h "16384.*full" $W/fwd128-*.txt $W/fp8-*.txt | cut -c1-170
