#!/usr/bin/env bash
# Per-node GPU profiles of a finished modelset.py run's exports, fp32 mode beside fp16 mode:
# where fp16 mode loses time, node by node. Runs on the H200 after setup_vulkan
# (tools/h200/vulkan_env.sh), from the repo root:
#   tools/h200/profile_nodes.sh MODELSET_OUT OUT_FILE [MODEL ...]
# MODELSET_OUT holds modelset.json (export paths, input files); each MODEL's dynamo export
# (else its legacy one) runs `vkgraph bench --top 400` in fp32 and --fp16 mode, appended to
# OUT_FILE. EXPORTERS="legacy" (or "dynamo legacy": each) and MODES="--fp16" (or "fp32")
# narrow or widen that; VKGRAPH_TUNE passes through.
set -u
ms=$1 out=$2
shift 2
vk=${VK:-./build-h200/vkgraph}
exporters=${EXPORTERS:-first}
modes=${MODES:-fp32 --fp16}
for model in "$@"; do for exporter in $exporters; do
  # The export and its --input arguments, from modelset.json.
  args=$(python3 - "$ms" "$model" "$exporter" <<'EOF'
import json, os, sys
run = json.load(open(os.path.join(sys.argv[1], "modelset.json")))
rec, work = run["models"].get(sys.argv[2]) or {}, run["config"]["dir"]
for ex in ("dynamo", "legacy") if sys.argv[3] == "first" else (sys.argv[3],):
    entry = (rec.get("exports") or {}).get(ex) or {}
    if "onnx" in entry:
        files, names = rec["input_files"], list(rec["input_files"])
        feed = []
        for i, g in enumerate(entry["inputs"]):
            feed += ["--input", f"{g}={files.get(g) or files[names[min(i, len(names) - 1)]]}"]
        print(" ".join([os.path.join(work, entry["onnx"])] + feed))
        break
EOF
)
  if [ -z "$args" ]; then
    echo "## $model ($exporter): not exported" >>"$out"
    continue
  fi
  for mode in $modes; do
    echo "## $model $mode $args" >>"$out"
    [ "$mode" = fp32 ] && mode=
    # shellcheck disable=SC2086  # args and mode are word lists on purpose
    LD_LIBRARY_PATH="$PWD/.devlibs" timeout -k 5 90 "$vk" bench $args $mode --runs 30 --top 400 \
      >>"$out" 2>&1 || echo "(status $?)" >>"$out"
  done
done; done
