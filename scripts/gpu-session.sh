#!/usr/bin/env bash
# CUDA measurement on a GPU machine that has CUDA, CMake and Python but no Rust toolchain and
# no network (the project's H200 device). scripts/gpu-prepare, run beforehand where tpsbench
# builds, puts the llama.cpp sources, a dynamic-link tpsbench and a model into .gpu-carry/.
#
#   bash scripts/gpu-session.sh build   # CUDA shared libraries from the carried sources
#   bash scripts/gpu-session.sh sweep   # the sweep of gpu.toml over the models there, to $OUT
#   bash scripts/gpu-session.sh all     # both (what one device call runs)
#
# Plan (the device machine goes back after 30 s idle, and all calls share 15 min):
#   call 1, carry .gpu-carry/1:  bash scripts/gpu-session.sh all
#       builds (skipped when the libraries exist), synthesizes models, measures them
#   call 2 at once, carry .gpu-carry/2:  SYNTH= SWEEP_MODELS='SmolLM2*' bash scripts/gpu-session.sh all
#       joins the model's two parts (the first kept from call 1) and measures it; on a cold
#       machine it rebuilds from its own copy of the sources and binary instead
#
# Settings (environment): CUDA_ARCH (90: H100/H200), JOBS (all cores), DEADLINE (s after
# start by which this script must be done, 570: every step's time limit is cut to fit it),
# SWEEP_TIMEOUT (s, 240), BUILD_TIMEOUT (s, 500; a second `build` call continues an
# unfinished build), BACKEND (cuda; cpu runs the same pipeline on a machine without a GPU,
# as a dry run), SYNTH (space-separated `preset:type` pairs for `tpsbench synth`, default
# "llama-3-8b:Q4_K_M llama-3-8b:Q8_0"; presets the binary lacks are skipped), SWEEP_MODELS
# (a glob of model file names to measure, default all), LADDER (1: also run the [[ladder]]
# of gpu.toml on the carried SmolLM2 when it is there and time is left; 0: skip).
# Everything it builds stays in the ignored .gpu-work/, which the device keeps between calls,
# so `build` is skipped when the libraries are already there. What it reports goes to $OUT:
# results/*.json, table.md, info.json, gpu-device.toml, logs, and summary.txt (read first).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
OUT=${OUT:-$root/gpu-out}
work=$root/.gpu-work
arch=${CUDA_ARCH:-90}
backend=${BACKEND:-cuda}
lib=$work/llama-$backend/lib
jobs=${JOBS:-$(nproc)}
mkdir -p "$OUT" "$work/bin" "$work/models"
summary=$OUT/summary.txt
note() { echo "$(date -u +%H:%M:%S) $*" | tee -a "$summary" >&2; }
started=$(date +%s)
# Seconds a step may take: its own limit, cut to what is left before DEADLINE (less 15 s to
# write the summary); 0 when nothing is left.
budget() {
  local left=$(( ${DEADLINE:-570} - ($(date +%s) - started) - 15 ))
  [ "$left" -lt 0 ] && left=0
  [ "$1" -lt "$left" ] && echo "$1" || echo "$left"
}

# Copies what this call carried (the binary, a part of the model) into the kept .gpu-work/.
stage() {
  local c f
  for c in "$root/.gpu-carry/1" "$root/.gpu-carry/2"; do
    [ -f "$c/tpsbench" ] && cp "$c/tpsbench" "$work/bin/tpsbench" && chmod +x "$work/bin/tpsbench"
    for f in model.part1 model.info; do [ -f "$c/$f" ] && cp "$c/$f" "$work/models/$f"; done
  done
  return 0
}

