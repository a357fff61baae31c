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
if [ "$set" = 7 ]; then
  run softmax -s softmax-3pass,softmax-online,softmax-fast --sizes softmax:84x131072,softmax:136x131072,softmax:20x524288
  run matmul -s matmul-inner,matmul-outer --sizes matmul:2688x2688x1024,matmul:3840x3072x640,matmul:7168x3584x256 --dtype fp32,bf16
  run fwd -s attn-naive,attn-fa1,attn-fa2,attn-fa2-mma --sizes attn-fwd:26x4608x64 --causal no
  run fwdc -s attn-fa1,attn-fa2,attn-fa2-mma --sizes attn-fwd:30x3584x64 --causal yes
  run fwd128 -s attn-fa2-mma --sizes attn-fwd:28x3072x128 --causal no
  run bwd -s bwd-twopass,bwd-atomic,bwd-mma --sizes attn-bwd:60x1536x64,attn-bwd:14x5120x64 --causal no
  run bwdc -s bwd-twopass,bwd-atomic,bwd-mma --sizes attn-bwd:20x4608x64 --causal yes
  run bwd128 -s bwd-mma --sizes attn-bwd:18x4096x128 --causal no
elif [ "$set" = 6 ]; then
  run softmax -s softmax-3pass,softmax-online,softmax-fast --sizes softmax:76x131072,softmax:108x131072,softmax:44x262144
  run matmul -s matmul-inner,matmul-outer --sizes matmul:2560x2560x1024,matmul:1792x1792x2048,matmul:3584x3584x384 --dtype fp32,bf16
  run fwd -s attn-naive,attn-fa1,attn-fa2,attn-fa2-mma --sizes attn-fwd:18x5120x64 --causal no
  run fwdc -s attn-fa1,attn-fa2,attn-fa2-mma --sizes attn-fwd:22x4096x64 --causal yes
  run fwd128 -s attn-fa2-mma --sizes attn-fwd:12x8192x128 --causal no
  run bwd -s bwd-twopass,bwd-atomic,bwd-mma --sizes attn-bwd:52x2048x64,attn-bwd:18x3584x64 --causal no
  run bwdc -s bwd-twopass,bwd-atomic,bwd-mma --sizes attn-bwd:26x3072x64 --causal yes
  run bwd128 -s bwd-mma --sizes attn-bwd:22x3072x128 --causal no
elif [ "$set" = 5 ]; then
  run softmax -s softmax-3pass,softmax-online,softmax-fast --sizes softmax:60x131072,softmax:100x131072,softmax:36x262144
  run matmul -s matmul-inner,matmul-outer --sizes matmul:2816x2816x768,matmul:3328x3328x512,matmul:6144x3072x256 --dtype fp32,bf16
  run fwd -s attn-naive,attn-fa1,attn-fa2,attn-fa2-mma --sizes attn-fwd:14x6144x64 --causal no
  run fwdc -s attn-fa1,attn-fa2,attn-fa2-mma --sizes attn-fwd:20x5120x64 --causal yes
  run fwd128 -s attn-fa2-mma --sizes attn-fwd:20x4096x128 --causal no
  run bwd -s bwd-twopass,bwd-atomic,bwd-mma --sizes attn-bwd:44x2048x64,attn-bwd:10x6144x64 --causal no
  run bwdc -s bwd-twopass,bwd-atomic,bwd-mma --sizes attn-bwd:24x3072x64 --causal yes
  run bwd128 -s bwd-mma --sizes attn-bwd:14x4096x128 --causal no
elif [ "$set" = 4 ]; then
  run softmax -s softmax-3pass,softmax-online,softmax-fast --sizes softmax:64x131072,softmax:120x131072,softmax:48x262144
  run matmul -s matmul-inner,matmul-outer --sizes matmul:2304x2304x1024,matmul:3072x3840x512,matmul:5632x5632x128 --dtype fp32,bf16
  run fwd -s attn-naive,attn-fa1,attn-fa2,attn-fa2-mma --sizes attn-fwd:10x8192x64 --causal no
  run fwdc -s attn-fa1,attn-fa2,attn-fa2-mma --sizes attn-fwd:36x3072x64 --causal yes
  run fwd128 -s attn-fa2-mma --sizes attn-fwd:16x6144x128 --causal no
  run bwd -s bwd-twopass,bwd-atomic,bwd-mma --sizes attn-bwd:36x3072x64,attn-bwd:6x8192x64 --causal no
  run bwd128 -s bwd-mma --sizes attn-bwd:24x2048x128 --causal no
elif [ "$set" = 3 ]; then
  run softmax -s softmax-3pass,softmax-online,softmax-fast --sizes softmax:56x131072,softmax:88x131072,softmax:160x131072
  run matmul -s matmul-inner,matmul-outer --sizes matmul:2048x3072x1024,matmul:4096x2560x512,matmul:4608x4608x256 --dtype fp32,bf16
  run fwd -s attn-naive,attn-fa1,attn-fa2,attn-fa2-mma --sizes attn-fwd:2x2048x64,attn-fwd:16x6144x64 --causal no
  run fwdc -s attn-fa1,attn-fa2,attn-fa2-mma --sizes attn-fwd:28x4096x64 --causal yes
  run fwd128 -s attn-fa2-mma --sizes attn-fwd:24x4096x128,attn-fwd:56x2048x128 --causal no
  run bwd -s bwd-twopass,bwd-atomic,bwd-mma --sizes attn-bwd:28x2048x64,attn-bwd:12x6144x64 --causal no
  run bwdc -s bwd-twopass,bwd-atomic,bwd-mma --sizes attn-bwd:32x2048x64 --causal yes
  run bwd128 -s bwd-mma --sizes attn-bwd:20x3072x128 --causal no
elif [ "$set" = 2 ]; then
  run softmax -s softmax-3pass,softmax-online,softmax-fast --sizes softmax:72x131072,softmax:104x131072,softmax:40x262144
  run matmul -s matmul-inner,matmul-outer --sizes matmul:2560x2560x2048,matmul:3584x3584x1024,matmul:5120x2048x1024 --dtype fp32,bf16
  run fwd -s attn-fa1,attn-fa2,attn-fa2-mma --sizes attn-fwd:20x4096x64,attn-fwd:12x8192x64 --causal no
  run fwd128 -s attn-fa2-mma --sizes attn-fwd:40x2048x128 --causal no
  run bwd -s bwd-twopass,bwd-atomic,bwd-mma --sizes attn-bwd:40x2048x64,attn-bwd:20x4096x64 --causal no
  run bwd128 -s bwd-mma --sizes attn-bwd:12x4096x128 --causal no
else
  run softmax -s softmax-3pass,softmax-online,softmax-fast --sizes softmax:80x131072,softmax:112x131072,softmax:192x65536
  run matmul -s matmul-inner,matmul-outer --sizes matmul:3072x3072x1536,matmul:6144x4096x768 --dtype fp32,bf16
  run fwd -s attn-fa1,attn-fa2,attn-fa2-mma --sizes attn-fwd:24x4096x64,attn-fwd:48x2048x128 --causal no
  run bwd -s bwd-twopass,bwd-atomic,bwd-mma --sizes attn-bwd:48x2048x64,attn-bwd:24x4096x64 --causal no
fi
