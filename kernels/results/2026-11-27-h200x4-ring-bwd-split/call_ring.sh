#!/usr/bin/env bash
# ring backward step launch: test, quick validation, table with A/B; args: TAG SETS...
set -u
TAG=$1; shift
B=.devcarry/bin
mkdir -p $OUT/$TAG
{ date -u; nvidia-smi -L; nvidia-smi topo -m; } > $OUT/$TAG/env.txt 2>&1
cat $OUT/$TAG/env.txt | head -6
timeout 150 $B/test_kernels_gpu "[ring]" > $OUT/$TAG/test_ring.txt 2>&1; echo "test_ring rc=$?" | tee -a $OUT/$TAG/test_ring.txt
tail -3 $OUT/$TAG/test_ring.txt
RING_BUDGET_S=${RING_BUDGET_S:-430} TRANSPORT=copy FULL_SPLIT=zigzag LAUNCH_AB=1 kernels/tools/ring_backward_gpu.sh $B $OUT/$TAG "$@" > $OUT/$TAG/script.txt 2>&1
echo "script rc=$?"
grep -c "rc=0" $OUT/$TAG/results.txt; grep -v "rc=0" $OUT/$TAG/results.txt | head
if [ -n "${MEMCHECK:-}" ]; then
  export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
  timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 $B/test_kernels_gpu "the ring backward in one launch a step equals one backward over the sequence" > $OUT/$TAG/memcheck.txt 2>&1; echo "memcheck rc=$?" | tee -a $OUT/$TAG/memcheck.txt
  tail -3 $OUT/$TAG/memcheck.txt
fi
tar czf $OUT/$TAG-logs.tgz -C $OUT/$TAG logs && rm -rf $OUT/$TAG/logs
