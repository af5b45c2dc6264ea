#!/usr/bin/env bash
# The single command for the H200 device machine. Run from the repo root with OUT set, after
# tools/h200/pack.sh has built build-h200/vkgraph, written build-h200/COMMIT and filled
# .devlibs/ here; carry .gl, .vl, build-h200/vkgraph, build-h200/COMMIT, .devlibs and, for the
# GPU test suites, build-h200/tests.tar.xz (setup unpacks it; the whole build-h200 no longer
# fits the 64 MiB a run carries). Back here, tools/h200/append_bench.sh adds the fetched
# report.md to BENCHMARKS.md and docs/bench/.
#
# Stages, each logged and timed, none stopping the rest; every timeout is capped so the whole
# script ends within H200_DEADLINE_S (default 420 s):
#   setup     Vulkan loader from .gl/*.deb into /, validation layer from .vl into /tmp/vl
#   export    models/export_zoo.py -> /tmp/zoo
#   info      vkgraph info (+ nvidia-smi, ldd)                       -> $OUT/info.txt
#   vk_MODEL  vkgraph run MODEL --repeat 200                          -> $OUT/vk_MODEL.txt
#   vk16_MODEL the same with --fp16 (float16 storage, float32 arithmetic), outputs in
#             /tmp/fp16/out_MODEL               -> appended to vk_MODEL.txt after FP16_MARK
#   compare   vkgraph outputs vs saved PyTorch outputs                -> /tmp/h200/compare.json
#   compare_fp16  the same for the --fp16 outputs                 -> /tmp/h200/compare_fp16.json
#   peers     tools/h200/peers.py (PyTorch CUDA fp32 + fp16, ORT CPU, ceilings) -> $OUT/peers.json
#   bench_op  hook for `vkgraph bench-op`, when the binary has it    -> $OUT/info.txt
#             (its `vkgraph bench` runs find the pipeline disk cache warm that vk_MODEL left)
#   val_MODEL vkgraph run under validation + sync validation         -> appended to vk_MODEL.txt
#   val16_MODEL the same with --fp16 (--repeat 3)                    -> appended to vk_MODEL.txt
#   report    tools/h200/report.py: a dated BENCHMARKS.md section (run id, device, driver,
#             commit, ratios, microbenchmarks), then the full report -> $OUT/report.md
# $OUT ends with 8 files (the device tool's limit): info.txt, peers.json, vk_*.txt (4),
# report.md, run_all.log.
set -u

: "${OUT:?set OUT to the results folder}"
readonly WORK=/tmp/h200 ZOO=/tmp/zoo VK=./build-h200/vkgraph
readonly DEADLINE=${H200_DEADLINE_S:-420} REPEAT=${H200_REPEAT:-200}
# The device gets a copy of the working tree without .git: pack.sh records the commit.
COMMIT=$(cat build-h200/COMMIT 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)
readonly COMMIT
# Names this run in BENCHMARKS.md, so append_bench.sh never adds it twice.
RUN_ID="$(date -u +%Y-%m-%dT%H%M%SZ)-h200-$COMMIT"
readonly RUN_ID
readonly MODELS=(resnet18 mobilenet_v2 transformer mlp)
# Starts the --fp16 section of vk_MODEL.txt; tools/h200/report.py splits on it (FP16_MARK).
readonly FP16_MARK="# --- fp16 run (--fp16) ---"
export PYTHONUNBUFFERED=1
# Only vkgraph gets the carried Debian libonnx_proto/libprotobuf, so no Python package can
# pick them up by accident.
VK_LD="$PWD/.devlibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
T_START=$SECONDS

log() { echo "[run_all +$((SECONDS - T_START))s] $*"; }
# setup_vulkan: the Vulkan loader and validation layer (shared with tools/h200/modelset.py's
# device command, docs/notes/bench-4-h200.md).
# shellcheck source=tools/h200/vulkan_env.sh
source "$(dirname "${BASH_SOURCE[0]}")/vulkan_env.sh"

# limit MAX [RESERVE]: a timeout of at most MAX seconds that still leaves RESERVE seconds
# before the deadline; at least 1, since `timeout 0` would mean no limit at all.
limit() {
  local max=$1 reserve=${2:-0} left
  left=$((DEADLINE - (SECONDS - T_START) - reserve))
  ((left < 1)) && left=1
  echo $((max < left ? max : left))
}

