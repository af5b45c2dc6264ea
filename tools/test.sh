#!/usr/bin/env bash
# Builds (if needed) and runs the full test suite. GPU tests run on lavapipe (Mesa's CPU
# Vulkan driver) under the Khronos validation layer with synchronization validation.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f build/build.ninja ] || cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build
ctest --test-dir build --output-on-failure -j2 --timeout 900
# The Python package from the build tree (python/tests/conftest.py points there), on lavapipe
# under validation: its API tests and ONNX's own backend test runner.
VK_DRIVER_FILES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json LP_NUM_THREADS=2 VK_LOADER_DEBUG=none \
  /usr/bin/python3 -m pytest -q -p no:cacheprovider python/tests
# The installed C++ package: find_package(vkgraph) and pkg-config consumers.
bash tools/test_install.sh build
# Short libFuzzer runs of every fuzz target (fuzz/README.md); a finding fails the run.
bash tools/fuzz_ci.sh
