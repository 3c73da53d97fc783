#!/bin/bash
# Grade a class on a Slurm cluster: N CPU shards, the GPU part on a GPU node, then the merge.
#   deploy/slurm/submit.sh CLASS OUT [N]     (GPU_PARTITION=gpu, KIT=/path/to/kit optional)
# OUT must be on a file system every node sees. Prints the merge job's id.
set -euo pipefail
CLASS=$(realpath "$1"); OUT=$(realpath -m "$2"); N=${3:-8}
HERE=$(dirname "$(realpath "$0")")
mkdir -p "$OUT"
if compgen -G "$OUT/cpu-*" > /dev/null || compgen -G "$OUT/gpu-*" > /dev/null; then
    echo "$OUT already holds shard folders of an earlier run: use a new OUT" >&2
    exit 2
fi
export CLASS OUT
cpu=$(sbatch --parsable --array=1-"$N" --chdir="$OUT" --export=ALL "$HERE/grade.sbatch")
gpu=$(sbatch --parsable ${GPU_PARTITION:+--partition="$GPU_PARTITION"} --chdir="$OUT" \
      --export=ALL "$HERE/grade-gpu.sbatch")
sbatch --parsable --dependency=afterok:"${cpu%%;*}":"${gpu%%;*}" --chdir="$OUT" \
    --export=ALL "$HERE/merge.sbatch"