build() {
  stage
  if [ -f "$lib/tpsbench-llama.stamp" ] && [ -x "$work/bin/tpsbench" ]; then
    note "build: $backend libraries already in $lib, skipped"
    return 0
  fi
  { nvidia-smi -L; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,power.limit --format=csv; } \
    >"$OUT/gpu.txt" 2>&1
  { command -v nvcc || ls /usr/local/cuda/bin/nvcc; nvcc --version || /usr/local/cuda/bin/nvcc --version; cmake --version; } \
    >"$OUT/toolchain.txt" 2>&1
  local carry=$root/.gpu-carry/1
  [ -f "$carry/llama-src.tar.gz" ] || carry=$root/.gpu-carry/2
  # Unpacked once: a second `build` (after a timeout) continues in the kept build directory.
  if [ ! -f "$work/src/.unpacked" ]; then
    [ -f "$carry/llama-src.tar.gz" ] || { note "build: $carry/llama-src.tar.gz missing (run scripts/gpu-prepare, carry .gpu-carry/1)"; return 2; }
    rm -rf "$work/src" && mkdir -p "$work/src"
    tar -xzf "$carry/llama-src.tar.gz" -C "$work/src" || { note "build: cannot unpack the sources"; return 2; }
    touch "$work/src/.unpacked"
  fi
  local src
  src=$(ls -d "$work"/src/llama-cpp-sys-2-* | head -1)
  local args=(--backend "$backend" -j "$jobs" --no-common --src "$src" --out "$work/llama-$backend")
  [ "$backend" = cuda ] && args+=(--cuda-arch "$arch")
  note "build: $backend libraries (sm_$arch for cuda), -j $jobs, from $(basename "$src")"
  # tpsbench links no symbol of llama.cpp's `common` library: --no-common saves compile time.
  # The time limit leaves this script time to report before the device call's own limit.
  timeout "$(budget "${BUILD_TIMEOUT:-500}")" scripts/build-llama-shared "${args[@]}" 2>>"$summary"
  local rc=$?
  for f in cmake-configure.log cmake-build.log; do
    [ -f "$work/llama-$backend/$f" ] && tail -c 200000 "$work/llama-$backend/$f" >"$OUT/$f"
  done
  if [ $rc -eq 124 ]; then
    note "build: not finished after ${BUILD_TIMEOUT:-500}s; run \`build\` again to continue (build directory kept)"
    return $rc
  fi
  [ $rc -eq 0 ] || { note "build: FAILED (rc $rc), see cmake-*.log"; return $rc; }
  cp "$lib/tpsbench-llama.stamp" "$OUT/"
  ls -la "$lib" >"$OUT/libs.txt"
  LD_LIBRARY_PATH=$lib ldd "$work/bin/tpsbench" >>"$OUT/libs.txt" 2>&1
  LD_LIBRARY_PATH=$lib "$work/bin/tpsbench" info >"$OUT/info.txt" 2>&1
  rc=$?
  note "build: done in $(( $(date +%s) - started ))s; tpsbench info exit $rc"
}

# The [sweep] and [serving] of gpu.toml (everything before its first [[model]]) over the
# models present, the synthetic ones with their `synth` spec.
write_config() {
  local cfg=$OUT/gpu-device.toml
  sed '/^\[\[model\]\]/,$d' gpu.toml >"$cfg"
  local f name
  for f in "$work"/models/${SWEEP_MODELS:-*}.gguf; do
    [ -f "$f" ] || continue
    name=$(basename "$f" .gguf)
    printf '\n[[model]]\nname = "%s"\npath = "%s"\n' "$name" "$f" >>"$cfg"
    case "$name" in
      synth-*) printf 'synth = "%s:%s"\n' "$(echo "${name#synth-}" | sed 's/\.[^.]*$//')" "${name##*.}" >>"$cfg" ;;
    esac
    if [ "$name" = tiny ]; then
      # Placement check on a tiny model: what ngl and no_kv_offload really did.
      printf '[model.sweep]\nn_prompt = [64]\nn_gen = [16]\nflash_attn = ["auto"]\nn_gpu_layers = [0, 1, 99]\nno_kv_offload = [false, true]\n' >>"$cfg"
    fi
  done
  echo "$cfg"
}