# record NAME RC T0: one line of stages.tsv and of the log.
record() {
  local secs=$((SECONDS - $3))
  printf '%s\t%s\t%s\n' "$1" "$2" "$secs" >>"$WORK/stages.tsv"
  if [ "$2" = 0 ]; then log "$1: ok (${secs}s)"; else log "$1: FAILED, status $2 (${secs}s)"; fi
}

# timed NAME MAX RESERVE CMD...: CMD under a capped timeout, recorded; skipped when no time is left.
timed() {
  local name=$1 lim t0=$SECONDS rc
  lim=$(limit "$2" "$3")
  shift 3
  if ((lim < 5)); then
    record "$name" skipped-no-time "$t0"
    return 1
  fi
  log "$name: start (limit ${lim}s)"
  timeout -k 5 "$lim" "$@"
  rc=$?
  record "$name" "$rc" "$t0"
  return "$rc"
}

write_info() {
  {
    echo "# vkgraph info"
    LD_LIBRARY_PATH=$VK_LD timeout -k 5 "$(limit 60)" "$VK" info 2>&1
    echo "# exit status $?"
    echo "# date $(date -u +%FT%TZ)"
    echo "# commit $COMMIT"
    echo "# run-id $RUN_ID"
    echo "# VK_DRIVER_FILES=${VK_DRIVER_FILES:-unset}"
    echo "# nvidia-smi"
    nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,clocks.sm,clocks.max.sm,power.draw,temperature.gpu \
      --format=csv 2>&1
    echo "# ldd $VK"
    LD_LIBRARY_PATH=$VK_LD ldd "$VK" 2>&1
  } >"$OUT/info.txt"
  grep -q '^# exit status 0$' "$OUT/info.txt"
}

# Graph input names (not initializers) of each exported model, one "MODEL NAME" per line.
input_names() {
  python3 - "$ZOO" "${MODELS[@]}" <<'EOF'
import os, sys
import onnx
zoo = sys.argv[1]
for m in sys.argv[2:]:
    path = os.path.join(zoo, m + ".onnx")
    if os.path.exists(path):
        g = onnx.load(path, load_external_data=False).graph
        inits = {i.name for i in g.initializer}
        print(m, [i.name for i in g.input if i.name not in inits][0])
EOF
}

# run_vk MODEL INPUT_NAME [fp16]: timed vkgraph run; stdout+stderr and an exit trailer in
# vk_MODEL.txt. With fp16, the same run with --fp16 and its outputs in /tmp/fp16/out_MODEL,
# appended to vk_MODEL.txt after FP16_MARK. Leaves about 200 s for the peers, validation and
# the report.
run_vk() {
  local m=$1 input=$2 mode=${3:-} txt="$OUT/vk_$1.txt" t0=$SECONDS lim rc
  local stage="vk_$m" out_dir="/tmp/out_$m" extra=()
  if [ "$mode" = fp16 ]; then
    stage="vk16_$m" out_dir="/tmp/fp16/out_$m" extra=(--fp16)
    echo "$FP16_MARK" >>"$txt"
  else
    : >"$txt"
  fi
  rm -rf "$out_dir"
  lim=$(limit 90 200)
  if [ ! -f "$ZOO/$m.onnx" ]; then
    echo "vkgraph: error: $ZOO/$m.onnx missing (export failed)" >>"$txt"
    rc=127
  elif ((lim < 5)); then
    echo "vkgraph: error: skipped, no time left" >>"$txt"
    rc=124
  else
    log "$stage: start (limit ${lim}s)"
    LD_LIBRARY_PATH=$VK_LD timeout -k 5 "$lim" "$VK" run "$ZOO/$m.onnx" ${extra[@]+"${extra[@]}"} \
      --input "$input=$ZOO/${m}_input.npy" --output-dir "$out_dir" --repeat "$REPEAT" >>"$txt" 2>&1
    rc=$?
    ((rc == 124)) && echo "vkgraph: error: timed out after ${lim}s" >>"$txt"
  fi
  echo "# exit status $rc after $((SECONDS - t0)) s" >>"$txt"
  if [ "$mode" = fp16 ]; then
    sed -n "\|^$FP16_MARK\$|,\$p" "$txt" | sed 's/^/    /'
  else
    sed 's/^/    /' "$txt"
  fi
  record "$stage" "$rc" "$t0"
}

