# shellcheck shell=bash
# Sourced by tools/h200/run_all.sh and by the device commands of other tools/h200 scripts
# (docs/notes/bench-4-h200.md): setup_vulkan installs, on the H200 device machine, the Vulkan
# loader carried in .gl/*.deb into / and the validation layer carried in .vl/*.deb into
# /tmp/vl, finds the ICD (exporting VK_DRIVER_FILES when it is outside the standard folders),
# unpacks build-h200/tests.tar.xz (pack.sh) where carried, and checks that $VK (default
# ./build-h200/vkgraph) is there. Run from the repo root.
# Uses the caller's log() when it has one.
type log >/dev/null 2>&1 || log() { echo "[setup] $*"; }
: "${VK:=./build-h200/vkgraph}"

setup_vulkan() {
  local f icds
  for f in .gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
  icds=$(ls /etc/xdg/vulkan/icd.d/*.json /etc/vulkan/icd.d/*.json \
    /usr/local/share/vulkan/icd.d/*.json /usr/share/vulkan/icd.d/*.json 2>/dev/null)
  if [ -n "$icds" ]; then
    log "Vulkan ICDs: $(echo "$icds" | tr '\n' ' ')"
  elif [ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
    export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
    log "no ICD in the standard folders: VK_DRIVER_FILES=$VK_DRIVER_FILES"
  else
    log "WARNING: no Vulkan ICD found"
  fi
  mkdir -p /tmp/vl
  for f in .vl/*.deb; do dpkg -x "$f" /tmp/vl; done
  ldconfig -p | grep -q libvulkan.so.1 || return 1
  # The test suites as pack.sh compresses them, where they were carried that way.
  if [ -f build-h200/tests.tar.xz ] && [ ! -f build-h200/tests/test_gpu_onnx ]; then
    tar -xJf build-h200/tests.tar.xz || log "WARNING: build-h200/tests.tar.xz did not unpack"
  fi
  [ -f "$VK" ] && chmod +x "$VK"
  [ -x "$VK" ] || { log "ERROR: $VK missing (run tools/h200/pack.sh here and carry build-h200/vkgraph)"; return 1; }
  [ -f .devlibs/libprotobuf.so.32 ] || log "WARNING: .devlibs/libprotobuf.so.32 missing"
}
