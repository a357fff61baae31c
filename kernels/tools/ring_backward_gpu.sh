#!/usr/bin/env bash
# Ring attention forward and backward, and the all-gather alternative, on a multi-GPU machine
# (issue 33): one log per run, the RESULT lines gathered in OUT/results.txt.
# Usage: kernels/tools/ring_backward_gpu.sh BIN_DIR OUT_DIR SET...
#   smoke     P = 2 and 4 at N = 16384: every direction, method, d, mask (validation first)
#   quick     a shorter smoke: both transports, backward and forward, all-gather, P = 1
#   p4        P = 4: N = 64k, 128k, 256k (P4_SIZES); d 64, 128; full and causal zig-zag; forward and backward
#   p2        P = 2: N = 64k, 128k (P2_SIZES); the same
#   streams   P = 4, N = 64k, full, d 64 and 128, both directions with --streams 1 (against the default 2)
#   allgather all-gather against the ring, forward and backward, at chosen sizes on P = 2 and 4
#   bound     an exchange-bound size (small N, many GPUs) with the ring's overlap against none
# RING_BUDGET_S (default 540): runs that would start later are skipped and named in results.txt.
# HEADS (default 8); TRANSPORT (nccl or copy, default nccl) for the ring runs of p4, p2, allgather, bound.
# RING_ARGS: more options for every `flashsim-gpu ring` run (e.g. "--settle-ms 0").
# CLOCKS=1: nvidia-smi samples every GPU's SM clock and power every 20 ms (OUT/smi.csv); at the end
# OUT/phases.txt holds each run's start and end, and each timed batch's (the run's PHASE lines, named
# RUN:MODE-REPEAT), and OUT/clocks.txt each GPU's median clock and power during each
# (tools/clock_phases.py).
# FULL_SPLIT (contiguous or zigzag, default contiguous): the split of p4's and p2's full-mask runs
# (zigzag gives the forward its one launch a step under the full mask too). LAUNCH_AB=1: p4 and p2
# also run each backward with --launch pair, right after the default (step) run.
set -u
START=$(date +%s)
BUDGET=${RING_BUDGET_S:-540}
HEADS=${HEADS:-8}
TRANSPORT=${TRANSPORT:-nccl}
FULL_SPLIT=${FULL_SPLIT:-contiguous}
LAUNCH_AB=${LAUNCH_AB:-0}
usage="usage: ring_backward_gpu.sh BIN_DIR OUT_DIR SET... (sets: smoke quick p4 p2 streams allgather bound)"
BIN=${1:?$usage}
OUT=${2:?$usage}
[ $# -ge 3 ] || { echo "$usage" >&2; exit 2; }
shift 2
for set in "$@"; do
  case $set in smoke|quick|p4|p2|streams|allgather|bound) ;; *) echo "ring_backward_gpu.sh: unknown set '$set'; $usage" >&2; exit 2 ;; esac
