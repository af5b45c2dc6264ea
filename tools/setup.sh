#!/usr/bin/env bash
# Installs every build and test dependency (Debian 12, apt only) and builds vkgraph into build/.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  build-essential cmake ninja-build pkg-config \
  libvulkan-dev mesa-vulkan-drivers vulkan-validationlayers glslc spirv-tools \
  libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata \
  libgtest-dev libgmock-dev libcli11-dev clang libclang-rt-14-dev \
  pybind11-dev python3-dev python3-numpy python3-pytest python3-onnx >/dev/null
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build
# The Python package into /usr/bin/python3's site-packages (/usr/local/lib/python3.11/
# dist-packages), so `import vkgraph` works in any shell. Uninstall: remove that folder's
# vkgraph/ (tools/test_install.sh checks that every installed file lies in it).
$SUDO cmake --install build --component python >/dev/null
