#!/usr/bin/env bash
# Profiles and the host path on the GPU machine (issue 17), from the common bundle (bundle.sh):
#
#   bash bench/gpu/profile_run.sh <bundle dir>        # results in $OUT (default <bundle>/out)
#
# profile.log: the profile tests and the CUDA runtime tests on cuda (kernel spans from timing
# events, report counts equal kiln::stats(), peaks from the driver's attributes), the op and
# fusion suites on cuda, host_bench (recording, cached realize and kiln::jit host cost) and
# anchor_bench's W6/H host overhead; mlp.report.txt and profile_files.tar.gz: a profile of the
# MLP example on cuda (trace, report, one picture per graph).
set -u
B=$(cd "$1" && pwd)
. "$(dirname "$0")/gpu_env.sh" "$B"
{
  nvidia-smi -L
  echo "## profile tests on cuda"
  KILN_DEVICE=cuda timeout 120 "$BIN/ops_test" --gtest_filter='Profile*' 2>&1 | tail -15
  timeout 200 "$BIN/cuda_test" 2>&1 | tail -6
  echo "## op and fusion suites on cuda"
  KILN_DEVICE=cuda timeout 240 "$BIN/ops_test" 2>&1 | tail -4
  KILN_DEVICE=cuda timeout 120 "$BIN/passes_test" 2>&1 | tail -4
  echo "## host path (KILN_DEVICE=cuda: kernels run asynchronously, so these are host costs)"
  KILN_DEVICE=cuda timeout 120 "$BIN/host_bench" --benchmark_min_time=0.5 2>&1 | tail -8
  timeout 120 "$BIN/anchor_bench" --device cuda --only W6,H 2>&1
  echo "## a profile of the MLP example on cuda"
  (cd "$OUT" && KILN_DEVICE=cuda KILN_PROFILE="$OUT/mlp.json" timeout 60 "$BIN/mlp" 2>&1)
} > "$OUT/profile.log" 2>&1
(cd "$OUT" && tar czf profile_files.tar.gz mlp.json mlp.graph* && rm -f mlp.json mlp.graph*)
