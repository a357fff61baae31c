#!/usr/bin/env bash
# The L2 model checked on sizes it was not built from (kernels/RESULTS.md, "Two L2 partitions"):
# flashsim-gpu compare at runs none of the earlier result files holds, one CSV and text per group.
#   kernels/tools/l2_unseen.sh BIN_DIR OUT_DIR TAG [SET]     e.g. build/default/bin /tmp/out h100
# SET 1 (default): the 27 runs that checked the two-partition model; SET 2: 33 runs at other sizes
# again, that checked the sets and dirty limit that l2probe measured; SET 3: 44 runs at sizes again
# new, causal ones among them, that checked matmul-outer's C strips (2026-11-24, fourth session);
# SET 4: 36 runs again new, that checked the page-balanced sets and the far copies' low rank;
# SET 5: 39 runs again new, the first with writes measured in one range (2026-11-25); SET 6: 39
# runs again new, that checked the dirty limit shared by groups of 4 sets (2026-11-25, night);
# SET 7: 39 runs again new, chosen before either GPU ran them, for one binary on both (2026-11-26).
# Then, on any machine: flashsim-gpu predict --from OUT_DIR/TAG-*.csv --l2 SIZE --l2-partitions 1|2
set -u
bin=${1:?usage: l2_unseen.sh BIN_DIR OUT_DIR TAG}
out=${2:?usage: l2_unseen.sh BIN_DIR OUT_DIR TAG}
tag=${3:?usage: l2_unseen.sh BIN_DIR OUT_DIR TAG}
set=${4:-1}
case "$set" in
  [1-7]) ;;
  *) echo "l2_unseen.sh: SET must be 1-7, got '$set'" >&2; exit 2 ;;
esac
mkdir -p "$out"
for d in /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"
done
run() {  # run NAME ARGS...: one compare, its table in OUT/TAG-NAME.txt and rows in OUT/TAG-NAME.csv
  local name=$1
  shift
  "$bin/flashsim-gpu" compare "$@" --no-check --repeats 3 --measurements "${MEASUREMENTS:-3}" --csv "$out/$tag-$name.csv" > "$out/$tag-$name.txt" 2>&1
  echo "$tag-$name rc=$?"
}
# Sets 3-7 run the same eight groups; an empty SIZES skips its group. Arguments, each a --sizes
# list without the op prefix: softmax, matmul (fp32 and bf16), forward, forward causal, forward
# d = 128 (attn-fa2-mma), backward, backward causal, backward d = 128 (bwd-mma).
run_set() {
  with_op() { local op=$1 list=$2; echo "$op:${list//,/,$op:}"; }
  [ -n "$1" ] && run softmax -s softmax-3pass,softmax-online,softmax-fast --sizes "$(with_op softmax "$1")"
  [ -n "$2" ] && run matmul -s matmul-inner,matmul-outer --sizes "$(with_op matmul "$2")" --dtype fp32,bf16
  [ -n "$3" ] && run fwd -s attn-naive,attn-fa1,attn-fa2,attn-fa2-mma --sizes "$(with_op attn-fwd "$3")" --causal no
  [ -n "$4" ] && run fwdc -s attn-fa1,attn-fa2,attn-fa2-mma --sizes "$(with_op attn-fwd "$4")" --causal yes
  [ -n "$5" ] && run fwd128 -s attn-fa2-mma --sizes "$(with_op attn-fwd "$5")" --causal no
  [ -n "$6" ] && run bwd -s bwd-twopass,bwd-atomic,bwd-mma --sizes "$(with_op attn-bwd "$6")" --causal no
  [ -n "$7" ] && run bwdc -s bwd-twopass,bwd-atomic,bwd-mma --sizes "$(with_op attn-bwd "$7")" --causal yes
  [ -n "$8" ] && run bwd128 -s bwd-mma --sizes "$(with_op attn-bwd "$8")" --causal no
  return 0
}
case "$set" in
  7) run_set 84x131072,136x131072,20x524288 2688x2688x1024,3840x3072x640,7168x3584x256 26x4608x64 30x3584x64 \
       28x3072x128 60x1536x64,14x5120x64 20x4608x64 18x4096x128 ;;
  6) run_set 76x131072,108x131072,44x262144 2560x2560x1024,1792x1792x2048,3584x3584x384 18x5120x64 22x4096x64 \
       12x8192x128 52x2048x64,18x3584x64 26x3072x64 22x3072x128 ;;
  5) run_set 60x131072,100x131072,36x262144 2816x2816x768,3328x3328x512,6144x3072x256 14x6144x64 20x5120x64 \
       20x4096x128 44x2048x64,10x6144x64 24x3072x64 14x4096x128 ;;
  4) run_set 64x131072,120x131072,48x262144 2304x2304x1024,3072x3840x512,5632x5632x128 10x8192x64 36x3072x64 \
       16x6144x128 36x3072x64,6x8192x64 "" 24x2048x128 ;;
  3) run_set 56x131072,88x131072,160x131072 2048x3072x1024,4096x2560x512,4608x4608x256 2x2048x64,16x6144x64 \
       28x4096x64 24x4096x128,56x2048x128 28x2048x64,12x6144x64 32x2048x64 20x3072x128 ;;
  2)  # no naive forward, no causal groups
  run softmax -s softmax-3pass,softmax-online,softmax-fast --sizes softmax:72x131072,softmax:104x131072,softmax:40x262144
  run matmul -s matmul-inner,matmul-outer --sizes matmul:2560x2560x2048,matmul:3584x3584x1024,matmul:5120x2048x1024 --dtype fp32,bf16
  run fwd -s attn-fa1,attn-fa2,attn-fa2-mma --sizes attn-fwd:20x4096x64,attn-fwd:12x8192x64 --causal no
  run fwd128 -s attn-fa2-mma --sizes attn-fwd:40x2048x128 --causal no
  run bwd -s bwd-twopass,bwd-atomic,bwd-mma --sizes attn-bwd:40x2048x64,attn-bwd:20x4096x64 --causal no
  run bwd128 -s bwd-mma --sizes attn-bwd:12x4096x128 --causal no
  ;;
  1)
  run softmax -s softmax-3pass,softmax-online,softmax-fast --sizes softmax:80x131072,softmax:112x131072,softmax:192x65536
  run matmul -s matmul-inner,matmul-outer --sizes matmul:3072x3072x1536,matmul:6144x4096x768 --dtype fp32,bf16
  run fwd -s attn-fa1,attn-fa2,attn-fa2-mma --sizes attn-fwd:24x4096x64,attn-fwd:48x2048x128 --causal no
  run bwd -s bwd-twopass,bwd-atomic,bwd-mma --sizes attn-bwd:48x2048x64,attn-bwd:24x4096x64 --causal no
  ;;
esac
