#!/usr/bin/env bash
# the backward step launch's split per query chunk: test, then A/B at the sizes either side of the L2 rule
set -u
B=.devcarry/bin
mkdir -p $OUT/split/logs
export NCCL_NVLS_ENABLE=0
for d in /usr/local/cuda/lib64 "$(dirname "$(find /usr/local /opt /usr/lib -name 'libnccl.so.2' 2>/dev/null | head -1)")"; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"; done
nvidia-smi -L > $OUT/split/env.txt
timeout 150 $B/test_kernels_gpu "[ring]" > $OUT/split/test_ring.txt 2>&1; echo "test_ring rc=$?" | tee -a $OUT/split/test_ring.txt
tail -2 $OUT/split/test_ring.txt
R=$OUT/split/results.txt
one() {  # NAME ENV ARGS...
  local name=$1 env=$2; shift 2
  env $env timeout 150 $B/flashsim-gpu ring --heads 8 --split zigzag --transport copy --repeats 3 --backward "$@" > $OUT/split/logs/$name.txt 2>&1
  echo "$name rc=$? $(grep '^RESULT.*direction=backward' $OUT/split/logs/$name.txt)" | tee -a $R | cut -c1-60
}
for mask in "--causal" ""; do
  m=${mask:+causal}; m=${m:-full}
  for rep in 1 2; do
    one p2-128k-d128-$m-auto-$rep FLASHSIM_RING_BWD_SPLIT=auto --gpus 2 --n 131072 --d 128 $mask
    one p2-128k-d128-$m-joined-$rep FLASHSIM_RING_BWD_SPLIT=0 --gpus 2 --n 131072 --d 128 $mask
    one p2-128k-d128-$m-pair-$rep FLASHSIM_RING_BWD_SPLIT=auto --gpus 2 --n 131072 --d 128 $mask --launch pair
  done
  one p4-128k-d128-$m-auto FLASHSIM_RING_BWD_SPLIT=auto --gpus 4 --n 131072 --d 128 $mask
  one p4-128k-d128-$m-split FLASHSIM_RING_BWD_SPLIT=1 --gpus 4 --n 131072 --d 128 $mask
done
tar czf $OUT/split-logs.tgz -C $OUT/split logs && rm -rf $OUT/split/logs
