#!/usr/bin/env bash
# Runs one vkgraph command and checks how it ends: exit status, and a pattern on the stream it
# must appear in. Errors belong on stderr with a non-zero status; a correct run exits 0.
#   expect.sh RC STREAM PATTERN -- COMMAND...
# RC is a number or "nonzero"; STREAM is stdout or stderr; PATTERN an extended regex. For
# STREAM stderr, stdout must not mention the error.
set -u
want_rc=$1 stream=$2 pattern=$3
shift 3
[ "$1" = "--" ] && shift
cmd="$*"
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
"$@" >"$out" 2>"$err"
rc=$?
fail() {
  echo "FAIL: $*"
  echo "--- command: $cmd"; echo "--- exit status $rc"; echo "--- stdout:"; cat "$out"; echo "--- stderr:"; cat "$err"
  exit 1
}
if [ "$want_rc" = nonzero ]; then
  [ "$rc" -ne 0 ] || fail "expected a non-zero exit status"
else
  [ "$rc" -eq "$want_rc" ] || fail "expected exit status $want_rc"
fi
[ "$rc" -lt 128 ] || fail "killed by a signal (a crash)"
if [ "$stream" = stderr ]; then
  grep -Eq -- "$pattern" "$err" || fail "stderr lacks /$pattern/"
  ! grep -Eqi -- "error|$pattern" "$out" || fail "the error is on stdout"
else
  grep -Eq -- "$pattern" "$out" || fail "stdout lacks /$pattern/"
fi
echo "PASS"
