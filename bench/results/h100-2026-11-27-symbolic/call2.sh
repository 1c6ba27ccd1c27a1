#!/usr/bin/env bash
cd "$(dirname "$0")"
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT
bash run_on_gpu.sh env > /dev/null 2>&1
export LD_LIBRARY_PATH=$PWD/lib:$(python3 -c 'import glob, site; print(":".join(p for s in site.getsitepackages() for p in glob.glob(s + "/nvidia/*/lib")))'):$LD_LIBRARY_PATH
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
{
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
} 2>&1 | tee $OUT/call2.log
