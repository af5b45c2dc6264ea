#!/usr/bin/env bash
# Installs the C++ package from BUILD_DIR (default build/) into a temporary prefix, builds
# examples/consumer against it with find_package(vkgraph), checks the pkg-config files, and
# runs the consumer on the bundled digits model (lavapipe). Part of tools/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
prefix=$(mktemp -d /tmp/vkgraph-install.XXXXXX)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix/usr" --component devel >/dev/null
cmake --install "$build" --prefix "$prefix/usr" --component tool >/dev/null
test -x "$prefix/usr/bin/vkgraph"
cmake -S examples/consumer -B "$prefix/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$prefix/usr" >/dev/null
cmake --build "$prefix/consumer" >/dev/null
export VK_DRIVER_FILES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json LP_NUM_THREADS=2 VK_LOADER_DEBUG=none
out=$("$prefix/consumer/digits" models/digits.onnx models/digits_holdout_input.npy \
      models/digits_holdout_labels.npy)
echo "$out"
grep -Eq "accuracy: (9[5-9]|100)/100" <<<"$out"
# pkg-config: the same program, compiled and linked from the .pc files alone.
PKG_CONFIG_PATH="$prefix/usr/lib/pkgconfig:$prefix/usr/lib/x86_64-linux-gnu/pkgconfig" \
  pkg-config --exists vkgraph-onnx
flags=$(PKG_CONFIG_PATH="$prefix/usr/lib/pkgconfig:$prefix/usr/lib/x86_64-linux-gnu/pkgconfig" \
  pkg-config --cflags --libs vkgraph-onnx)
# shellcheck disable=SC2086  # flags are words
c++ -std=c++20 -O1 examples/consumer/digits.cpp -o "$prefix/digits_pc" $flags
"$prefix/digits_pc" models/digits.onnx models/digits_holdout_input.npy \
  models/digits_holdout_labels.npy | grep -Eq "accuracy: (9[5-9]|100)/100"
echo "installed package: find_package(vkgraph) and pkg-config consumers OK"
