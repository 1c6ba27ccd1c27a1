#!/usr/bin/env bash
# Device calls of this folder's README: `bash calls.sh N` from the bundle folder (bundle-att/,
# carried to the GPU machine; bundle.sh puts run_on_gpu.sh there); each call writes
# $OUT/call<N>.log.
cd "$(dirname "$0")"
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT
. ./run_on_gpu.sh --env
set +u

# The suites that exercise the CUDA and Vulkan code generation this session's change touched (the
# C-like dialects' shared arithmetic, the contraction skeleton's operand loader, empty axes in
# 16-byte elementwise kernels), on the GPU.
suites() {
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  for t in ops_test passes_test; do
    KILN_DEVICE=cuda timeout 900 bin/$t --gtest_brief=1 2>&1 | tail -3 | sed "s/^/[cuda $t] /"
  done
  KILN_DEVICE=cuda timeout 900 bin/cuda_test --gtest_brief=1 2>&1 | tail -3 | sed "s/^/[cuda_test] /"
  timeout 600 bin/kiln_fuzz --device cuda --count 150 2>&1 | tail -2 | sed "s/^/[fuzz cuda] /"
  KILN_DEVICE=vulkan KILN_VULKAN_VALIDATION=1 timeout 900 bin/ops_test --gtest_brief=1 2>&1 | tail -3 | sed "s/^/[vulkan ops_test] /"
  timeout 600 bin/kiln_fuzz --device vulkan --count 100 2>&1 | tail -2 | sed "s/^/[fuzz vulkan] /"
}

case "$1" in
  1) suites > $OUT/call1.log 2>&1 ;;
esac
cat $OUT/call$1.log