done
mkdir -p "$OUT/logs"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
for d in /usr/local/cuda/lib64 \
  "$(dirname "$(find /usr/local /opt /usr/lib -name 'libnccl.so.2' 2>/dev/null | head -1)" 2>/dev/null)"; do
  [ -n "$d" ] && [ -d "$d" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"
done
G="$BIN/flashsim-gpu"
RES="$OUT/results.txt"
touch "$RES"
SMI_PID=
if [ "${CLOCKS:-0}" = 1 ]; then
  nvidia-smi --query-gpu=timestamp,index,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
    --format=csv,noheader -lms 20 > "$OUT/smi.csv" 2>&1 &
  SMI_PID=$!
fi

run() {  # run NAME ARGS... : one run, its log, its RESULT line
  local name=$1
  shift
  if [ $(( $(date +%s) - START )) -gt "$BUDGET" ]; then
    echo "$name SKIPPED (time budget of ${BUDGET} s spent)" | tee -a "$RES"
    return
  fi
  local t0=$(date +%s.%N)
  [ -n "$SMI_PID" ] && echo "$name start $t0" >> "$OUT/phases.txt"
  echo "# started $(date -u +%Y/%m/%d\ %H:%M:%S.%3N) UTC" > "$OUT/logs/$name.txt"
  # shellcheck disable=SC2086  # RING_ARGS is a list of options
  timeout 120 "$G" ring --heads "$HEADS" "$@" ${RING_ARGS:-} >> "$OUT/logs/$name.txt" 2>&1
  local rc=$?
  local t1=$(date +%s.%N)
  [ -n "$SMI_PID" ] && echo "$name end $t1" >> "$OUT/phases.txt"
  [ -n "$SMI_PID" ] && grep '^PHASE ' "$OUT/logs/$name.txt" | sed "s/^PHASE /$name:/" >> "$OUT/phases.txt"
  echo "rc=$rc wall_s=$(awk "BEGIN{printf \"%.1f\", $t1 - $t0}")" >> "$OUT/logs/$name.txt"
  local line=$(grep '^RESULT' "$OUT/logs/$name.txt")
  echo "$name rc=$rc ${line:-NO RESULT: $(tail -3 "$OUT/logs/$name.txt" | tr '\n' ' ')}" | tee -a "$RES"
}

# table P NS: forward and backward, d 64 and 128, full and causal zig-zag
table() {
  local P=$1
  shift
  for n in "$@"; do
    for d in 128 64; do
      for mask in full causal; do
        local m=() split=$FULL_SPLIT
        [ $mask = causal ] && m=(--causal) && split=zigzag
        local a=(--gpus "$P" --n "$n" --d "$d" "${m[@]}" --split $split --transport "$TRANSPORT" --repeats 3)
        run "p${P}-n${n}-d${d}-${mask}-$TRANSPORT-fwd" "${a[@]}"
        run "p${P}-n${n}-d${d}-${mask}-$TRANSPORT-bwd" "${a[@]}" --backward
        [ "$LAUNCH_AB" = 1 ] && run "p${P}-n${n}-d${d}-${mask}-$TRANSPORT-bwd-pair" "${a[@]}" --backward --launch pair
      done
    done
  done
}

for set in "$@"; do
  case $set in
    smoke)
      { date -u; nvidia-smi -L; nvidia-smi topo -m; ldd "$G" | grep -E "nccl|not found"; } > "$OUT/env.txt" 2>&1
      for P in 2 4; do
        for d in 64 128; do
          run "smoke-p$P-d$d-full-bwd" --gpus $P --n 16384 --d $d --repeats 1 --backward
          run "smoke-p$P-d$d-causal-bwd" --gpus $P --n 16384 --d $d --causal --split zigzag --repeats 1 --backward
        done
        run "smoke-p$P-causal-contig-bwd" --gpus $P --n 16384 --d 64 --causal --repeats 1 --backward
        run "smoke-p$P-fp16-bwd" --gpus $P --n 16384 --d 128 --dtype fp16 --repeats 1 --backward
        run "smoke-p$P-copy-bwd" --gpus $P --n 16384 --d 128 --transport copy --repeats 1 --backward
        run "smoke-p$P-ag-fwd" --gpus $P --n 16384 --d 128 --method allgather --repeats 1
        run "smoke-p$P-ag-bwd" --gpus $P --n 16384 --d 128 --causal --split zigzag --method allgather --repeats 1 --backward
      done
      run "smoke-p1-bwd" --gpus 1 --n 4096 --d 128 --repeats 1 --backward
      ;;
    quick)  # after a kernel change: validation of every path at one size
      for P in 4 2; do
        for t in nccl copy; do
          run "quick-p$P-$t-d64-causal-bwd" --gpus $P --n 16384 --d 64 --causal --split zigzag --transport $t --repeats 1 --backward
          run "quick-p$P-$t-d128-full-bwd" --gpus $P --n 16384 --d 128 --transport $t --repeats 1 --backward
          run "quick-p$P-$t-d128-full-fwd" --gpus $P --n 16384 --d 128 --transport $t --repeats 1
        done
        run "quick-p$P-ag-bwd" --gpus $P --n 16384 --d 64 --causal --split zigzag --method allgather --repeats 1 --backward
      done
      run "quick-p1-fp16-bwd" --gpus 1 --n 1000 --d 128 --dtype fp16 --repeats 1 --backward
      ;;
    p4) table 4 ${P4_SIZES:-65536 131072 262144} ;;
    p2) table 2 ${P2_SIZES:-65536 131072} ;;
    streams)  # what the second compute stream buys: the same runs with --streams 1
      for d in 64 128; do
        for dir in fwd bwd; do
          b=()
          [ $dir = bwd ] && b=(--backward)
          run "streams1-p4-n65536-d$d-full-$TRANSPORT-$dir" --gpus 4 --n 65536 --d $d --transport "$TRANSPORT" --repeats 3 --streams 1 "${b[@]}"
        done
      done
      ;;
    allgather)
      for P in 4 2; do
        for n in 16384 65536; do
          for dir in fwd bwd; do
            b=()
            [ $dir = bwd ] && b=(--backward)
            run "ag-p$P-n$n-d128-causal-$dir" --gpus $P --n $n --d 128 --causal --split zigzag --method allgather --repeats 3 "${b[@]}"
            run "ring-p$P-n$n-d128-causal-$TRANSPORT-$dir" --gpus $P --n $n --d 128 --causal --split zigzag \
              --transport "$TRANSPORT" --repeats 3 "${b[@]}"
          done
        done
      done
      ;;
    bound)
      for P in 4 2; do
        run "bound-p$P-n8192-d64-full-$TRANSPORT-bwd" --gpus $P --n 8192 --d 64 --transport "$TRANSPORT" --repeats 3 --backward
        run "bound-p$P-n8192-d64-full-$TRANSPORT-fwd" --gpus $P --n 8192 --d 64 --transport "$TRANSPORT" --repeats 3
      done
      ;;
    *) echo "unknown set $set" >&2; exit 2 ;;
  esac
done
if [ -n "$SMI_PID" ]; then
  kill "$SMI_PID"
  wait "$SMI_PID" 2>/dev/null
  python3 "$(dirname "$0")/clock_phases.py" "$OUT/smi.csv" "$OUT/phases.txt" > "$OUT/clocks.txt" 2>&1
fi
echo "done in $(( $(date +%s) - START )) s" | tee -a "$RES"
