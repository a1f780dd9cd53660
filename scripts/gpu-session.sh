#!/usr/bin/env bash
# CUDA measurement on a GPU machine that has no Rust toolchain and no network (the project's
# H200 device). scripts/gpu-prepare, run beforehand where tpsbench builds, puts a portable
# dynamic-link tpsbench and llama.cpp's CUDA libraries (built there, sm_90) in .gpu-carry/:
# nothing is compiled here, so device time goes to measuring.
#
#   bash scripts/gpu-session.sh measure   # call 1: info, 8B syntheses, gpu.toml's tune
#                                         # block first, its MoE block, gpu.toml, placement
#   bash scripts/gpu-session.sh smollm2   # call 2 (optional): SmolLM2's sweep and the ladder
#   bash scripts/gpu-session.sh spec      # call 2 instead: gpu.toml's speculative block
#   bash scripts/gpu-session.sh build     # call 1 when gpu-prepare --cuda-on-device carried
#                                         # llama.cpp's sources instead of CUDA libraries:
#                                         # builds them here (sm_90, all cores), then info
#
# Each call starts from what it carried and works on a fresh machine. SmolLM2 (98 MB) is
# larger than one call may carry: call 1 carries its first part when there is room, call 2
# the rest, so call 2 measures it only on the machine call 1 warmed (else it says so).
#
# $OUT receives two files: summary.txt (written first, rewritten after every step: each
# step's state, time and note, then the result tables) and gpu-CALL.tar.gz (everything:
# result JSON, tables, logs, configs, host and library facts; repacked after every step).
#
# Settings (environment): DEADLINE (seconds after start by which the script is done: 450;
# every step's limit is cut to what is left, less RESERVE (15) for the last summary and
# archive; a step with under MIN_STEP (20) seconds left is skipped and recorded so), BACKEND
# (cuda; cpu is the dry run of the same steps on a machine without a GPU: shrunk synthetic
# models and a shrunk gpu.toml, so it takes seconds), SYNTH_ARGS (extra `tpsbench synth`
# arguments; cpu: --layers 1 --shrink 32), STEP_LIMITS (e.g. "sweep=60 synth-8b-q8=0":
# overrides of the steps' own limits).
set -uo pipefail
cd "$(dirname "$0")/.."
export ROOT=$PWD
export WORK=$ROOT/.gpu-work
export RUN_DIR=$WORK/out
export OUT=${OUT:-$ROOT/gpu-out}
export BACKEND=${BACKEND:-cuda}
if [ "$BACKEND" = cpu ]; then export SYNTH_ARGS=${SYNTH_ARGS---layers 1 --shrink 32}; else export SYNTH_ARGS=${SYNTH_ARGS-}; fi
CARRY=$ROOT/.gpu-carry
BIN=$WORK/bin/tpsbench
Q4=$WORK/models/synth-llama-3-8b.Q4_K_M.gguf
Q8=$WORK/models/synth-llama-3-8b.Q8_0.gguf
SMOL=$WORK/models/SmolLM2-135M-Instruct.Q4_1.gguf

note() { echo "$*" >"$WORK/state/$STEP.note"; }
fail() { note "$*"; exit 1; }

# --- steps: each runs as `bash gpu-session.sh _step NAME` under timeout -------------------

# llama.cpp's CUDA libraries built here from the carried sources (gpu-prepare
# --cuda-on-device): the device has nvcc, CMake and 16 cores, where this machine's 2 take
# hours. They stay in .gpu-work/lib while the machine is warm, for the next call.
step_cuda() {
  local src=$CARRY/cuda-src/llama-src.crate out=$WORK/llama-cuda
  ls "$WORK"/lib/libggml-cuda.so >/dev/null 2>&1 && { note "already built on this machine"; return 0; }
  [ -f "$src" ] || fail "no llama-src.crate carried (gpu-prepare --cuda-on-device: .gpu-carry/cuda-src)"
  (cd "$CARRY/cuda-src" && sha256sum --quiet -c SHA256SUMS) || fail "llama-src.crate does not match its SHA256SUMS"
  mkdir -p "$WORK/src" "$WORK/lib"
  tar -xzf "$src" -C "$WORK/src" || fail "cannot unpack llama-src.crate"
  local dir
  dir=$(ls -d "$WORK"/src/llama-cpp-sys-2-* | head -1)
  local t0
  t0=$(date +%s)
  # Ninja where it is there (the device's image has it; make may be missing).
  command -v ninja >/dev/null && export CMAKE_GENERATOR=Ninja
  { command -v nvcc; nvcc --version; command -v cmake ninja make g++ c++; } >"$RUN_DIR/cuda-tools.txt" 2>&1
  # With `common`: tpsbench (llama-cpp-2 0.1.160) links libllama-common.
  bash "$ROOT/scripts/build-llama-shared" --backend cuda --cuda-arch 90 --no-native \
    -j "$(nproc)" --src "$dir" --out "$out" >"$RUN_DIR/cuda-build.log" 2>&1 \
    || { cp "$out"/cmake-*.log "$RUN_DIR/" 2>/dev/null; fail "build-llama-shared failed (cuda-build.log)"; }
  cp -P "$out"/lib/lib*.so* "$out/lib/tpsbench-llama.stamp" "$WORK/lib/"
  note "built in $(( $(date +%s) - t0 ))s with $(nproc) cores: $(ls "$WORK"/lib/lib*.so | wc -l) libraries"
}

