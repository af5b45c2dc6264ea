#!/usr/bin/env bash
# Builds (if needed) and runs the full test suite. GPU tests run on lavapipe (Mesa's CPU
# Vulkan driver) under the Khronos validation layer with synchronization validation.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f build/build.ninja ] || cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build
ctest --test-dir build --output-on-failure -j2 --timeout 900
