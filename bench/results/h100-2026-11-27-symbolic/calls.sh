#!/usr/bin/env bash
# The three device calls of this folder's README: `bash calls.sh 1|2|3` from the bundle folder
# (bundle-att/, carried to the GPU machine); each writes $OUT/call<N>.log.
cd "$(dirname "$0")"
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT
bash run_on_gpu.sh env > /dev/null 2>&1
export LD_LIBRARY_PATH=$PWD/lib:$(python3 -c 'import glob, site; print(":".join(p for s in site.getsitepackages() for p in glob.glob(s + "/nvidia/*/lib")))'):$LD_LIBRARY_PATH
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json

call1() {
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "--- W11 (fresh process and empty kernel cache each)"
for mode in --w11 --w11-dim; do
  KILN_CACHE_DIR=/tmp/kc$mode timeout 150 bin/anchor_bench --device cuda $mode --results $OUT/w11.jsonl 2>&1 | grep -E "W11|rror"
done
for fw in torch-compile jax torch-eager; do timeout 240 python3 w11_anchor.py $fw 2>&1 | grep -E "^W11|rror"; done
for mode in --w11 --w11-dim; do
  KILN_CACHE_DIR=/tmp/kcv$mode timeout 150 bin/anchor_bench --device vulkan $mode --results $OUT/w11.jsonl 2>&1 | grep -E "W11|rror"
done
echo "--- tests"
for dev in cuda vulkan; do echo "ops_test on $dev"; KILN_DEVICE=$dev timeout 300 bin/ops_test --gtest_filter='Symbolic.*:Jit.*' 2>&1 | grep -E "OK|FAILED|Failure|PASSED" | head -20; done
echo "memcheck"; KILN_DEVICE=cuda timeout 300 compute-sanitizer --tool memcheck bin/ops_test --gtest_filter='Symbolic.Half*:Symbolic.Every*' 2>&1 | tail -4
echo "cuda_test"; timeout 400 bin/cuda_test --gtest_filter='GemmSm90*:SymbolicKernels.*:CudaGraphTest.*:CudaDeviceTest.*' 2>&1 | grep -E "FAILED|PASSED|tests ran" | head
}

call2() {
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "--- W11 with a symbolic batch (fresh process, empty kernel cache)"
KILN_CACHE_DIR=/tmp/kc1 timeout 150 bin/anchor_bench --device cuda --w11-dim --results $OUT/w11.jsonl 2>&1 | grep -E "W11|rror"
KILN_CUDA_SM90_GEMM=0 KILN_CACHE_DIR=/tmp/kc2 timeout 150 bin/anchor_bench --device cuda --w11-dim 2>&1 | grep -E "W11|rror" | sed 's/^/[sm_80 kernel] /'
echo "--- tests"
echo "ops_test on cuda"; KILN_DEVICE=cuda timeout 400 bin/ops_test 2>&1 | grep -E "FAILED|Failure|PASSED|SKIPPED \]" | head -20
echo "ops_test Symbolic on cuda with the sm_80 GEMM"; KILN_CUDA_SM90_GEMM=0 KILN_DEVICE=cuda timeout 300 bin/ops_test --gtest_filter='Symbolic.*' 2>&1 | grep -E "FAILED|Failure|PASSED" | head
echo "ops_test on vulkan"; KILN_DEVICE=vulkan timeout 400 bin/ops_test 2>&1 | grep -E "FAILED|Failure|PASSED|SKIPPED \]" | head -20
echo "memcheck (sm_80 GEMM, symbolic)"; KILN_CUDA_SM90_GEMM=0 KILN_DEVICE=cuda timeout 300 compute-sanitizer --tool memcheck bin/ops_test --gtest_filter='Symbolic.Half*' 2>&1 | tail -3
echo "cuda_test"; timeout 400 bin/cuda_test --gtest_filter='GemmSm90*:GemmSm80*:SymbolicKernels.*:CudaGraphTest.*:CudaDeviceTest.*' 2>&1 | grep -E "FAILED|PASSED|tests ran" | head
}

call3() {
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "--- W11 with a symbolic batch on vulkan and cuda (fresh process, empty kiln kernel cache)"
KILN_CACHE_DIR=/tmp/kcv timeout 150 bin/anchor_bench --device vulkan --w11-dim --results $OUT/w11.jsonl 2>&1 | grep -E "W11|rror"
KILN_CACHE_DIR=/tmp/kcc timeout 150 bin/anchor_bench --device cuda --w11-dim --results $OUT/w11.jsonl 2>&1 | grep -E "W11|rror"
echo "--- tests"
echo "vulkan_test (validation layer)"; timeout 300 bin/vulkan_test 2>&1 | grep -E "FAILED|Failure|PASSED|SKIPPED \]" | head
echo "ops_test on vulkan"; KILN_DEVICE=vulkan timeout 400 bin/ops_test 2>&1 | grep -E "FAILED|Failure|PASSED" | head
echo "ops_test on cuda"; KILN_DEVICE=cuda timeout 400 bin/ops_test 2>&1 | grep -E "FAILED|Failure|PASSED" | head
}

call"$1" 2>&1 | tee $OUT/call"$1".log