# The carried binary and libraries into .gpu-work/, checked; the libraries they need found
# (cuBLAS from the machine's Python packages or CUDA install, the driver's libcuda).
step_unpack() {
  local common=$CARRY/common dirs="" d f
  [ -d "$common" ] || fail "$common was not carried (scripts/gpu-prepare writes it)"
  if [ -f "$common/SHA256SUMS" ]; then
    (cd "$common" && sha256sum --quiet -c SHA256SUMS) || fail "carried files do not match SHA256SUMS"
  fi
  mkdir -p "$WORK/bin" "$WORK/lib" "$WORK/models"
  if [ -f "$common/tpsbench.tar.gz" ]; then
    tar -xzf "$common/tpsbench.tar.gz" -C "$WORK" || fail "cannot unpack tpsbench.tar.gz"
  elif [ -f "$common/tpsbench" ]; then
    cp "$common/tpsbench" "$BIN"   # a statically linked binary (the cpu dry run)
  else
    fail "no tpsbench.tar.gz or tpsbench in $common"
  fi
  chmod +x "$BIN"
  for f in "$CARRY"/smollm2-*/model.*; do
    [ -f "$f" ] && cp "$f" "$WORK/models/"   # kept while the machine stays warm
  done
  for f in "$CARRY"/smollm2-*/sharegpt-subset.json; do
    [ -f "$f" ] && cp "$f" "$WORK/models/"
  done
  { uname -a; cat /etc/os-release 2>/dev/null; ldd --version 2>&1 | head -1; nproc; free -g
    [ "$BACKEND" = cuda ] && { nvidia-smi; nvidia-smi -q -d CLOCK,POWER,MEMORY; nvcc --version; } 2>&1
  } >"$RUN_DIR/host.txt" 2>&1
  ls "$WORK"/lib/lib*.so* >/dev/null 2>&1 && dirs=$WORK/lib
  if [ "$BACKEND" = cuda ]; then
    local need=""
    LD_LIBRARY_PATH="$dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ldd "$WORK/lib/libggml-cuda.so" 2>&1 \
      | grep -q 'libcublas.so.13 => not found' && need=1
    if [ -n "$need" ]; then
      local py
      py=$(python3 -c 'import sys; print(sys.prefix)' 2>/dev/null)
      for d in "$py"/lib/python3*/site-packages/nvidia/cu13/lib /opt/*/.venv/lib/python3*/site-packages/nvidia/cu13/lib \
               /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
               "$(timeout 20 find / -xdev -name libcublas.so.13 -print -quit 2>/dev/null | xargs -r dirname)"; do
        [ -f "$d/libcublas.so.13" ] && { dirs="$dirs:$d"; break; }
      done
    fi
    if ! ldconfig -p 2>/dev/null | grep -q 'libcuda.so.1 '; then
      for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/lib64; do
        [ -f "$d/libcuda.so.1" ] && { dirs="$dirs:$d"; break; }
      done
    fi
  fi
  echo "${dirs#:}" >"$WORK/ld-path"
  export LD_LIBRARY_PATH="${dirs#:}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  { echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"; ldd "$BIN"
    for f in "$WORK"/lib/lib*.so; do [ -f "$f" ] && { echo "== $f"; ldd "$f"; }; done
    cat "$WORK/lib/tpsbench-llama.stamp" 2>/dev/null; } >"$RUN_DIR/libs.txt" 2>&1
  grep -q 'not found' "$RUN_DIR/libs.txt" && fail "missing libraries: $(grep 'not found' "$RUN_DIR/libs.txt" | awk '{print $1}' | sort -u | tr '\n' ' ')"
  note "tpsbench and $(ls "$WORK"/lib/lib*.so 2>/dev/null | wc -l) libraries; library path ${dirs#:}"
}

