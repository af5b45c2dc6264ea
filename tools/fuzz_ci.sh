#!/usr/bin/env bash
# Short libFuzzer runs of every fuzz target (fuzz/README.md), as CI runs them after the suite.
# Builds build-fuzz/ (or $VKGRAPH_FUZZ_BUILD) with clang, ASan and UBSan: only the fuzz targets and the libraries they
# link, embedding the shaders that the main build (build/, built first) compiled. Any finding
# (a crash, a leak, a timeout, a wrong answer from fuzz_feeds) fails the script; the input that
# caused it is saved in build-fuzz/findings/. A fixed seed makes a run repeatable: the same code
# and corpus mutate the same way, so a finding here reproduces and the gate does not flicker.
# Longer runs with fresh seeds belong elsewhere (docs/bench/: the H200 runs of 10M inputs).
# Usage: tools/fuzz_ci.sh [SECONDS_PER_TARGET]   (default 20; four targets)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
build=${VKGRAPH_FUZZ_BUILD:-build-fuzz}
targets="fuzz_load fuzz_npy fuzz_pb fuzz_feeds"
[ -f build/shaders/shader_registry.cpp ] || { echo "build the main build (build/) first" >&2; exit 1; }
if [ ! -f "$build/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DVKGRAPH_FUZZ=ON \
    -DVKGRAPH_BUILD_TESTS=OFF -DVKGRAPH_SPIRV_FROM="$PWD/build/shaders" >/dev/null
fi
# shellcheck disable=SC2086
cmake --build "$build" --target $targets
rm -rf "$build/corpus"
fuzz/make_corpus.sh "$build/corpus"
mkdir -p "$build/findings"
export VK_DRIVER_FILES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json LP_NUM_THREADS=2
export VK_LOADER_DEBUG=none VKGRAPH_VALIDATION=0
export LSAN_OPTIONS=suppressions=$PWD/tools/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
failed=""
for target in $targets; do
  echo "== $target, ${seconds} s"
  if ! "$build/fuzz/$target" "$build/corpus/${target#fuzz_}" -max_total_time="$seconds" -seed=1 \
      -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$build/findings/$target-" 2>"$build/findings/$target.log"; then
    tail -n 60 "$build/findings/$target.log"
    failed="$failed $target"
  else
    grep -E "^(#[0-9]+[[:space:]]+DONE|stat::number_of_executed_units|stat::average_exec_per_sec)" \
      "$build/findings/$target.log" || true
  fi
done
if [ -n "$failed" ]; then
  echo "fuzzing found a problem in:$failed (inputs in $build/findings/)" >&2
  exit 1
fi
