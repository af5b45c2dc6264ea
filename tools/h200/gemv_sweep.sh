#!/usr/bin/env bash
# The 4-bit decode GEMV (MatMulNBits, M = 1) on the device: the streaming ceiling (`add` over
# 768 MB), the dispatch floor (`add 1024`), fixed cost against size, then the wide kernel's
# knobs (docs/notes/gemv4-6.md) side by side, printed as one markdown table of GB/s over the
# packed weights, each
# `bench-op nbits ... --copies C` (C independent matmuls, each its own weights, past L2).
# Usage, from the repository root after `source tools/h200/vulkan_env.sh && setup_vulkan`:
#   tools/h200/gemv_sweep.sh [VKGRAPH_CLI]          (default ./build-h200/vkgraph)
set -u
vk=${1:-./build-h200/vkgraph}
export LD_LIBRARY_PATH="$PWD/.devlibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# One bench-op line reduced to "p50 ms | GB/s | check": the CLI prints "GPU p50 X ms (...) per
# copy, ..., Y GB/s (best Z)" and, with --check, "check: ... ok".
row() {
  local knobs=$1
  shift
  local out
  out=$(VKGRAPH_TUNE=$knobs timeout -k 5 60 "$vk" bench-op "$@" 2>&1)
  local p50 gbs check
  p50=$(sed -nE 's/.*GPU p50 ([0-9.]+) ms.*/\1/p' <<<"$out" | head -1)
  gbs=$(sed -nE 's/.* ([0-9.]+) GB\/s \(best.*/\1/p' <<<"$out" | head -1)
  check=$(grep -oE 'check: .*(ok|FAILED.*)$' <<<"$out" | sed -E 's/.* (ok|FAILED.*)$/\1/' | head -1)
  [ -n "$p50" ] || { p50="error"; gbs=$(tail -1 <<<"$out" | cut -c1-80); }
  echo "| $* | ${knobs:-defaults} | ${p50} | ${gbs} | ${check:--} |"
}

echo "| bench-op arguments | VKGRAPH_TUNE | GPU p50 ms (per copy) | GB/s | check |"
echo "| --- | --- | --- | --- | --- |"
row "" add 67108864 --runs 30
row "" add 1024 --runs 30
# A dispatch's fixed cost against its streaming rate (docs/notes/gemv4-6.md, session 24): the
# copy at the GEMV's byte counts (~8 and ~32 MB read), and the GEMV where 5 us is noise.
row "" add 2097152 --runs 30
row "" add 8388608 --runs 30
row "" nbits 1 65536 4096 4 32 --fp16 --runs 20
row "" nbits 1 65536 4096 4 32 --fp16 --runs 20 --accuracy-level 4
row "" nbits 1 16384 16384 4 32 --fp16 --runs 20
S="nbits 1 4096 4096 4 32 --fp16 --runs 40"
for c in 1 8 32; do row "" $S --copies $c --check; done
for r in 1 2 4 8 16; do
  for t in 32,0 32,1 64,0 64,1 128,0; do
    row "nbits.wide_rows=$r,nbits.wide_threads=${t%,*},nbits.wide_prefetch=${t#*,}" $S --copies 32
  done
done
for k in "" nbits.half_math=1 nbits.half_math=1,nbits.wide_rows=4,nbits.wide_threads=32,nbits.wide_prefetch=1 \
         nbits.wide_rows=4,nbits.wide_threads=32,nbits.wide_prefetch=1; do
  row "$k" $S --copies 32 --check
  row "$k" nbits 1 4096 4096 4 32 --runs 40 --copies 32 --check     # fp32 activations
  row "$k" nbits 1 14336 4096 4 32 --fp16 --runs 40 --copies 8 --check
  row "$k" nbits 1 4096 14336 4 32 --fp16 --runs 40 --copies 8 --check
done
row "" nbits 1 4096 4096 8 32 --fp16 --runs 40 --copies 32 --check
