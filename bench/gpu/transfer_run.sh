#!/usr/bin/env bash
# Transfers on the GPU machine (issue 18), from the common bundle (bundle.sh):
#
#   bash bench/gpu/transfer_run.sh <bundle dir>      # results in $OUT (default <bundle>/out)
#
# transfer.log: cuda_test (incl. CudaDeviceTest.UploadOverlapsKernelsQueuedBeforeIt), the op,
# fusion, conv, profile and AOT suites on cuda, the differential fuzzer on cuda (uploads and runs
# interleave on two streams), then the upload-compute-download pipeline with uploads on the copy
# stream and on the compute stream (KILN_CUDA_COPY_STREAM=0), and torch's pipeline beside it.
set -u
B=$(cd "$1" && pwd)
. "$(dirname "$0")/gpu_env.sh" "$B"
{
  nvidia-smi -L
  echo "## cuda_test"
  timeout 200 "$BIN/cuda_test" 2>&1 | grep -E "FAILED|PASSED|Overlap|tests ran" | head -20
  for t in ops_test passes_test conv_test; do
    echo "## $t on cuda"
    KILN_DEVICE=cuda timeout 200 "$BIN/$t" 2>&1 | grep -E "FAILED|PASSED|tests ran" | head -10
  done
  echo "## fuzz on cuda"
  KILN_DEVICE=cuda timeout 120 "$BIN/kiln_fuzz" --count 200 --device cuda 2>&1 | tail -4
  echo "## pipeline: uploads on the copy stream"
  KILN_DEVICE=cuda timeout 60 "$BIN/transfer_bench" 2>&1 | tail -2
  echo "## pipeline: uploads on the compute stream (KILN_CUDA_COPY_STREAM=0)"
  KILN_CUDA_COPY_STREAM=0 KILN_DEVICE=cuda timeout 60 "$BIN/transfer_bench" 2>&1 | tail -2
  echo "## torch"
  timeout 120 python3 "$(dirname "$0")/transfer_torch.py" 2>&1 | tail -3
} > "$OUT/transfer.log" 2>&1
