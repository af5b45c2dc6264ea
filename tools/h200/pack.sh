#!/usr/bin/env bash
# Runs HERE (Debian 12), before a device call: builds a release vkgraph into build-h200/ and
# copies the shared libraries the H200 image lacks (Debian's libonnx, libonnx_proto and
# libprotobuf) into .devlibs/, so a device `run` can carry them. See tools/h200/run_all.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."

cmake -S . -B build-h200 -G Ninja -DCMAKE_BUILD_TYPE=Release -DVKGRAPH_BUILD_TESTS=ON >/dev/null
# The GPU suites too: run_all.sh runs them on the device under validation.
cmake --build build-h200 --target vkgraph_cli test_gpu test_gpu_onnx

# The device machine gets the working tree without .git; run_all.sh reads the commit here.
# "-dirty" when tracked files differ from it, since the binary was built from the working tree.
commit=$(git rev-parse --short HEAD)
git diff --quiet HEAD -- || commit="$commit-dirty"
echo "$commit" >build-h200/COMMIT
echo "commit: $commit"

libdir=/usr/lib/x86_64-linux-gnu
mkdir -p .devlibs
for soname in libonnx.so.1 libonnx_proto.so.1 libprotobuf.so.32; do
  real=$(readlink -f "$libdir/$soname")
  [ -f "$real" ] || { echo "pack.sh: $libdir/$soname not found" >&2; exit 1; }
  # Copy the real file under its soname: the loader looks the soname up, and a carried
  # symlink would point at nothing on the device.
  cp -f "$real" ".devlibs/$soname"
done

exclude=.git/info/exclude
for pattern in /build-h200/ /.devlibs/; do
  grep -qxF "$pattern" "$exclude" 2>/dev/null || echo "$pattern" >>"$exclude"
done

# Anything the binary needs beyond the carried libs, libvulkan (from .gl) and the C/C++
# runtime would be missing on the device.
echo "shared libraries of build-h200/vkgraph:"
unexpected=$(ldd build-h200/vkgraph | awk '{print $1}' |
  grep -vE '^(linux-vdso|/lib64/ld-linux|libc\.so|libm\.so|libstdc\+\+|libgcc_s|libz\.so|libvulkan\.so|libonnx\.so|libonnx_proto\.so|libprotobuf\.so)' || true)
ldd build-h200/vkgraph | sed 's/^/  /'
if [ -n "$unexpected" ]; then
  echo "pack.sh: WARNING: not provided on the device: $unexpected" >&2
fi

# The GPU test suites, stripped and xz-compressed (their embedded SPIR-V compresses ~5x): as
# built they no longer fit the 64 MiB a device run carries beside the CLI. vulkan_env.sh's
# setup_vulkan unpacks build-h200/tests.tar.xz into build-h200/tests/ on the device.
stripped=$(mktemp -d)
mkdir -p "$stripped/build-h200/tests"
for t in test_gpu test_gpu_onnx; do
  strip -o "$stripped/build-h200/tests/$t" "build-h200/tests/$t"
done
tar -C "$stripped" -cJf build-h200/tests.tar.xz build-h200/tests
rm -rf "$stripped"

echo "sizes (a device run carries at most 64 MiB in all; carry build-h200/vkgraph,"
echo "build-h200/COMMIT and build-h200/tests.tar.xz rather than build-h200):"
du -sh build-h200/vkgraph build-h200/tests.tar.xz build-h200 .devlibs .gl .vl 2>/dev/null |
  sed 's/^/  /'
