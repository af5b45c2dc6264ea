#!/usr/bin/env bash
# The H200 soak (issue 15): 10,000 runs of two models alternating on one device, the batch
# cycling through 1, 2, 4, 3 (a model is opened again at every change, 25 runs per shape),
# every output compared bit for bit with the first run's of that model and shape, device memory
# (vkgraph's allocator) and host RSS sampled every 500 runs. Exit status 0: every output matched
# and device memory stayed flat after the warm-up.
#
# Run from the repo root on the device machine after tools/h200/pack.sh, carrying what
# run_all.sh carries (.gl, .devlibs, build-h200); OUT gets soak.txt. Models default to the zoo's
# resnet18 and mlp (exported here with models/export_zoo.py); pass two paths to soak others.
set -u
: "${OUT:?set OUT to the results folder}"
readonly VK=./build-h200/vkgraph ZOO=/tmp/zoo RUNS=${SOAK_RUNS:-10000}
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
chmod +x "$VK"
a=${1:-$ZOO/resnet18.onnx}
b=${2:-$ZOO/mlp.onnx}
if [ ! -f "$a" ] || [ ! -f "$b" ]; then
  timeout -k 5 300 python3 models/export_zoo.py "$ZOO" --models resnet18,mlp || exit 1
fi
{
  echo "# vkgraph soak $a $b --runs $RUNS ($(date -u +%FT%TZ))"
  nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv 2>&1
} >"$OUT/soak.txt"
LD_LIBRARY_PATH="$PWD/.devlibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  "$VK" soak "$a" "$b" --runs "$RUNS" --sample 500 --shape-every 25 --sizes 1,2,4,3 \
  >>"$OUT/soak.txt" 2>&1
rc=$?
{
  echo "# exit status $rc"
  nvidia-smi --query-gpu=memory.used --format=csv 2>&1
} >>"$OUT/soak.txt"
cat "$OUT/soak.txt"
exit "$rc"