sweep() {
  local bin=$work/bin/tpsbench
  [ -x "$bin" ] && [ -f "$lib/tpsbench-llama.stamp" ] || { note "sweep: run the build step first"; return 2; }
  export LD_LIBRARY_PATH=$lib
  # The carried model, reassembled from its two parts and checked.
  stage
  local info=$work/models/model.info part2=$root/.gpu-carry/2/model.part2
  if [ -f "$info" ] && [ -f "$work/models/model.part1" ] && [ -f "$part2" ]; then
    local name sha
    name=$(sed -n 's/^name=//p' "$info"); sha=$(sed -n 's/^sha256=//p' "$info")
    cat "$work/models/model.part1" "$part2" >"$work/models/$name.tmp"
    if [ "$(sha256sum "$work/models/$name.tmp" | cut -d' ' -f1)" = "$sha" ]; then
      mv "$work/models/$name.tmp" "$work/models/$name"; note "sweep: model $name reassembled, sha256 ok"
    else
      rm -f "$work/models/$name.tmp"; note "sweep: model $name: sha256 mismatch, left out"
    fi
  elif [ -f "$info" ] && [ ! -f "$work/models/$(sed -n 's/^name=//p' "$info")" ]; then
    note "sweep: carried model incomplete (part 1 from call 1 and part 2 from call 2 both needed)"
  fi
  "$bin" synth --output "$work/models/tiny.gguf" >>"$OUT/synth.log" 2>&1
  local pt
  for pt in ${SYNTH-llama-3-8b:Q4_K_M llama-3-8b:Q8_0}; do
    local out=$work/models/synth-${pt%%:*}.${pt##*:}.gguf
    [ -f "$out" ] && continue
    if timeout "$(budget 180)" "$bin" synth --preset "${pt%%:*}" --type "${pt##*:}" --output "$out" >>"$OUT/synth.log" 2>&1; then
      note "sweep: synthesized ${pt%%:*} ${pt##*:} ($(du -h "$out" | cut -f1))"
    else
      rm -f "$out"; note "sweep: this tpsbench cannot synthesize $pt (see synth.log), skipped"
    fi
  done
  "$bin" info --json >"$OUT/info.json" 2>>"$OUT/run.log"
  local cfg
  cfg=$(write_config)
  local n
  n=$(grep -c '^\[\[model\]\]' "$cfg")
  note "sweep: $n models, config $cfg"
  [ "$n" -gt 0 ] || { note "sweep: no model to measure"; return 2; }
  timeout "$(budget "${SWEEP_TIMEOUT:-240}")" "$bin" run --config "$cfg" --results-dir "$OUT/results" --output md \
    >"$OUT/table.md" 2>>"$OUT/run.log"
  note "sweep: tpsbench run exit $? after $(( $(date +%s) - started ))s"
  # One line per test with where llama.cpp put it (the table has no placement column).
  python3 - "$OUT"/results/*.json >"$OUT/placement.txt" 2>&1 <<'PY'
import json, sys
for f in sys.argv[1:]:
    r = json.load(open(f))
    for t in r["tests"]:
        p = t.get("placement") or {}
        devs = ", ".join(f'{d["name"]}: {d["layers"]} layers, {d["model_bytes"] / 2**20:.0f} MiB weights, '
                         f'{d["kv_bytes"] / 2**20:.1f} MiB KV, {d["compute_bytes"] / 2**20:.0f} MiB compute'
                         for d in p.get("devices", []))
        rate = f'{t["avg_ts"]:.2f} ± {t["stddev_ts"]:.2f} t/s' if t.get("avg_ts") else t.get("error")
        print(f'{t["id"]}: {rate} | {p.get("layers_offloaded")}/{p.get("layers_total")} layers offloaded | {devs}')
PY
  cat "$OUT/table.md" "$OUT/placement.txt" >>"$summary"
  ladder
}

# The [[ladder]] of gpu.toml on the carried SmolLM2: quantized on the device, KLD and speed.
ladder() {
  local base=$work/models/SmolLM2-135M-Instruct.Q4_1.gguf t
  [ "${LADDER:-1}" = 1 ] && [ -f "$base" ] || return 0
  t=$(budget 120)
  [ "$t" -ge 30 ] || { note "ladder: skipped, ${t}s left"; return 0; }
  local cfg=$OUT/gpu-ladder.toml
  { sed -n '/^\[sweep\]/,/^\[/p' gpu.toml | sed '$d'
    sed -n '/^\[\[ladder\]\]/,$p' gpu.toml | sed "s|^base = .*|base = \"$base\"|"
    echo "cache_dir = \"$work/models/cache\""; } >"$cfg"
  # cache_dir belongs to [[ladder]], not [ladder.eval]: move it above the eval table.
  python3 - "$cfg" <<'PY'
import sys
p = sys.argv[1]; lines = open(p).read().splitlines()
cache = [l for l in lines if l.startswith("cache_dir")]; rest = [l for l in lines if not l.startswith("cache_dir")]
i = rest.index("[ladder.eval]"); open(p, "w").write("\n".join(rest[:i] + cache + rest[i:]) + "\n")
PY
  timeout "$t" "$work/bin/tpsbench" ladder --config "$cfg" --results-dir "$OUT/results" \
    >"$OUT/ladder.md" 2>>"$OUT/run.log"
  note "ladder: exit $? after $(( $(date +%s) - started ))s"
  cat "$OUT/ladder.md" >>"$summary"
}

case "${1:-all}" in
  build) build ;;
  sweep) sweep ;;
  all) build && sweep ;;
  *) echo "usage: bash scripts/gpu-session.sh build|sweep|all" >&2; exit 2 ;;
esac
