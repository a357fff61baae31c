#!/usr/bin/env bash
# Ring attention on a 2-GPU machine (nvidia-h200-x2), one call: environment facts, bad-input
# checks, the table of issue 16 (N = 16k, 64k, 128k; full, causal contiguous, causal zig-zag; d 64
# and 128; bf16, fp16 at one size) and the overlap runs (NCCL with fewer CTAs, the copy engines,
# an exchange-bound size). Every run under `timeout`; one log per run, RESULT lines gathered.
# Usage: kernels/tools/ring_h200x2.sh BIN_DIR OUT_DIR [sets...]   (sets: env bad table fp16 overlap)
# RING_BUDGET_S (default 280): runs that would start later than this are skipped (named in results.txt).
set -u
START=$(date +%s)
BUDGET=${RING_BUDGET_S:-280}
BIN=${1:?bin dir}
OUT=${2:?out dir}
shift 2
SETS=${*:-env bad table fp16 overlap}
mkdir -p "$OUT/logs"
# NVLink multicast stays off on this shared host (KINDS.md)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/extras/CUPTI/lib64 \
  "$(dirname "$(find /usr/local /opt -name 'libcupti.so.13' 2>/dev/null | head -1)" 2>/dev/null)" \
  "$(dirname "$(find /usr/local /opt /usr/lib -name 'libnccl.so.2' 2>/dev/null | head -1)" 2>/dev/null)"; do
  [ -n "$d" ] && [ -d "$d" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"
done
G="$BIN/flashsim-gpu"
RES="$OUT/results.txt"
: > "$RES"

run() {  # run NAME ARGS... : one ring run, its log, its RESULT line
  local name=$1
  shift
  if [ $(( $(date +%s) - START )) -gt "$BUDGET" ]; then
    echo "$name SKIPPED (time budget of ${BUDGET} s spent)" | tee -a "$RES"
    return
  fi
  local t0=$(date +%s.%N)
  timeout 40 "$G" ring "$@" > "$OUT/logs/$name.txt" 2>&1
  local rc=$?
  local t1=$(date +%s.%N)
  echo "rc=$rc wall_s=$(awk "BEGIN{printf \"%.1f\", $t1 - $t0}")" >> "$OUT/logs/$name.txt"
  local line=$(grep '^RESULT' "$OUT/logs/$name.txt")
  echo "$name rc=$rc ${line:-NO RESULT: $(tail -2 "$OUT/logs/$name.txt" | tr '\n' ' ')}" | tee -a "$RES"
}

for set in $SETS; do
  case $set in
    env)
      {
        date -u
        nvidia-smi -L
        nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,pci.bus_id --format=csv
        nvidia-smi topo -m
        nvidia-smi nvlink -s 2>&1 | head -40
        echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
        ldd "$G" | grep -E "nccl|cupti|not found"
        env | grep -E '^NCCL_|NVSHMEM|TORCH_SYMM' | sort
      } > "$OUT/env.txt" 2>&1
      head -12 "$OUT/env.txt"
      ;;
    bad)  # each must say why and exit 2
      {
        for a in "--gpus 3 --n 12288" "--d 96" "--n 16385" "--n 16386 --split zigzag" "--dtype fp32"; do
          echo "== flashsim-gpu ring $a"
          timeout 30 "$G" ring $a
          echo "rc=$?"
        done
      } > "$OUT/logs/bad-input.txt" 2>&1
      grep -E "rc=|flashsim-gpu ring:" "$OUT/logs/bad-input.txt"
      ;;
    table)
      for n in 16384 65536 131072; do
        case $n in 16384) h=16 ;; 65536) h=4 ;; 131072) h=2 ;; esac
        for d in 64 128; do
          run "n$n-d$d-full" --gpus 2 --n $n --heads $h --d $d --dtype bf16
          run "n$n-d$d-causal" --gpus 2 --n $n --heads $h --d $d --dtype bf16 --causal
          run "n$n-d$d-causal-zigzag" --gpus 2 --n $n --heads $h --d $d --dtype bf16 --causal --split zigzag
        done
      done
      ;;
    fp16)
      run "n65536-d128-full-fp16" --gpus 2 --n 65536 --heads 4 --d 128 --dtype fp16
      run "n65536-d128-causal-zigzag-fp16" --gpus 2 --n 65536 --heads 4 --d 128 --dtype fp16 --causal --split zigzag
      ;;
    overlap)
      # exchange-bound (n/P = 2048) and balanced (n/P = 8192) sizes: NCCL as it comes, NCCL on fewer
      # CTAs, and the copy engines (no SMs taken from the kernel)
      for n in 4096 16384; do
        case $n in 4096) h=64 ;; 16384) h=16 ;; esac
        run "ov-n$n-d128-full-nccl-ctas4" --gpus 2 --n $n --heads $h --d 128 --nccl-ctas 4
        run "ov-n$n-d128-full-nccl-ctas1" --gpus 2 --n $n --heads $h --d 128 --nccl-ctas 1
        run "ov-n$n-d128-full-copy" --gpus 2 --n $n --heads $h --d 128 --transport copy
      done
      run "ov-n4096-d128-full-nccl" --gpus 2 --n 4096 --heads 64 --d 128
      run "ov-n65536-d128-causal-zigzag-copy" --gpus 2 --n 65536 --heads 4 --d 128 --causal --split zigzag --transport copy
      run "p1-n16384-d128-full" --gpus 1 --n 16384 --heads 16 --d 128
      ;;
  esac
done
tar -C "$OUT" -czf "$OUT/ring-logs.tgz" logs && rm -rf "$OUT/logs"
echo "== summary"
cat "$RES"
