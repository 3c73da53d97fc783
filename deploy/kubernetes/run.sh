#!/bin/bash
# Grade the class on Kubernetes: both grading Jobs, wait for them, then the merge Job.
set -euo pipefail
HERE=$(dirname "$(realpath "$0")")
kubectl apply -f "$HERE/grade-jobs.yaml"
kubectl wait --for=condition=complete --timeout=6h job/attention-grade-cpu job/attention-grade-gpu
kubectl apply -f "$HERE/merge-job.yaml"
kubectl wait --for=condition=complete --timeout=1h job/attention-merge
kubectl logs job/attention-merge
