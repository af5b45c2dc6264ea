#!/usr/bin/env bash
# The LayerNorm row kernels on the device, side by side (docs/DESIGN.md, section 6): the
# subgroup-per-row kernel (norm_subgroup.comp, the default up to 32 x subgroup size columns)
# with 1, 2 and 4 rows a workgroup, and the workgroup-per-row kernel (norm.comp,
# norm.subgroup=0), at the shapes of the model set's transformers (197 x 768 vit_b_16, 128 x 768
# bert and gpt2, 128 x 1024 the Llama-style decoder) and a long-context one, fp16 and fp32.
# GPU time per dispatch from timestamps (`vkgraph bench-op layernorm`), one markdown table.
# Model-level A/B: tools/h200/knob_ab.py ... --tunes "" norm.subgroup=0.
# Usage, from the repository root after `source tools/h200/vulkan_env.sh && setup_vulkan`:
#   tools/h200/norm_sweep.sh [VKGRAPH_CLI]          (default ./build-h200/vkgraph)
set -u
vk=${1:-./build-h200/vkgraph}
export LD_LIBRARY_PATH="$PWD/.devlibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "| rows x cols | dtype | VKGRAPH_TUNE | GPU p50 us | GB/s |"
echo "| --- | --- | --- | --- | --- |"
for shape in "197 768" "128 768" "128 1024" "4096 1024"; do
  for dtype in fp16 fp32; do
    flag=""
    [ "$dtype" = fp16 ] && flag=--fp16
    for knobs in "" norm.subgroup_rows=1 norm.subgroup_rows=4 norm.subgroup=0; do
      # shellcheck disable=SC2086  # shape and flag are word lists on purpose
      out=$(VKGRAPH_TUNE=$knobs timeout -k 5 30 "$vk" bench-op layernorm $shape $flag --runs 50 2>&1)
      ms=$(sed -nE 's/.*GPU p50 ([0-9.]+) ms.*/\1/p' <<<"$out" | head -1)
      gbs=$(sed -nE 's/.* ([0-9.]+) GB\/s \(best.*/\1/p' <<<"$out" | head -1)
      us=$(awk -v m="${ms:-0}" 'BEGIN { printf "%.1f", m * 1000 }')
      [ -n "$ms" ] || { us=error; gbs=$(tail -1 <<<"$out" | cut -c1-80); }
      echo "| ${shape/ / x } | $dtype | ${knobs:-defaults} | $us | $gbs |"
    done
  done
done
