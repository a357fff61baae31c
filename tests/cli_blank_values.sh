#!/usr/bin/env bash
# An empty or blank value is bad input for every option that takes one (issue 35): BIN is walked
# through its --help and the --help of every subcommand, recursively, and each option that takes a
# value is run with '' and with ' ': each run must exit 2 and say "OPTION: an empty value is not
# allowed" (or "a blank value"). Then the commands the issue named, and list items, one by one.
# No GPU is needed: every refusal happens before a device is looked for.
#
#   cli_blank_values.sh BIN    (flashsim or flashsim-gpu, told apart by the file name)
set -u
bin=${1:?usage: cli_blank_values.sh PATH/TO/flashsim-or-flashsim-gpu}
name=$(basename "$bin")
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1  # a binary that took ' ' as a file name would write it here, not in the tree
fails=0 runs=0 options=0 commands=0

# expect RC TEXT ARGS...: BIN ARGS... exits RC and its output (stdout and stderr) holds TEXT
expect() {
  local rc=$1 text=$2 out got
  shift 2
  out=$("$bin" "$@" 2>&1 < /dev/null)
  got=$?
  runs=$((runs + 1))
  if [ "$got" -ne "$rc" ] || [[ "$out" != *"$text"* ]]; then
    fails=$((fails + 1))
    printf 'FAIL: %s' "$name"
    printf ' %q' "$@"
    printf ' -> exit %s (expected %s), output lacks or has: %s\n%s\n' "$got" "$rc" "$text" "$out" | head -5
  fi
}

# walk WORDS...: the options of BIN WORDS... that take a value, then its subcommands
walk() {
  local help section="" line names rest opt sub
  local -a subs=()
  help=$("$bin" "$@" --help 2>&1)
  commands=$((commands + 1))
  while IFS= read -r line; do
    case "$line" in
      [A-Za-z]*:) section=$line; continue ;;
    esac
    if [ "$section" = "Subcommands:" ] && [[ "$line" =~ ^\ \ ([a-z][a-z0-9-]*) ]]; then
      subs+=("${BASH_REMATCH[1]}")
    elif [ "$section" = "Options:" ] && [[ "$line" =~ ^\ \ (-[^ ]*)(.*)$ ]]; then
      names=${BASH_REMATCH[1]} rest=${BASH_REMATCH[2]}
      # CLI11 prints "NAMES TYPE ..." (one space) for an option with a value, "NAMES   text" for a flag
      [[ "$rest" =~ ^\ [^\ ] ]] || continue
      opt=${names%%,*}
      [[ "$names" =~ (^|,)(--[^,]+) ]] && opt=${BASH_REMATCH[2]}  # CLI11 names an option by its long name
      options=$((options + 1))
      expect 2 "$opt: an empty value is not allowed" "$@" "$opt" ""
      expect 2 "$opt: a blank value is not allowed" "$@" "$opt" " "
    fi
  done <<< "$help"
  for sub in "${subs[@]}"; do walk "$@" "$sub"; done
}

walk

# The commands the issue named, the .l2 directive, and an empty item inside a list
case "$name" in
  flashsim)
    expect 2 "--l2: an empty value is not allowed" traffic attention --schedule fa2 --n 4096 --d 64 --heads 8 --json --l2 ""
    expect 2 "--sms: a blank value is not allowed" traffic attention --l2 50MiB --sms " "
    expect 2 "--blocks-per-sm: an empty value is not allowed" traffic matmul --l2 50MiB --blocks-per-sm ""
    expect 2 "--regs: a blank value is not allowed" gen matmul --table --regs "3, ,4"
    expect 2 "--l2-max: an empty value is not allowed" sweep --vary l2 --l2-max ""
    printf '.l2\nLOAD x[0], R0\n' > "$tmp/l2-empty.fsa"
    printf '.l2    \nLOAD x[0], R0\n' > "$tmp/l2-blank.fsa"
    printf ".l2 ''\nLOAD x[0], R0\n" > "$tmp/l2-quotes.fsa"
    expect 2 "l2-empty.fsa:1:4: error: expected a number" run "$tmp/l2-empty.fsa"
    expect 2 "l2-blank.fsa:1:8: error: expected a number" run "$tmp/l2-blank.fsa"
    expect 2 "l2-quotes.fsa:1:5: error: expected a number" run "$tmp/l2-quotes.fsa"
    expect 2 "--param n: '' is not an integer" run --param n= "$tmp/none.fsa"
    expect 2 "invalid size '': empty" sweep --vary l2 --measured "H100::x.csv"
    ;;
  flashsim-gpu)
    expect 2 "--sizes: an empty value is not allowed" compare --sizes ""
    expect 2 "an empty item in 'small,,large'" compare --sizes small,,large
    expect 2 "an empty item in 'tiny,'" traffic --sizes tiny,
    expect 2 "an empty item in '4x x64'" compare --sizes "attn-fwd:4x x64"
    expect 2 "an empty item in 'attn-fa2,,attn-fa1'" compare --schedules attn-fa2,,attn-fa1
    expect 2 "--dtype: an empty item in 'bf16,,fp16'" compare --dtype bf16,,fp16
    expect 2 "--fractions: '' is not a fraction" l2probe --fractions 0.5,,1
    expect 2 "--l2: a blank value is not allowed" predict --from x.csv --l2 " "
    expect 2 "--gpus: an empty value is not allowed" ring --gpus ""
    ;;
esac

echo "$name: $commands commands, $options options that take a value, $runs runs, $fails failed"
# a walk that found next to nothing would pass vacuously
if [ "$commands" -lt 5 ] || [ "$options" -lt 20 ]; then
  echo "FAIL: the walk found too few commands or options; has the --help format changed?"
  exit 1
fi
[ "$fails" -eq 0 ]
