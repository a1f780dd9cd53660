#!/usr/bin/env bash
# A tpsbench sweep split over a Slurm job array, then merged, then published.
#
#   deploy/slurm.sh [SHARDS]          # on the login node (default 4 shards)
#
# submits SHARDS array tasks, each running `tpsbench run --shard i/SHARDS` with the node to
# itself (--exclusive), and one merge job that starts when every task has ended, whatever
# its state (afterany: a task that failed or was cancelled must not leave the merge waiting
# forever). The merge refuses a sweep that is not whole (`tpsbench merge` checks the plan hash
# and that every shard is there once and finished), so a cancelled or crashed task is named
# in merge.log and nothing is published. Prints "ARRAY_JOB MERGE_JOB" on stdout.
#
# Files (RUN_DIR and RESULTS_DIR must be on a file system every node sees):
#   $RUN_DIR/shards/<i>/*.json  shard i's result file (a rerun of the task resumes it)
#   $RUN_DIR/shard-<i>.log      its log; $RUN_DIR/merge.log the merge job's
#   $RUN_DIR/merged.json        `tpsbench merge` of the shards
#   $RESULTS_DIR/<run>.json     merged.json, published only when the sweep is whole, then the
#                               leaderboard of $RESULTS_DIR is rebuilt (LEADERBOARD.md,
#                               index.html). Shards stay out of RESULTS_DIR, so a partial
#                               sweep never reaches the leaderboard.
#
# Settings (environment; relative paths are taken from the current directory):
#   CONFIG       the sweep (models.toml)
#   TPSBENCH     the binary (default $CARGO_TARGET_DIR/release/tpsbench, else
#                target/release/tpsbench), built for the compute nodes' CPU: the build uses
#                -C target-cpu=native
#   RUN_DIR      default runs/slurm-<UTC time>;  RESULTS_DIR  default results
#   RUN_ARGS     extra `tpsbench run` arguments, e.g. RUN_ARGS="--filter tg --isolate"
#   SBATCH_ARGS  extra sbatch options, e.g. SBATCH_ARGS="--partition=bench --gres=gpu:1"
#   ALLOW_PARTIAL=1  merge and publish what there is when shards are missing
# Give every shard the same hardware (one partition or constraint): merge refuses results
# from different CPUs or GPUs. A shard without tests (SHARDS above the number of tests)
# writes no file; merge sees from the plan the others record that nothing is missing.
#
# After a refused merge, run the missing shards again (a killed one continues its file) and
# a new merge after them, with the settings saved in $RUN_DIR/submit.env:
#   RUN_DIR=runs/slurm-X deploy/slurm.sh retry 1,3
# or merge by hand (ALLOW_PARTIAL=1 to publish what there is):
#   RUN_DIR=runs/slurm-X deploy/slurm.sh merge
#SBATCH --job-name=tpsbench
#SBATCH --nodes=1
#SBATCH --time=24:00:00
set -euo pipefail

say() { echo "slurm.sh: $*" >&2; }
die() { say "$*"; exit 2; }

submit() {
  local shards=$1
  case "$shards" in '' | *[!0-9]* | 0*) die "SHARDS must be a whole number >= 1, not '$shards'" ;; esac
  local bin=${TPSBENCH:-${CARGO_TARGET_DIR:-target}/release/tpsbench}
  [ -x "$bin" ] || die "no tpsbench binary at $bin: cargo build --release, or set TPSBENCH"
  local config=${CONFIG:-models.toml}
  [ -f "$config" ] || die "no sweep config at $config: set CONFIG"
  RUN_DIR=${RUN_DIR:-runs/slurm-$(date -u +%Y%m%dT%H%M%SZ)}
  RESULTS_DIR=${RESULTS_DIR:-results}
  [ ! -e "$RUN_DIR/submit.env" ] || die "$RUN_DIR holds a sweep already: retry its shards, or pick another RUN_DIR"
  mkdir -p "$RUN_DIR/shards" "$RESULTS_DIR"
  # A batch job runs a copy of this script from the node's spool directory, in the
  # directory given by --chdir: every path it is handed must be absolute.
  TPSBENCH=$(realpath "$bin")
  CONFIG=$(realpath "$config")
  RUN_DIR=$(realpath "$RUN_DIR")
  RESULTS_DIR=$(realpath "$RESULTS_DIR")
  SHARDS=$shards
  # The settings of this sweep, for a retry or a merge by hand: the same plan, the same binary.
  local v
  for v in TPSBENCH CONFIG RESULTS_DIR SHARDS RUN_ARGS; do
    printf '%s=%q\n' "$v" "${!v:-}"
  done >"$RUN_DIR/submit.env"
  submit_jobs "0-$((shards - 1))"
}

# retry INDICES: run these shards of the sweep in $RUN_DIR again (a killed shard resumes its
# file), with a new merge job after them.
retry() {
  : "${RUN_DIR:?set RUN_DIR to the sweep to complete}"
  [ -f "$RUN_DIR/submit.env" ] || die "no $RUN_DIR/submit.env: not a sweep of deploy/slurm.sh"
  # shellcheck disable=SC1091
  source "$RUN_DIR/submit.env"
  RUN_DIR=$(realpath "$RUN_DIR")
  submit_jobs "$1"
}