# val_vk MODEL INPUT_NAME [fp16]: a short run under the Khronos layer with synchronization
# validation, enabled from the environment so that the layer prints every message (vkgraph's
# own --validation installs a messenger that only counts them). With fp16, the same with
# --fp16 (16-bit storage features, fp16 kernels).
val_vk() {
  local m=$1 input=$2 mode=${3:-} txt="$OUT/vk_$1.txt" t0=$SECONDS lim rc
  local stage="val_$m" flags="--repeat 3" extra=()
  [ "$mode" = fp16 ] && stage="val16_$m" flags="--fp16 --repeat 3" extra=(--fp16)
  [ -f "$ZOO/$m.onnx" ] || return 0
  lim=$(limit 60 25)
  if ((lim < 5)); then
    record "$stage" skipped-no-time "$t0"
    return 0
  fi
  log "$stage: start (limit ${lim}s)"
  echo "# --- validation run (VK_LAYER_KHRONOS_validation + sync validation, $flags) ---" >>"$txt"
  VK_ADD_LAYER_PATH=/tmp/vl/usr/share/vulkan/explicit_layer.d \
    VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation \
    VK_LAYER_ENABLES=VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT \
    LD_LIBRARY_PATH="/tmp/vl/usr/lib/x86_64-linux-gnu:$VK_LD" \
    timeout -k 5 "$lim" "$VK" run "$ZOO/$m.onnx" ${extra[@]+"${extra[@]}"} \
    --input "$input=$ZOO/${m}_input.npy" --repeat 3 2>&1 | head -c 2000000 >>"$txt"
  rc=${PIPESTATUS[0]}
  echo "# exit status $rc after $((SECONDS - t0)) s" >>"$txt"
  log "$stage: $(grep -c 'Validation \(Error\|Warning\)' "$txt") validation messages" \
    "in vk_$m.txt so far"
  record "$stage" "$rc" "$t0"
}

# ---------------------------------------------------------------------------------------------
# HOOK: vkgraph GEMM / elementwise-add microbenchmarks. Runs only when `vkgraph --help` lists
# bench-op. Put one argument string per case (what follows `vkgraph bench-op`) in
# BENCH_OP_CASES; left empty, `vkgraph bench-op` runs once with no arguments. Output goes to
# /tmp/h200/vk_bench.txt (shown in report.md) and is appended to $OUT/info.txt.
# ---------------------------------------------------------------------------------------------
BENCH_OP_CASES=("gemm 1024 1024 1024" "gemm 4096 4096 4096" "gemm 8192 8192 8192"
  "gemm 4096 4096 4096 --fp16" "gemm 8192 8192 8192 --fp16" "add 67108864" "add 268435456"
  "io 67108864" "overhead 100")
