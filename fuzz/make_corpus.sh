#!/usr/bin/env bash
# Seed corpora for the fuzz targets, one folder each (libFuzzer reads corpus folders, and
# writes new inputs into the first one it is given):
#   OUT_DIR/load   every conformance model plus the bundled digits model
#   OUT_DIR/npy    .npy files of each dtype (tensor_seeds.py)
#   OUT_DIR/pb     TensorProtos of each element type, conformance inputs (tensor_seeds.py)
#   OUT_DIR/feeds  feeds for fuzz_feeds in its input layout (feeds_seeds.py)
# Usage: fuzz/make_corpus.sh OUT_DIR [TESTDATA_DIR]
set -euo pipefail
out=${1:?usage: $0 OUT_DIR [TESTDATA_DIR]}
data=${2:-/usr/share/libonnx-testdata/data}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out/load"
for model in "$data"/{node,pytorch-converted,pytorch-operator,simple}/*/model.onnx; do
  case_dir=$(dirname "$model")
  cp "$model" "$out/load/$(basename "$(dirname "$case_dir")")_$(basename "$case_dir").onnx"
done
cp "$here/../models/digits.onnx" "$out/load/"
/usr/bin/python3 "$here/tensor_seeds.py" "$out/npy" "$out/pb" "$data"
/usr/bin/python3 "$here/feeds_seeds.py" "$out/feeds"
for target in load npy pb feeds; do
  echo "$(ls "$out/$target" | wc -l) seeds in $out/$target"
done
