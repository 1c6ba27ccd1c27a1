#!/usr/bin/env bash
cd "$(dirname "$0")"
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT
bash run_on_gpu.sh env > /dev/null 2>&1
export LD_LIBRARY_PATH=$PWD/lib:$(python3 -c 'import glob, site; print(":".join(p for s in site.getsitepackages() for p in glob.glob(s + "/nvidia/*/lib")))'):$LD_LIBRARY_PATH
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
{
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "--- W11 with a symbolic batch on vulkan and cuda (fresh process, empty kiln kernel cache)"
KILN_CACHE_DIR=/tmp/kcv timeout 150 bin/anchor_bench --device vulkan --w11-dim --results $OUT/w11.jsonl 2>&1 | grep -E "W11|rror"
KILN_CACHE_DIR=/tmp/kcc timeout 150 bin/anchor_bench --device cuda --w11-dim --results $OUT/w11.jsonl 2>&1 | grep -E "W11|rror"
echo "--- tests"
echo "vulkan_test (validation layer)"; timeout 300 bin/vulkan_test 2>&1 | grep -E "FAILED|Failure|PASSED|SKIPPED \]" | head
echo "ops_test on vulkan"; KILN_DEVICE=vulkan timeout 400 bin/ops_test 2>&1 | grep -E "FAILED|Failure|PASSED" | head
echo "ops_test on cuda"; KILN_DEVICE=cuda timeout 400 bin/ops_test 2>&1 | grep -E "FAILED|Failure|PASSED" | head
} 2>&1 | tee $OUT/call3.log