vk_bench_ops() {
  local t0=$SECONDS rc=0 args lim
  if ! LD_LIBRARY_PATH=$VK_LD "$VK" --help 2>&1 | grep -q bench-op; then
    log "bench_op: this vkgraph has no bench-op command; skipped"
    return 0
  fi
  ((${#BENCH_OP_CASES[@]})) || BENCH_OP_CASES=("")
  for args in "${BENCH_OP_CASES[@]}"; do
    lim=$(limit 60 60)
    ((lim < 5)) && { echo "# skipped (no time): bench-op $args"; continue; }
    echo "# vkgraph bench-op $args"
    # shellcheck disable=SC2086  # args is a word list on purpose
    LD_LIBRARY_PATH=$VK_LD timeout -k 5 "$lim" "$VK" bench-op $args 2>&1 || rc=$?
  done >"$WORK/vk_bench.txt"
  # Per-node GPU profiles of the models (top nodes first).
  for m in "${MODELS[@]}"; do
    lim=$(limit 40 40)
    ((lim < 5)) && break
    [ -f "$ZOO/$m.onnx" ] || continue
    echo "# vkgraph bench $m"
    LD_LIBRARY_PATH=$VK_LD timeout -k 5 "$lim" "$VK" bench "$ZOO/$m.onnx" \
      --input "input=$ZOO/${m}_input.npy" --runs 50 --top 12 2>&1 || rc=$?
  done >>"$WORK/vk_bench.txt"
  { echo "# --- vkgraph bench-op ---"; cat "$WORK/vk_bench.txt"; } >>"$OUT/info.txt"
  cat "$WORK/vk_bench.txt"
  record bench_op "$rc" "$t0"
}

# The GPU test suites on this device (test_gpu: the C++ graph API; test_gpu_onnx: the ONNX
# frontend), under the validation layer with synchronization validation (lavapipe runs
# dispatches one at a time; here missing barriers and driver differences show). Runs when
# build-h200/tests/test_gpu was carried; summary -> info.txt.
gpu_tests() {
  local t0=$SECONDS lim left rc=0 one name bin
  [ -f ./build-h200/tests/test_gpu ] || { log "gpu_tests: build-h200/tests/test_gpu not carried; skipped"; return 0; }
  lim=$(limit 120 40)
  ((lim < 5)) && { record gpu_tests skipped-no-time "$t0"; return 0; }
  log "gpu_tests: start (limit ${lim}s)"
  for name in test_gpu test_gpu_onnx; do
    bin=./build-h200/tests/$name
    [ -f "$bin" ] || { log "gpu_tests: $bin not carried; skipped"; continue; }
    chmod +x "$bin"
    left=$((lim - (SECONDS - t0)))
    ((left < 5)) && { rc=124; log "gpu_tests: no time left for $name"; break; }
    VK_ADD_LAYER_PATH=/tmp/vl/usr/share/vulkan/explicit_layer.d VKGRAPH_PIPELINE_CACHE=off \
      LD_LIBRARY_PATH="/tmp/vl/usr/lib/x86_64-linux-gnu:$VK_LD" \
      timeout -k 5 "$left" "$bin" >"$WORK/$name.log" 2>&1
    one=$?
    ((one != 0)) && rc=$one
    {
      echo "# --- $name on this device (validation + sync validation), exit status $one ---"
      grep -E '^\[  (PASSED|FAILED|SKIPPED) |^\[==========\]' "$WORK/$name.log"
      grep -B1 -A6 'Failure$' "$WORK/$name.log" | head -60
    } >>"$OUT/info.txt"
    tail -20 "$WORK/$name.log"
  done
  record gpu_tests "$rc" "$t0"
}

main() {
  local t0 m name
  declare -A inputs
  mkdir -p "$WORK"
  : >"$WORK/stages.tsv"
  rm -rf "$ZOO"
  log "repo $PWD, OUT $OUT, deadline ${DEADLINE}s, $(nproc) CPUs, run $RUN_ID"

  t0=$SECONDS
  setup_vulkan
  record setup $? "$t0"

  timed export 150 260 python3 models/export_zoo.py "$ZOO"

  t0=$SECONDS
  write_info
  record info $? "$t0"
  sed -n '1,40p' "$OUT/info.txt" | sed 's/^/    /'

  while read -r m name; do inputs[$m]=$name; done < <(input_names)
  for m in "${MODELS[@]}"; do
    run_vk "$m" "${inputs[$m]:-input}"
  done
  # fp16 mode after every fp32 run, so that a slow fp16 run never costs an fp32 number.
  for m in "${MODELS[@]}"; do
    run_vk "$m" "${inputs[$m]:-input}" fp16
  done

  timed compare 60 0 python3 tools/h200/compare.py "$ZOO" "$WORK/compare.json" "${MODELS[@]}" \
    --vk-root /tmp --vk-txt-dir "$OUT"
  timed compare_fp16 60 0 python3 tools/h200/compare.py "$ZOO" "$WORK/compare_fp16.json" \
    "${MODELS[@]}" --vk-root /tmp/fp16 --vk-txt-dir "$OUT"

  timed peers 200 20 python3 tools/h200/peers.py "$ZOO" "$OUT/peers.json"

  vk_bench_ops

  for m in "${MODELS[@]}"; do
    val_vk "$m" "${inputs[$m]:-input}"
  done
  for m in "${MODELS[@]}"; do
    val_vk "$m" "${inputs[$m]:-input}" fp16
  done

  gpu_tests

  # The report may run up to 30 s past the deadline: it is cheap and it is what matters.
  timed report 30 -30 python3 tools/h200/report.py --out "$OUT" --work "$WORK" --run-id "$RUN_ID"

  echo
  echo "==================== summary ===================="
  sed -n '/^| model | vkgraph host/,/^$/p' "$OUT/report.md" 2>/dev/null
  sed -n '/^| model | vkgraph fp16 host/,/^$/p' "$OUT/report.md" 2>/dev/null
  echo "files in $OUT: $(find "$OUT" -type f | wc -l) (the device tool returns at most 8)"
  log "total wall time $((SECONDS - T_START)) s"
}

mkdir -p "$OUT"
main 2>&1 | tee "$OUT/run_all.log"
exit "${PIPESTATUS[0]}"
