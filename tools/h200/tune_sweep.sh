#!/usr/bin/env bash
# Runs on the H200 after run_all.sh (which installs the Vulkan loader and exports the zoo to
# /tmp/zoo): one model under several VKGRAPH_TUNE settings, each `vkgraph run --repeat N`,
# printing the setting and the timing lines, so a kernel choice is measured side by side in
# one call. Usage: tools/h200/tune_sweep.sh MODEL "FLAGS|KNOBS" ...  (FLAGS e.g. --fp16; KNOBS in
# VKGRAPH_TUNE's format; either may be empty: "|attention.br=16", "--fp16|").
set -u
m=$1
shift
zoo=${ZOO:-/tmp/zoo}
vk=./build-h200/vkgraph
for setting in "$@"; do
  flags=${setting%%|*} knobs=${setting#*|}
  echo "# $m flags='$flags' VKGRAPH_TUNE='$knobs'"
  # shellcheck disable=SC2086  # flags is a word list on purpose
  VKGRAPH_TUNE=$knobs LD_LIBRARY_PATH="$PWD/.devlibs" timeout -k 5 60 "$vk" run "$zoo/$m.onnx" $flags \
    --input "input=$zoo/${m}_input.npy" --repeat "${REPEAT:-200}" 2>&1 | grep -iE "p50|error" || true
done
