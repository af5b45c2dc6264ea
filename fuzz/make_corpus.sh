#!/usr/bin/env bash
# Seed corpus for fuzz_load: every conformance model plus the bundled digits model, one file
# each (libFuzzer reads corpus folders, and writes new inputs into the first one it is given).
# Usage: fuzz/make_corpus.sh OUT_DIR [TESTDATA_DIR]
set -euo pipefail
out=${1:?usage: $0 OUT_DIR [TESTDATA_DIR]}
data=${2:-/usr/share/libonnx-testdata/data}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
for model in "$data"/{node,pytorch-converted,pytorch-operator,simple}/*/model.onnx; do
  case_dir=$(dirname "$model")
  cp "$model" "$out/$(basename "$(dirname "$case_dir")")_$(basename "$case_dir").onnx"
done
cp "$root/models/digits.onnx" "$out/"
echo "$(ls "$out" | wc -l) seeds in $out"
