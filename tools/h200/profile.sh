#!/usr/bin/env bash
# Per-node GPU profiles on the H200, for choosing what to fuse or retile next: `vkgraph bench`
# of zoo models (fp32 and --fp16), optionally the int8 ResNet-50 of quant_models.py, and the
# large LSTM/GRU sequence models checked against PyTorch. One file per section under $OUT
# (the device tool returns at most 8 files).
#
#   PROFILE_MODELS="transformer resnet18" PROFILE_QUANT=1 PROFILE_RNN=1 tools/h200/profile.sh
#
# Run from the repo root on the device machine after tools/h200/pack.sh, carrying what
# run_all.sh carries (.gl, .devlibs, build-h200/vkgraph).
set -u
: "${OUT:?set OUT to the results folder}"
readonly VK=./build-h200/vkgraph ZOO=/tmp/zoo
readonly MODELS=${PROFILE_MODELS:-transformer resnet18}
export LD_LIBRARY_PATH="$PWD/.devlibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
chmod +x "$VK"

bench() {  # bench FILE MODEL [flags]: the per-node table of every node, appended to FILE
  local file=$1 model=$2
  shift 2
  echo "# vkgraph bench $model $*" >>"$file"
  timeout -k 5 120 "$VK" bench "$model" --runs 50 --top 400 "$@" >>"$file" 2>&1
  echo "# exit status $?" >>"$file"
}

# shellcheck disable=SC2086  # MODELS is a word list
timeout -k 5 200 python3 models/export_zoo.py "$ZOO" --models "$(echo $MODELS | tr ' ' ,)" \
  >"$OUT/export.txt" 2>&1
for m in $MODELS; do
  bench "$OUT/prof_$m.txt" "$ZOO/$m.onnx"
  bench "$OUT/prof_$m.txt" "$ZOO/$m.onnx" --fp16
done

if [ "${PROFILE_QUANT:-0}" = 1 ]; then
  timeout -k 5 240 python3 tools/h200/quant_models.py make /tmp/q --models resnet50 --inputs 4 \
    >>"$OUT/export.txt" 2>&1
  bench "$OUT/prof_quant.txt" /tmp/q/resnet50_int8.onnx --shape input=1,3,224,224
  bench "$OUT/prof_quant.txt" /tmp/q/resnet50_float.onnx --shape input=1,3,224,224 --fp16
  bench "$OUT/prof_quant.txt" /tmp/q/resnet50_float.onnx --shape input=1,3,224,224
fi

if [ "${PROFILE_RNN:-0}" = 1 ]; then
  file=$OUT/recurrent.txt
  timeout -k 5 120 python3 tools/models/make_recurrent.py --large --out /tmp/rnn >"$file" 2>&1
  for m in lstm_seq gru_seq; do
    timeout -k 5 60 "$VK" run /tmp/rnn/$m.onnx --input x=/tmp/rnn/${m}_input.npy \
      --output-dir /tmp/rnn/out_$m >>"$file" 2>&1
    python3 - "$m" >>"$file" 2>&1 <<'EOF'
import glob, sys
import numpy as np
m = sys.argv[1]
ref = np.load(f"/tmp/rnn/{m}_output.npy")
outs = sorted(glob.glob(f"/tmp/rnn/out_{m}/*.npy"))
got = np.load(outs[0])
err = np.abs(got.astype(np.float64) - ref).max()
print(f"{m}: output {list(got.shape)} vs PyTorch {list(ref.shape)}: max |err| {err:.3g}, "
      f"max |ref| {np.abs(ref).max():.3g}: {'PASS' if err <= 1e-3 * np.abs(ref).max() else 'FAIL'}")
EOF
    bench "$file" /tmp/rnn/$m.onnx
  done
fi
ls -l "$OUT"
