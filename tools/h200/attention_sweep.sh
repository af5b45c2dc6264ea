#!/usr/bin/env bash
# Runs on the H200 after run_all.sh (which installs the Vulkan loader): the fused attention
# kernels side by side over sequence lengths and head dims, batch 1, 12 heads: the portable
# kernel in fp32 and fp16, and the cooperative-matrix variant in fp16. GPU time per dispatch
# from timestamps (`vkgraph bench-op attention`). Decides where each kernel is the default.
set -u
vk=./build-h200/vkgraph
for d in 64 128; do
  for s in 128 512 2048; do
    for setting in "|attention.coopmat=0" "--fp16|attention.coopmat=0" "--fp16|attention.coopmat=1"; do
      flags=${setting%%|*} knobs=${setting#*|}
      echo -n "[$knobs] "
      # shellcheck disable=SC2086  # flags is a word list on purpose
      VKGRAPH_TUNE=$knobs LD_LIBRARY_PATH="$PWD/.devlibs" timeout -k 5 30 "$vk" bench-op attention 1 12 "$s" "$d" \
        $flags --runs 20 2>&1 | tail -1
    done
  done
done