step_info() {
  "$BIN" info >"$RUN_DIR/info.txt" 2>&1 || fail "tpsbench info: exit $? (info.txt)"
  "$BIN" info --json >"$RUN_DIR/info.json" 2>>"$RUN_DIR/info.txt"
  local dev
  dev=$(sed -n '/^devices:/,$p' "$RUN_DIR/info.txt" | sed -n 2p | sed 's/^ *//')
  if [ "$BACKEND" = cuda ]; then
    grep -q '^ *CUDA0' "$RUN_DIR/info.txt" || fail "llama.cpp sees no CUDA device (info.txt)"
    dev=$(grep -m1 '^ *CUDA0' "$RUN_DIR/info.txt" | sed 's/^ *//')
  fi
  note "$(grep -m1 '^library:' "$RUN_DIR/info.txt" | awk '{print $2}') llama.cpp; $dev"
}

# A synthetic Llama-3-8B (exact shapes; cpu: shrunk) at the type in $1, to $2.
synth() {
  [ -f "$2" ] && { note "already there"; return 0; }
  # shellcheck disable=SC2086  # SYNTH_ARGS is a list of words
  "$BIN" synth --preset llama-3-8b --type "$1" $SYNTH_ARGS --output "$2" \
    >>"$RUN_DIR/synth.log" 2>&1 || fail "tpsbench synth: exit $? (synth.log)"
  note "$(du -h "$2" | cut -f1)"
}
step_synth-8b-q4km() { synth Q4_K_M "$Q4"; }

# gpu.toml's mixture of experts (its `# >>> moe` block) at Qwen3-30B-A3B's shapes, on
# MOE_LAYERS of its 48 layers (12: 4.4 GB, written in the time the device allows; cpu: the
# shrunk dry run), then its n_cpu_moe sweep over those layers with fit_target: measured
# first in call 1.
MOE=$WORK/models/synth-qwen3-30b-a3b.Q4_0.gguf
step_synth-moe() {
  [ -f "$MOE" ] && { note "already there"; return 0; }
  local args=$SYNTH_ARGS
  [ "$BACKEND" = cpu ] || args="--layers ${MOE_LAYERS:-12} $SYNTH_ARGS"
  # shellcheck disable=SC2086  # a list of words
  "$BIN" synth --preset qwen3-30b-a3b --type Q4_0 $args --output "$MOE" \
    >>"$RUN_DIR/synth.log" 2>&1 || fail "tpsbench synth: exit $? (synth.log)"
  note "$(du -h "$MOE" | cut -f1)"
}
step_moe() {
  [ -f "$MOE" ] || fail "needs the MoE synthesis"
  local cfg=$RUN_DIR/gpu-moe.toml layers=${MOE_LAYERS:-12}
  local sizes='n_prompt = [512]\nn_gen = [32]\nrepetitions = 2'
  [ "$BACKEND" = cpu ] && { layers=1; sizes='n_prompt = [32]\nn_gen = [8]\nrepetitions = 1'; }
  local list="0, $layers"
  [ $(( layers / 2 )) -gt 0 ] && list="0, $(( layers / 2 )), $layers"
  { printf "[sweep]\n$sizes\nwarmup = 1\n"
    sed -n '/^# >>> moe/,/^# <<< moe/p' "$ROOT/gpu.toml" | grep -v '^#' \
      | sed "s|^path = .*|path = \"$MOE\"|; /^synth = /d" \
      | sed "s|^n_cpu_moe = .*|n_cpu_moe = [$list]|"; } >"$cfg"
  run_config "$cfg" "$RUN_DIR/moe.md"
}
step_synth-8b-q8() { synth Q8_0 "$Q8"; }

