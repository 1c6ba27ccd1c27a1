#!/usr/bin/env bash
# Device calls of this folder's README: `bash calls.sh N` from the bundle folder (bundle-att/,
# carried to the GPU machine; bundle.sh puts run_on_gpu.sh there); each call writes
# $OUT/call<N>.log.
cd "$(dirname "$0")"
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT
. ./run_on_gpu.sh --env
set +u

# Symbolic sizes through one resized executable (CUDA: the instantiated graph's nodes updated in
# place) and symbolic artifacts (kiln::Model planning new sizes from the artifact's code): the
# tests on cuda and vulkan, memcheck and racecheck of the resizing path, W11 with a symbolic
# batch in fresh processes, and the suites the change touches.
call1() {
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  for dev in cuda vulkan; do
    KILN_DEVICE=$dev timeout 400 bin/ops_test --gtest_filter='Symbolic.*:Jit.*' 2>&1 | grep -E "^\[  FAILED|Failure|PASSED|tests ran|Expected|Which" | head -20 | sed "s/^/[$dev Symbolic] /"
    KILN_DEVICE=$dev timeout 400 bin/aot_symbolic_test 2>&1 | grep -E "^\[  FAILED|Failure|PASSED|tests ran|Expected|Which" | head -20 | sed "s/^/[$dev aot_symbolic] /"
  done
  for tool in memcheck racecheck; do
    KILN_DEVICE=cuda timeout 400 compute-sanitizer --tool $tool bin/ops_test --gtest_filter='Symbolic.NewSizes*:Symbolic.Threads*' 2>&1 | tail -2 | sed "s/^/[$tool] /"
  done
  KILN_DEVICE=cuda timeout 300 compute-sanitizer --tool memcheck bin/aot_symbolic_test --gtest_filter='*EveryBatch*' 2>&1 | tail -2 | sed "s/^/[memcheck aot] /"
  echo "--- W11 with a symbolic batch (fresh process, empty kernel cache), twice"
  for rep in 1 2; do
    KILN_CACHE_DIR=/tmp/kc$rep timeout 150 bin/anchor_bench --device cuda --w11-dim --results $OUT/w11.jsonl 2>&1 | grep -E "W11|rror"
    KILN_CACHE_DIR=/tmp/kd$rep timeout 150 bin/anchor_bench --device cuda --w11 --results $OUT/w11.jsonl 2>&1 | grep -E "W11|rror"
  done
  echo "--- suites"
  KILN_DEVICE=cuda timeout 600 bin/ops_test --gtest_brief=1 2>&1 | tail -3 | sed "s/^/[cuda ops_test] /"
  KILN_DEVICE=cuda timeout 600 bin/cuda_test --gtest_brief=1 2>&1 | tail -3 | sed "s/^/[cuda_test] /"
  timeout 300 bin/kiln_fuzz --device cuda --count 100 2>&1 | tail -2 | sed "s/^/[fuzz cuda] /"
}

# The fused attention kernels with a symbolic batch (their tile loops read its size; their index
# width now comes from the operands): the attention and symbolic suites on cuda on both attention
# kernels, memcheck, W9 and W8 against the previous numbers and torch in the same call, and the
# views' switches without hashing the module (alternating sizes).
call2() {
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  KILN_DEVICE=cuda timeout 400 bin/ops_test --gtest_filter='Symbolic.*:Jit.*:Attention*' 2>&1 | grep -E "^\[  FAILED|Failure|PASSED|tests ran" | head | sed "s/^/[sm90 attention] /"
  KILN_CUDA_SM90_ATTENTION=0 KILN_DEVICE=cuda timeout 400 bin/ops_test --gtest_filter='Symbolic.Attention*:Attention*' 2>&1 | grep -E "^\[  FAILED|Failure|PASSED|tests ran" | head | sed "s/^/[mma.sync attention] /"
  KILN_DEVICE=cuda timeout 300 compute-sanitizer --tool memcheck bin/ops_test --gtest_filter='Symbolic.Attention*:Symbolic.NewSizes*' 2>&1 | tail -2 | sed "s/^/[memcheck] /"
  KILN_DEVICE=cuda timeout 300 compute-sanitizer --tool racecheck bin/ops_test --gtest_filter='Symbolic.Attention*' 2>&1 | tail -2 | sed "s/^/[racecheck] /"
  KILN_DEVICE=cuda timeout 300 bin/aot_symbolic_test 2>&1 | grep -E "^\[  FAILED|Failure|PASSED" | sed "s/^/[aot_symbolic] /"
  echo "--- W9, W9n, W8 (kiln, then torch)"
  for rep in 1 2; do
    timeout 200 bin/anchor_bench --device cuda --only W9,W9n,W8 2>&1 | grep -E "^W[89]" | grep -v realize | cut -c1-150
  done
  timeout 300 python3 attention_torch.py W9 W9n W8 2>&1 | grep -E "^W[89]"
  KILN_DEVICE=cuda timeout 600 bin/cuda_test --gtest_brief=1 2>&1 | tail -3 | sed "s/^/[cuda_test] /"
}

