#!/usr/bin/env bash
# One H200, 2026-12-02, third call: the host tables of call b left the split kernels' SASS as it was
# (R2UR 75). Here the partial path's shuffles and warp syncs are outside its branch (no `continue`),
# and the split is opt-in (FLASHSIM_FWD_SPLIT=1): the SASS counts, the launcher with the split beside
# the kStatic kernel, the staircase, the whole bench_kernels table as landed (split off), the tests
# and memcheck with the split on, FP8 with the split on.
set -u
B=.devcarry/bin
W=/tmp/call_c; mkdir -p $W
save() { tar czf $OUT/all.tgz -C $W .; }
export PATH=/usr/local/cuda/bin:$PATH
for d in /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64; do [ -d $d ] && export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d; done
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv; } > $W/env.txt 2>&1
cuobjdump -sass $B/bench_attention_forward_fast > /tmp/sass_fwd.txt
for k in Li128ELi128ELi2ELb0ELi1ELb0ELi2ELi3ELb0ELi0ELi1EE Li128ELi128ELi2ELb0ELi3ELb0ELi2ELi3ELb0ELi0ELi1EE; do
  python3 kernels/tools/sass_opcode_counts.py /tmp/sass_fwd.txt "13__nv_bfloat16$k" HGMMA R2UR WARPSYNC BSSY MUFU STL LDL
done > $W/sass-counts.txt 2>&1
save
FLASHSIM_FWD_SPLIT=1 timeout 60 $B/bench_attention_forward_fast --variants 128 "sched 1 order kExpsFirstTreeMax" > $W/fwd128-split.txt 2>&1; echo "rc=$?" >> $W/fwd128-split.txt
FLASHSIM_FWD_SPLIT=1 timeout 40 $B/bench_attention_forward_fast --heads 128 8192 32 33 34 > $W/heads-8192-split1.txt 2>&1; echo "rc=$?" >> $W/heads-8192-split1.txt
save
timeout 150 bash kernels/tools/bench_kernels.sh $B $W/bench; echo "bench_kernels.sh rc=$?" >> $W/bench/progress.log
save
( FLASHSIM_FWD_SPLIT=1 timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 $B/bench_attention_forward_fast --sanitize > $W/memcheck.txt 2>&1; echo "memcheck rc=$?" >> $W/memcheck.txt ) &
{ timeout 100 $B/test_kernels_gpu; echo "test_kernels_gpu rc=$?"; } > $W/tests.txt 2>&1
wait
save
FLASHSIM_FWD_SPLIT=1 timeout 80 $B/bench_attention_forward_fp8 > $W/fp8-split1.txt 2>&1; echo "rc=$?" >> $W/fp8-split1.txt
save
cat $W/sass-counts.txt
grep -h "rc=\|ALL OK\|SOME\|ERROR SUMMARY\|test cases\|FAIL" $W/*.txt $W/bench/*.log 2>/dev/null | sort | uniq -c
grep -h "16384.*full" $W/fwd128-*.txt $W/fp8-*.txt | cut -c1-170
grep -h "attn-fwd.*x128 .*full" $W/bench/bench_kernels.txt | cut -c1-140