# gpu.toml's `# >>> tune` block (its `#| ` lines) on the 8B syntheses, raced first in call 1:
# the answer (winner, ties, exclusions, cost, commands) to tune.md. cpu: the shrunk
# syntheses, tg8 and 3 rounds.
step_tune() {
  local cfg=$RUN_DIR/gpu-tune.toml
  { sed -n '/^# >>> tune/,/^# <<< tune/p' "$ROOT/gpu.toml" | sed -n 's/^#| \{0,1\}//p' \
      | if [ "$BACKEND" = cpu ]; then
          sed 's/^objective = .*/objective = "tg8"/; s/^max_rounds = .*/max_rounds = 3/'
        else cat; fi
    [ -f "$Q4" ] && model_entry llama-3-8b-synth "$Q4"
    [ -f "$Q8" ] && model_entry llama-3-8b-synth-Q8_0 "$Q8"; } >"$cfg"
  grep -q '^\[tune\]' "$cfg" || fail "gpu.toml has no # >>> tune block"
  grep -q '^\[\[model\]\]' "$cfg" || fail "no model to race (both syntheses missing)"
  "$BIN" tune --config "$cfg" --results-dir "$RUN_DIR/results" >"$RUN_DIR/tune.md" 2>>"$RUN_DIR/run.log" \
    || fail "tpsbench tune: exit $? (run.log)"
  note "$(sed -n 's/^answer: //p' "$RUN_DIR/tune.md" | head -1)"
}

# gpu.toml's [sweep] and [serving] (everything before its first [[model]]), shrunk on cpu.
sweep_head() {
  local head
  head=$(sed '/^\[\[model\]\]/,$d' "$ROOT/gpu.toml")
  if [ "$BACKEND" = cpu ]; then
    echo "$head" | awk '/^\[/ { s = $0 }
      s == "[sweep]" && /^n_prompt /   { $0 = "n_prompt = [32]" }
      s == "[sweep]" && /^n_gen /      { $0 = "n_gen = [8]" }
      /^repetitions /                  { $0 = "repetitions = 1" }
      s == "[serving]" && /^n_prompt / { $0 = "n_prompt = 32" }
      s == "[serving]" && /^n_gen /    { $0 = "n_gen = 8" }
      s == "[serving]" && /^n_parallel / { $0 = "n_parallel = [1, 4]" }
      { print }'
  else
    echo "$head"
  fi
}
model_entry() { printf '\n[[model]]\nname = "%s"\npath = "%s"\n' "$1" "$2"; }

# `tpsbench run` of config $1 into results/, its table to $2. SIGINT (timeout's signal)
# makes it stop after the current test and keep what it measured.
run_config() {
  "$BIN" run --config "$1" --results-dir "$RUN_DIR/results" --output md "${@:3}" >"$2" 2>>"$RUN_DIR/run.log"
  local rc=$?
  [ $rc -eq 0 ] || fail "tpsbench run: exit $rc (run.log); $(grep -c '^|' "$2" 2>/dev/null || echo 0) table lines"
  note "$(( $(grep -c '^|' "$2") - 2 )) rows in $(basename "$2")"
}

step_sweep() {
  local cfg=$RUN_DIR/gpu-device.toml
  { sweep_head
    [ -f "$Q4" ] && model_entry llama-3-8b-synth "$Q4"
    [ -f "$Q8" ] && model_entry llama-3-8b-synth-Q8_0 "$Q8"; } >"$cfg"
  grep -q '^\[\[model\]\]' "$cfg" || fail "no model to measure (both syntheses missing)"
  run_config "$cfg" "$RUN_DIR/table.md"
}

