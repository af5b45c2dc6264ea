#!/usr/bin/env bash
# Adds one fetched run_all.sh report (the device's $OUT/report.md) to this checkout: its dated
# section goes into BENCHMARKS.md above the earlier runs (newest first, as the file is kept),
# and the whole report to docs/bench/RUN_ID.md. The section's run-id line makes this
# idempotent: a run already in BENCHMARKS.md is refused and nothing is written.
#
# usage: tools/h200/append_bench.sh REPORT.md [BENCHMARKS.md [BENCH_DIR]]
set -euo pipefail

usage="usage: append_bench.sh REPORT.md [BENCHMARKS.md [BENCH_DIR]]"
report=${1:?$usage}
root=$(cd "$(dirname "$0")/../.." && pwd)
benchmarks=${2:-$root/BENCHMARKS.md}
bench_dir=${3:-$root/docs/bench}
# Both written by tools/h200/report.py.
readonly RUN_ID_PREFIX='<!-- vkgraph-bench-run: ' SECTION_END='<!-- end of BENCHMARKS.md section -->'

fail() {
  echo "append_bench.sh: $*" >&2
  exit 1
}

[ -f "$report" ] || fail "$report not found"
[ -f "$benchmarks" ] || fail "$benchmarks not found"
id_line=$(grep -m1 -F "$RUN_ID_PREFIX" "$report") || fail "$report has no run-id line (not from report.py?)"
grep -qxF "$SECTION_END" "$report" || fail "$report has no end-of-section marker"
run_id=${id_line#"$RUN_ID_PREFIX"}
run_id=${run_id%" -->"}
[[ $run_id =~ ^[A-Za-z0-9._-]+$ ]] || fail "unexpected run id '$run_id'"
full="$bench_dir/$run_id.md"
if grep -qxF "$id_line" "$benchmarks"; then
  fail "run $run_id is already in $benchmarks; nothing written"
fi
[ -e "$full" ] && fail "$full exists already; nothing written"

section=$(mktemp)
merged=$(mktemp "$benchmarks.XXXXXX")
trap 'rm -f "$section" "$merged"' EXIT
# The section: everything before the marker, trailing blank lines dropped.
awk -v end="$SECTION_END" '$0 == end { exit } { line[++n] = $0; if ($0 != "") last = n }
  END { for (i = 1; i <= last; ++i) print line[i] }' "$report" >"$section"
# Above the first dated section ("## "), or at the end when there is none yet.
awk -v sec="$section" '
  function put(  l) { while ((getline l < sec) > 0) print l; done = 1 }
  !done && /^## / { put(); print "" }
  { print }
  END { if (!done) { print ""; put() } }' "$benchmarks" >"$merged"
chmod --reference="$benchmarks" "$merged"
mkdir -p "$bench_dir"
cp "$report" "$full"
mv "$merged" "$benchmarks"
trap 'rm -f "$section"' EXIT
echo "append_bench.sh: run $run_id added to $benchmarks; full report in $full"
