#!/usr/bin/env bash
# A tpsbench sweep split over a Slurm job array, then merged, then published.
#
#   deploy/slurm.sh [SHARDS]          # on the login node, from the repository root
#
# submits SHARDS array tasks (default 4), each running `tpsbench run --shard i/SHARDS` on
# its own node, and one merge job that starts when all tasks have ended. Results go to
# $RUN_DIR (a directory on a shared file system, default results/run-<time>):
#   $RUN_DIR/shards/*.json   one result file per shard
#   $RUN_DIR/merged.json     `tpsbench merge` of the shards (one run, one kind of machine)
# and the leaderboard of everything under results/ is rebuilt (results/LEADERBOARD.md,
# results/index.html).
#
# Settings (environment): CONFIG (models.toml), TPSBENCH (target/release/tpsbench, built on
# the compute nodes' CPU type: the build uses -C target-cpu=native), RUN_DIR, and SBATCH_ARGS
# for extra sbatch options, e.g. SBATCH_ARGS="--partition=bench --constraint=icelake".
# Give every shard the same hardware (one partition or constraint): merge refuses results
# from different CPUs or GPUs. Keep SHARDS at most the number of tests in the plan.
#SBATCH --job-name=tpsbench
#SBATCH --nodes=1
#SBATCH --time=24:00:00
set -euo pipefail

CONFIG=${CONFIG:-models.toml}
TPSBENCH=${TPSBENCH:-target/release/tpsbench}
mode=${1:-submit}

case "$mode" in
  submit|[0-9]*)
    shards=${1:-4}
    [ "$shards" = submit ] && shards=4
    RUN_DIR=${RUN_DIR:-results/run-$(date -u +%Y%m%dT%H%M%SZ)}
    mkdir -p "$RUN_DIR/shards"
    export CONFIG TPSBENCH RUN_DIR
    # shellcheck disable=SC2086
    # --exclusive: a shard has its node to itself, as a benchmark must.
    array=$(sbatch --parsable ${SBATCH_ARGS:-} --exclusive --array="0-$((shards - 1))" \
      --output="$RUN_DIR/shard-%a.log" --export=ALL "$0" shard)
    # afterany: a shard whose tests partly failed exits 1 but its file is still worth merging.
    # shellcheck disable=SC2086
    merge=$(sbatch --parsable ${SBATCH_ARGS:-} --dependency="afterany:${array%%;*}" \
      --time=00:30:00 --output="$RUN_DIR/merge.log" --export=ALL "$0" merge)
    echo "submitted shards as job $array and the merge as job $merge; results in $RUN_DIR" >&2
    ;;
  shard)
    : "${SLURM_ARRAY_TASK_ID:?run by sbatch --array}" "${RUN_DIR:?}"
    n=${SLURM_ARRAY_TASK_COUNT:-$((SLURM_ARRAY_TASK_MAX + 1))}
    exec "$TPSBENCH" run --quiet --config "$CONFIG" --shard "$SLURM_ARRAY_TASK_ID/$n" \
      --results-dir "$RUN_DIR/shards" --output md
    ;;
  merge)
    : "${RUN_DIR:?}"
    shopt -s nullglob
    files=("$RUN_DIR"/shards/*.json)
    [ ${#files[@]} -gt 0 ] || { echo "no shard result in $RUN_DIR/shards" >&2; exit 2; }
    echo "merging ${#files[@]} shard file(s)" >&2
    "$TPSBENCH" merge "$RUN_DIR/merged.json" "${files[@]}"
    # The leaderboard reads results/ recursively and keeps the newest measurement of each
    # test per machine, so shard files and the merged file do not count twice.
    "$TPSBENCH" leaderboard results --out-dir results
    ;;
  *)
    echo "usage: $0 [SHARDS] | shard | merge" >&2
    exit 2
    ;;
esac