# Partial offload: half of the 8B's 32 layers on the GPU, KV cache on and off it, and
# where llama.cpp really put weights, KV cache and compute buffers (placement.txt).
step_placement() {
  [ -f "$Q4" ] || fail "needs the Q4_K_M synthesis"
  local cfg=$RUN_DIR/gpu-placement.toml
  { printf '[sweep]\nn_prompt = [128]\nn_gen = [16]\nn_gpu_layers = [16]\nno_kv_offload = [false, true]\n'
    printf 'flash_attn = ["on"]\nwarmup = 1\nrepetitions = 2\n'
    model_entry llama-3-8b-synth-partial "$Q4"; } >"$cfg"
  run_config "$cfg" "$RUN_DIR/placement.md"
  command -v python3 >/dev/null || return 0
  python3 - "$RUN_DIR"/results/*.json >"$RUN_DIR/placement.txt" 2>&1 <<'PY'
import json, sys
for f in sys.argv[1:]:
    for t in json.load(open(f)).get("tests", []):
        p = t.get("placement") or {}
        devs = "; ".join(f'{d["name"]}: {d["layers"]} layers, {d["model_bytes"] / 2**20:.0f} MiB weights, '
                         f'{d["kv_bytes"] / 2**20:.1f} MiB KV, {d["compute_bytes"] / 2**20:.0f} MiB compute'
                         for d in p.get("devices", []))
        rate = f'{t["avg_ts"]:.2f} ± {t["stddev_ts"]:.2f} t/s' if t.get("avg_ts") else t.get("error")
        print(f'{t["id"]}: {rate} | {p.get("layers_offloaded")}/{p.get("layers_total")} offloaded | {devs}')
PY
}

# SmolLM2 from its two carried parts (call 1 stages part 1 while the machine stays warm).
step_model() {
  [ -f "$SMOL" ] && { note "already there"; return 0; }
  local info=$WORK/models/model.info name sha
  [ -f "$info" ] || fail "no model.info carried (.gpu-carry/smollm2-2)"
  name=$(sed -n 's/^name=//p' "$info"); sha=$(sed -n 's/^sha256=//p' "$info")
  [ -f "$WORK/models/model.part1" ] || fail "part 1 of $name is not on this machine: it is a fresh one (call 1 carries part 1)"
  [ -f "$WORK/models/model.part2" ] || fail "part 2 of $name was not carried"
  cat "$WORK/models/model.part1" "$WORK/models/model.part2" >"$WORK/models/$name.tmp"
  [ "$(sha256sum "$WORK/models/$name.tmp" | cut -d' ' -f1)" = "$sha" ] || { rm -f "$WORK/models/$name.tmp"; fail "$name: sha256 mismatch"; }
  mv "$WORK/models/$name.tmp" "$WORK/models/$name"
  note "$name joined, sha256 ok"
}

step_sweep-smollm2() {
  local cfg=$RUN_DIR/gpu-smollm2.toml
  { sweep_head; model_entry SmolLM2-135M "$SMOL"; } >"$cfg"
  run_config "$cfg" "$RUN_DIR/table-smollm2.md"
}

# The [[ladder]] of gpu.toml on SmolLM2: its variants quantized here, KLD and speed.
step_ladder() {
  local cfg=$RUN_DIR/gpu-ladder.toml
  { sweep_head | sed '/^\[serving\]/,$d'
    sed -n '/^\[\[ladder\]\]/,/^\[ladder.eval\]/p' "$ROOT/gpu.toml" | sed '$d' | sed "s|^base = .*|base = \"$SMOL\"|"
    echo "cache_dir = \"$WORK/models/cache\""
    sed -n '/^\[ladder.eval\]/,$p' "$ROOT/gpu.toml"; } >"$cfg"
  "$BIN" ladder --config "$cfg" --results-dir "$RUN_DIR/results" >"$RUN_DIR/ladder.md" 2>>"$RUN_DIR/run.log" \
    || fail "tpsbench ladder: exit $? (run.log)"
  note "$(( $(grep -c '^|' "$RUN_DIR/ladder.md") - 2 )) rows in ladder.md"
}

# gpu.toml's `# >>> speculative` block on SmolLM2's ladder (F16, Q8_0 targets; Q4_0 drafts,
# quantized here) with the ShareGPT subset gpu-prepare carried: speculative tests only.
step_spec() {
  local cfg=$RUN_DIR/gpu-spec.toml sub=$WORK/models/sharegpt-subset.json
  [ -f "$sub" ] || fail "no ShareGPT subset carried (.gpu-carry/smollm2-2/sharegpt-subset.json)"
  { sweep_head | sed '/^\[serving\]/,$d'
    sed -n '/^# >>> speculative/,/^# <<< speculative/p' "$ROOT/gpu.toml" | grep -v '^#' \
      | sed "s|^dataset = .*|dataset = \"$sub\"|"
    echo '[[ladder]]'; echo 'name = "SmolLM2-135M"'; echo "base = \"$SMOL\""
    echo 'types = ["F16", "Q8_0", "Q4_0"]'; echo "cache_dir = \"$WORK/models/cache\""; } >"$cfg"
  run_config "$cfg" "$RUN_DIR/spec.md" --filter /spec-
}

if [ "${1:-}" = _step ]; then
  STEP=$2
  "step_$STEP"
  exit $?
fi

# --- the call: steps in order, each cut to the deadline ------------------------------------
call=${1:-}
case "$call" in
  measure) steps="unpack:60 info:60 synth-8b-q4km:150 synth-8b-q8:150 tune:${TUNE_LIMIT:-120} synth-moe:120 moe:150 sweep:240 placement:90" ;;
  smollm2) steps="unpack:60 info:60 model:60 ladder:${LADDER_LIMIT:-240} sweep-smollm2:150" ;;
  spec) steps="unpack:60 info:60 model:60 spec:${SPEC_LIMIT:-300}" ;;
  build) steps="cuda:${CUDA_LIMIT:-420} unpack:60 info:60" ;;
  *) echo "usage: bash scripts/gpu-session.sh measure|smollm2|spec|build (see the comment at its top)" >&2; exit 2 ;;
esac
deadline=${DEADLINE:-450} reserve=${RESERVE:-15} min_step=${MIN_STEP:-20}
for v in "$deadline" "$reserve" "$min_step"; do
  [[ "$v" =~ ^[0-9]+$ ]] || { echo "gpu-session: DEADLINE, RESERVE and MIN_STEP are whole seconds" >&2; exit 2; }
done
[ "$min_step" -ge 11 ] || min_step=11   # a step runs under timeout (limit - 10): never 0
started=$(date +%s)
rm -rf "$RUN_DIR" "$WORK/state"
mkdir -p "$OUT" "$RUN_DIR/logs" "$RUN_DIR/results" "$WORK/state"
archive=$OUT/gpu-$call.tar.gz
order=()
for s in $steps; do order+=("${s%%:*}"); echo "pending" >"$WORK/state/${s%%:*}"; done

write_summary() {
  local s f
  {
    echo "tpsbench GPU session: call $call, backend $BACKEND, deadline ${deadline}s, $(( $(date +%s) - started ))s elapsed, started $(date -u -d "@$started" +%FT%TZ)"
    echo "archive: $(basename "$archive") (everything under .gpu-work/out)"
    echo
    printf '%-16s %-28s %s\n' step state note
    for s in "${order[@]}"; do
      printf '%-16s %-28s %s\n' "$s" "$(cat "$WORK/state/$s")" "$(cat "$WORK/state/$s.note" 2>/dev/null)"
    done
    for f in tune.md moe.md table.md placement.md placement.txt table-smollm2.md ladder.md spec.md; do
      [ -s "$RUN_DIR/$f" ] && { echo; echo "== $f"; cat "$RUN_DIR/$f"; }
    done
  } >"$OUT/summary.txt.tmp"
  mv "$OUT/summary.txt.tmp" "$OUT/summary.txt"
  cp "$OUT/summary.txt" "$RUN_DIR/summary.txt"
  tar -czf "$archive.tmp" -C "$WORK" out && mv "$archive.tmp" "$archive"
}
write_summary

failed=""
for s in $steps; do
  name=${s%%:*} limit=${s#*:}
  case " ${STEP_LIMITS:-} " in *" $name="*) limit=$(echo " $STEP_LIMITS " | sed "s/.* $name=\([0-9]*\) .*/\1/") ;; esac
  left=$(( deadline - ($(date +%s) - started) - reserve ))
  t=$(( limit < left ? limit : left ))
  if [ -n "$failed" ]; then
    echo "skipped: $failed failed" >"$WORK/state/$name"
  elif [ "$t" -lt "$min_step" ]; then
    echo "skipped: ${left}s left" >"$WORK/state/$name"
  else
    echo "running (limit ${t}s)" >"$WORK/state/$name"; write_summary
    t0=$(date +%s)
    # SIGINT first (tpsbench keeps what it measured), SIGKILL 10 s later: never uncut.
    timeout -s INT -k 10 "$(( t - 10 ))" bash "$ROOT/scripts/gpu-session.sh" _step "$name" \
      >"$RUN_DIR/logs/$name.log" 2>&1
    rc=$? secs=$(( $(date +%s) - t0 ))
    case $rc in
      0) echo "ok ${secs}s" ;;
      124|137) echo "timeout ${secs}s (limit ${t}s)" ;;
      *) echo "failed ${secs}s (rc $rc)" ;;
    esac >"$WORK/state/$name"
    # Every later step needs the binary (unpack) or the model (model); a failed synthesis
    # or sweep leaves the others to go on.
    if [ $rc -ne 0 ] && { [ "$name" = unpack ] || [ "$name" = model ]; }; then failed=$name; fi
    if [ "$name" = unpack ] && [ -f "$WORK/ld-path" ]; then
      ldp=$(cat "$WORK/ld-path")
      [ -n "$ldp" ] && export LD_LIBRARY_PATH="$ldp${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    fi
  fi
  write_summary
done
echo "gpu-session: done in $(( $(date +%s) - started ))s; $OUT/summary.txt" >&2
for s in "${order[@]}"; do grep -q '^ok' "$WORK/state/$s" || exit 1; done