# Vulkan executables resized per size (command buffers recorded again): the symbolic suites on
# vulkan with the validation layer (synchronization validation), vulkan_test, W11 with a
# symbolic batch on vulkan and cuda (fresh processes), and the cuda symbolic suites again.
call3() {
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  KILN_DEVICE=vulkan KILN_VULKAN_VALIDATION=1 timeout 400 bin/ops_test --gtest_filter='Symbolic.*:Jit.*' 2>&1 | grep -E "^\[  FAILED|Failure|PASSED|VUID|Validation" | head | sed "s/^/[vulkan+validation Symbolic] /"
  KILN_DEVICE=vulkan KILN_VULKAN_VALIDATION=1 timeout 400 bin/aot_symbolic_test 2>&1 | grep -E "^\[  FAILED|Failure|PASSED|VUID" | head | sed "s/^/[vulkan+validation aot_symbolic] /"
  KILN_DEVICE=vulkan KILN_VULKAN_VALIDATION=1 timeout 400 bin/vulkan_test --gtest_brief=1 2>&1 | tail -3 | sed "s/^/[vulkan_test] /"
  KILN_DEVICE=cuda timeout 400 bin/ops_test --gtest_filter='Symbolic.*:Jit.*' 2>&1 | grep -E "^\[  FAILED|Failure|PASSED" | head | sed "s/^/[cuda Symbolic] /"
  echo "--- W11 with a symbolic batch (fresh process, empty kernel cache)"
  for dev in vulkan cuda; do
    KILN_CACHE_DIR=/tmp/kw$dev timeout 200 bin/anchor_bench --device $dev --w11-dim --results $OUT/w11.jsonl 2>&1 | grep -E "W11|rror"
  done
  KILN_DEVICE=vulkan timeout 600 bin/ops_test --gtest_brief=1 2>&1 | tail -3 | sed "s/^/[vulkan ops_test] /"
}

# After the review's refactor (one resize check, CUDA's ticket zeroing, the compilers' shared
# kernel transfer): the symbolic, matmul and attention suites on cuda, the Hopper GEMM runs.
call4() {
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  KILN_DEVICE=cuda timeout 400 bin/ops_test --gtest_filter='Symbolic.*:Jit.*:Attention*:Matmul*:Chain*' 2>&1 | grep -E "^\[  FAILED|Failure|PASSED" | head | sed "s/^/[cuda] /"
  KILN_DEVICE=vulkan timeout 400 bin/ops_test --gtest_filter='Symbolic.*' 2>&1 | grep -E "^\[  FAILED|Failure|PASSED" | head | sed "s/^/[vulkan] /"
  timeout 300 bin/cuda_test --gtest_filter='GemmSm90Run.*:GemmSm80Run.*:CudaGraphTest.*:SymbolicKernels.*' 2>&1 | grep -E "^\[  FAILED|PASSED" | sed "s/^/[cuda_test] /"
}

case "$1" in
1) call1 2>&1 | tee $OUT/call1.log ;;
2) call2 2>&1 | tee $OUT/call2.log ;;
3) call3 2>&1 | tee $OUT/call3.log ;;
4) call4 2>&1 | tee $OUT/call4.log ;;
esac
