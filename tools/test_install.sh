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
"$prefix/consumer/graph"  # vkgraph::vkgraph, the core alone
# pkg-config: the same program, compiled and linked from the .pc files alone.
PKG_CONFIG_PATH="$prefix/usr/lib/pkgconfig:$prefix/usr/lib/x86_64-linux-gnu/pkgconfig" \
  pkg-config --exists vkgraph-onnx
flags=$(PKG_CONFIG_PATH="$prefix/usr/lib/pkgconfig:$prefix/usr/lib/x86_64-linux-gnu/pkgconfig" \
  pkg-config --cflags --libs vkgraph-onnx)
# shellcheck disable=SC2086  # flags are words
c++ -std=c++20 -O1 examples/consumer/digits.cpp -o "$prefix/digits_pc" $flags
"$prefix/digits_pc" models/digits.onnx models/digits_holdout_input.npy \
  models/digits_holdout_labels.npy | grep -Eq "accuracy: (9[5-9]|100)/100"
flags=$(PKG_CONFIG_PATH="$prefix/usr/lib/pkgconfig:$prefix/usr/lib/x86_64-linux-gnu/pkgconfig" \
  pkg-config --cflags --libs vkgraph)
# shellcheck disable=SC2086
c++ -std=c++20 -O1 examples/consumer/graph.cpp -o "$prefix/graph_pc" $flags
"$prefix/graph_pc" >/dev/null
echo "installed package: find_package(vkgraph) and pkg-config consumers OK"

# The Python package, as tools/setup.sh installs it (component python, the build's prefix),
# here under a DESTDIR so that the system is left alone: it imports and classifies the digits
# from outside the source tree, its destination is on /usr/bin/python3's own sys.path in an
# empty environment (so `import vkgraph` needs no PYTHONPATH), and every installed file lies in
# that one folder (so the README's uninstall, removing it, is complete).
if compgen -G "$build/python/vkgraph/_vkgraph*.so" >/dev/null; then
  site=$(sed -n 's/^VKGRAPH_PYTHON_INSTALL_DIR:STRING=//p' "$build/CMakeCache.txt")
  install_prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
  DESTDIR="$prefix/root" cmake --install "$build" --component python >/dev/null
  package="$install_prefix/$site/vkgraph"
  repo=$PWD
  (cd /tmp && env -i VK_DRIVER_FILES="$VK_DRIVER_FILES" LP_NUM_THREADS=2 /usr/bin/python3 -c "
import sys
assert '$install_prefix/$site' in sys.path, sys.path
sys.path.insert(0, '$prefix/root$install_prefix/$site')  # ahead of an installed one
import numpy as np, vkgraph
assert vkgraph.__file__.startswith('$prefix/root$package/'), vkgraph.__file__
root = '$repo/models/'
session = vkgraph.InferenceSession(root + 'digits.onnx')
logits = session.run(None, {'input': np.load(root + 'digits_holdout_input.npy')})[0]
correct = int((logits.argmax(1) == np.load(root + 'digits_holdout_labels.npy')).sum())
assert correct >= 95, correct
print('installed Python package', vkgraph.__version__, 'from', vkgraph.__file__, ':', correct, '/ 100')
")
  while read -r file; do
    case "$file" in "$package"/* | "") ;; *) echo "installed outside $package: $file"; exit 1 ;; esac
  done < <(cat "$build/install_manifest_python.txt"; echo)
fi
