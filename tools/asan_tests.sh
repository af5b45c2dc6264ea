#!/usr/bin/env bash
# Builds vkgraph with AddressSanitizer + UndefinedBehaviorSanitizer (-DVKGRAPH_SANITIZE=ON) into
# its own build directory and runs ctest there with leak detection.
#
# The Khronos validation layer and lavapipe (with its LLVM JIT) are not instrumented and leak on
# their own, so validation is off (VKGRAPH_VALIDATION=0; tests that need it skip) and
# tools/lsan.supp drops leaks whose stack passes through the loader, the driver or the layer.
# Whatever leak remains was allocated by the project's own code.
#
# Usage: tools/asan_tests.sh [ctest arguments...]   e.g. -R '^Graph' or -E onnx_conformance
# ASAN_BUILD_DIR overrides the build directory (default: build-asan).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build=${ASAN_BUILD_DIR:-build-asan}

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVKGRAPH_SANITIZE=ON >/dev/null
cmake --build "$build"

export VKGRAPH_VALIDATION=0
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1
export LSAN_OPTIONS=suppressions=$root/tools/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir "$build" --output-on-failure -j2 --timeout 1800 "$@"