# submit_jobs INDICES: the array of these shards and the merge job after it.
submit_jobs() {
  export TPSBENCH CONFIG RUN_DIR RESULTS_DIR SHARDS RUN_ARGS ALLOW_PARTIAL
  local script array merge
  script=$(realpath "$0")
  # shellcheck disable=SC2086
  array=$(sbatch --parsable ${SBATCH_ARGS:-} --job-name=tpsbench-shard --exclusive \
    --array="$1" --chdir="$RUN_DIR" --output="$RUN_DIR/shard-%a.log" --open-mode=append \
    --export=ALL "$script" shard)
  array=${array%%;*}
  # shellcheck disable=SC2086
  merge=$(sbatch --parsable ${SBATCH_ARGS:-} --job-name=tpsbench-merge \
    --dependency="afterany:$array" --time=00:30:00 --chdir="$RUN_DIR" \
    --output="$RUN_DIR/merge.log" --open-mode=append --export=ALL "$script" merge)
  merge=${merge%%;*}
  say "submitted shards $1 of $SHARDS as job $array and the merge as job $merge; files in $RUN_DIR"
  echo "$array $merge"
}

shard() {
  : "${SLURM_ARRAY_TASK_ID:?run by sbatch --array}" "${RUN_DIR:?}" "${SHARDS:?}"
  # SHARDS, not the array's size: a rerun of one task (--array=2) is still shard 2 of SHARDS.
  local i=$SLURM_ARRAY_TASK_ID dir="$RUN_DIR/shards/$SLURM_ARRAY_TASK_ID" resume=()
  mkdir -p "$dir"
  shopt -s nullglob
  local files=("$dir"/*.json)
  [ ${#files[@]} -le 1 ] || die "shard $i/$SHARDS has ${#files[@]} files in $dir: keep one"
  if [ ${#files[@]} -eq 1 ]; then
    # An earlier attempt of this shard: continue it; an empty file is one that was stopped
    # before its first test ended, with nothing to continue.
    if [ -s "${files[0]}" ]; then resume=(--resume "${files[0]}"); else rm -f "${files[0]}"; fi
  fi
  say "shard $i/$SHARDS on $(hostname) (job ${SLURM_JOB_ID:-?}) ${resume[*]}"
  # shellcheck disable=SC2086
  exec "$TPSBENCH" run --quiet --config "$CONFIG" --shard "$i/$SHARDS" \
    --results-dir "$dir" --output md "${resume[@]}" ${RUN_ARGS:-}
}

merge() {
  : "${RUN_DIR:?}"
  RESULTS_DIR=${RESULTS_DIR:-results}
  # shellcheck disable=SC1091
  [ -n "${SHARDS:-}" ] || source "$RUN_DIR/submit.env" 2>/dev/null || die "no $RUN_DIR/submit.env"
  local bin=${TPSBENCH:-${CARGO_TARGET_DIR:-target}/release/tpsbench}
  shopt -s nullglob
  local files=("$RUN_DIR"/shards/*/*.json) partial=() missing=() i f found
  [ ${#files[@]} -gt 0 ] || die "no shard result in $RUN_DIR/shards: nothing published"
  [ "${ALLOW_PARTIAL:-}" != 1 ] || partial=(--allow-partial)
  say "merging ${#files[@]} shard file(s) of $SHARDS into $RUN_DIR/merged.json"
  # tpsbench merge refuses (exit 2, one line naming what is missing) unless the files are one
  # whole sweep: one plan hash, every shard once, every shard finished.
  "$bin" merge "$RUN_DIR/merged.json" "${files[@]}" "${partial[@]}" || {
    say "merge refused: nothing published"
    exit 2
  }
  # Result files of an older tpsbench record no shard or plan, so merge could not check
  # them: check by directory instead, each shard needing a file whose run finished.
  if ! grep -L '"plan_hash"' "${files[@]}" | grep -q .; then SHARDS=0; fi
  for ((i = 0; i < SHARDS; i++)); do
    found=""
    for f in "$RUN_DIR/shards/$i"/*.json; do
      if [ -s "$f" ] && ! grep -q '"finished_at": null' "$f"; then found=1; fi
    done
    [ -n "$found" ] || missing+=("$i/$SHARDS")
  done
  if [ ${#missing[@]} -gt 0 ] && [ -z "${partial[*]}" ]; then
    say "missing shard ${missing[*]} (no finished result file in $RUN_DIR/shards/<i>):" \
      "nothing published"
    exit 2
  fi
  local out
  out="$RESULTS_DIR/$(basename "$RUN_DIR").json"
  cp "$RUN_DIR/merged.json" "$out.tmp"
  mv "$out.tmp" "$out"
  say "published $out"
  # The leaderboard reads RESULTS_DIR recursively and keeps the newest measurement of each
  # test per machine.
  "$bin" leaderboard "$RESULTS_DIR" --out-dir "$RESULTS_DIR"
}

case "${1:-submit}" in
  submit) submit "${SHARDS:-4}" ;;
  [0-9]*) submit "$1" ;;
  retry) retry "${2:?usage: deploy/slurm.sh retry INDICES, e.g. 1,3}" ;;
  shard) shard ;;
  merge) merge ;;
  *) echo "usage: $0 [SHARDS] | retry INDICES | merge | shard" >&2; exit 2 ;;
esac
