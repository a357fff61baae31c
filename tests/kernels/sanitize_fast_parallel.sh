#!/usr/bin/env bash
# sanitize_fast.sh --parallel with a stand-in compute-sanitizer (no GPU needed): every run's line is
# printed, and one failing run makes the script exit 1; with none failing it exits 0.
set -u
script=${1:?usage: sanitize_fast_parallel.sh PATH/TO/sanitize_fast.sh}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin"
cat > "$tmp/bin/compute-sanitizer" <<'FAKE'
#!/usr/bin/env bash
# fails the racecheck of the 1000x777x300 matmul when FAIL_ONE is set, passes everything else
if [ -n "${FAIL_ONE:-}" ] && [[ "$*" == *racecheck* ]] && [[ "$*" == *1000* ]]; then
  echo "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)"; exit 9
fi
echo "========= ERROR SUMMARY: 0 errors"
FAKE
chmod +x "$tmp/bin/compute-sanitizer"
export PATH="$tmp/bin:$PATH"
FAIL_ONE=1 bash "$script" /nonexistent-bin "$tmp/out1" --parallel > "$tmp/log1" 2>&1
rc=$?
[ $rc -eq 1 ] || { echo "one failing run: exit $rc, expected 1"; cat "$tmp/log1"; exit 1; }
[ "$(grep -c ' rc=' "$tmp/log1")" -eq 16 ] || { echo "expected 16 run lines"; cat "$tmp/log1"; exit 1; }
grep -q '^matmul-1000x777x300 racecheck rc=9: ' "$tmp/log1" || { echo "the failing run is not reported"; cat "$tmp/log1"; exit 1; }
bash "$script" /nonexistent-bin "$tmp/out2" --parallel > "$tmp/log2" 2>&1
rc=$?
[ $rc -eq 0 ] || { echo "all passing: exit $rc, expected 0"; cat "$tmp/log2"; exit 1; }
[ "$(grep -c ' rc=0: ' "$tmp/log2")" -eq 16 ] || { echo "expected 16 passing lines"; cat "$tmp/log2"; exit 1; }
echo "sanitize_fast.sh --parallel: statuses and exit codes as expected"
