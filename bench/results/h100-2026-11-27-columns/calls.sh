#!/usr/bin/env bash
# Device calls of this folder's README: `bash calls.sh N` from the bundle folder (bundle-att/,
# carried to the GPU machine; bundle.sh puts run_on_gpu.sh and dispatch_medians.py there, and
# probe/reduce_probe is bench/gpu/reduce_probe.cu built with nvcc -O3 -arch=sm_90); each call
# writes $OUT/call<N>.log. Calls 1-3 ran builds before the committed defaults (README).
cd "$(dirname "$0")"
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT
. ./run_on_gpu.sh --env
set +u

# W4a/W4b jit pipelined, the new kernels and the old ones (KILN_GPU_COLUMN_TILES=0
# KILN_GPU_ROW_VEC4=0) alternated twice on cuda and vulkan.
w4_alternated() {
  for rep in 1 2; do
    for dev in cuda vulkan; do
      for v in "X=new" "KILN_GPU_COLUMN_TILES=0 KILN_GPU_ROW_VEC4=0"; do
        env $v timeout 120 bin/anchor_bench --device $dev --only W4a,W4b --results $OUT/results.jsonl 2>&1 \
          | grep -E "^W4" | grep -v realize | sed "s/^/[$dev, $v] /" | cut -c1-150
      done
    done
  done
}

# Per-dispatch GPU timestamps of W4a and W4b on vulkan (KILN_DEBUG=1), medians per step.
w4_dispatches() {
  for w in W4a W4b; do
    KILN_DEBUG=1 timeout 120 bin/anchor_bench --device vulkan --only $w 2>&1 | grep -E "kiln: vulkan: (step|[0-9]+ dispatches)" > /tmp/prof_$w.txt
    python3 dispatch_medians.py /tmp/prof_$w.txt $w
  done
}

column_tests() {
  echo "cuda_test ColumnTiles/RowVectorLoads/RowReductions"
  KILN_DEVICE=cuda timeout 120 bin/cuda_test --gtest_filter='ColumnTiles.*:RowVectorLoads.*:RowReductions.*' 2>&1 | grep -E "FAILED|Failure|PASSED|OK \]" | head -20
}

call1() {
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  echo "--- the design probe (hand-written CUDA, bench/gpu/reduce_probe.cu)"
  probe/reduce_probe 2>&1 | head -23
  echo "--- tests"
  column_tests
  for dev in cuda vulkan; do
    echo "ops_test Reduce.* on $dev"; KILN_DEVICE=$dev KILN_VULKAN_VALIDATION=1 timeout 200 bin/ops_test --gtest_filter='Reduce.*' 2>&1 | grep -E "FAILED|Failure|PASSED|OK \]" | head -20
  done
  echo "--- W4a/W4b, new kernels / KILN_GPU_COLUMN_TILES=0 KILN_GPU_ROW_VEC4=0 (the old ones), alternated twice, cuda then vulkan"
  w4_alternated
}

call2() {
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  echo "--- suites on the GPU"
  for dev in cuda vulkan; do
    for t in ops_test passes_test; do
      echo "$t on $dev"; KILN_DEVICE=$dev timeout 250 bin/$t 2>&1 | grep -E "FAILED|Failure|PASSED" | head
    done
    echo "kiln_fuzz on $dev"; KILN_DEVICE=$dev timeout 120 bin/kiln_fuzz --count 150 --device $dev 2>&1 | tail -2
  done
  echo "vulkan_test (validation layer)"; KILN_DEVICE=vulkan KILN_VULKAN_VALIDATION=1 timeout 200 bin/vulkan_test 2>&1 | grep -E "FAILED|Failure|PASSED|SKIPPED \]" | head
  echo "--- W1-W6 and H, vulkan then cuda (jit path)"
  for dev in vulkan cuda; do
    timeout 200 bin/anchor_bench --device $dev --results $OUT/results.jsonl 2>&1 | grep -E "^(W[1-6]|H )" | grep -v realize
  done
}

call3() {
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  echo "--- W4a/W4b with 4 loads per step issued before folding (column tiles and vector rows), new / old kernels alternated twice"
  w4_alternated
  echo "--- per-dispatch GPU times on vulkan (timestamps, KILN_DEBUG=1): median us per step"
  w4_dispatches
}

call4() {
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  echo "--- W4b variants: groups per column tile, split below N outputs per multiprocessor (jit, pipelined)"
  for rep in 1 2; do
    for dev in vulkan cuda; do
      for v in "X=default" "KILN_GPU_COLUMN_GROUPS=16" "KILN_GPU_COLUMN_GROUPS=8" "KILN_COLUMN_SPLIT_OUTPUTS=48" "KILN_COLUMN_SPLIT_OUTPUTS=64" \
               "KILN_COLUMN_SPLIT_OUTPUTS=64 KILN_GPU_COLUMN_GROUPS=16" "KILN_COLUMN_SPLIT_OUTPUTS=128" "KILN_GPU_COLUMN_TILES=0"; do
        env $v timeout 60 bin/anchor_bench --device $dev --only W4b 2>&1 | grep -E "^W4b" | grep -v realize | sed "s/^/[$dev, $v] /" | cut -c1-150
      done
    done
  done
  echo "--- W4a (vector rows, one vector per step) on cuda and vulkan"
  for dev in cuda vulkan; do timeout 60 bin/anchor_bench --device $dev --only W4a 2>&1 | grep -E "^W4a" | grep -v realize; done
}

call5() {
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  probe/reduce_probe 2>&1 | head -1
  echo "--- the committed defaults (16 groups per tile, column reductions split to 64 outputs per multiprocessor)"
  column_tests
  w4_alternated
  echo "--- per-dispatch GPU times on vulkan (timestamps, KILN_DEBUG=1): median us per step"
  w4_dispatches
  call2
}

call6() {
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  echo "--- W1,W2,W3 in one process on vulkan: dedicated allocations' buffers at k * SKEW bytes (k = 0..7 in turn; experiment build)"
  for rep in 1 2; do
    for sk in 0 4096 65536 1048576 3145728; do
      KILN_VULKAN_SKEW=$sk timeout 120 bin/anchor_bench --device vulkan --only W1,W2,W3 2>&1 | grep -E "^W[123]" | sed "s/^/[skew $sk] /" | cut -c1-110
    done
  done
}

call7() {
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  nproc
  echo "--- upload-compute-download pipeline (64 MiB in, W1, 64 MiB out): host copies on one thread / split (support/copy_bytes.h), alternated"
  for rep in 1 2; do
    for dev in cuda vulkan; do
      for t in 1 0; do
        echo "[$dev, KILN_COPY_THREADS=$t] $(KILN_COPY_THREADS=$t KILN_DEVICE=$dev timeout 60 bin/transfer_bench 2>&1 | grep BM_ | tail -1)"
      done
    done
  done
  echo "[torch]"; timeout 120 python3 transfer_torch.py 2>&1 | tail -3
  echo "--- tests touching transfers"
  KILN_DEVICE=cuda timeout 120 bin/cuda_test --gtest_filter='*Transfer*:*Download*:*Upload*:*Staging*' 2>&1 | grep -E "FAILED|PASSED" | head -3
  KILN_DEVICE=vulkan KILN_VULKAN_VALIDATION=1 timeout 120 bin/vulkan_test --gtest_filter='*Transfer*:*Download*:*Upload*:HeldCopies.*:VulkanMemory.*' 2>&1 | grep -E "FAILED|PASSED" | head -3
  for dev in cuda vulkan; do KILN_DEVICE=$dev timeout 200 bin/ops_test --gtest_filter='Creation*:*Copy*:Reduce.*' 2>&1 | grep -E "FAILED|PASSED" | head -2; done
}

call8() {
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  echo "--- where Vulkan's second dispatch of W4 goes: with and without the barrier before it (KILN_VULKAN_DROP_BARRIER=1: wrong values, timing only)"
  for v in "X=default" "KILN_VULKAN_DROP_BARRIER=1"; do
    env $v timeout 60 bin/anchor_bench --device vulkan --only W4a,W4b 2>&1 | grep -E "^W4" | grep -v realize | sed "s/^/[$v] /" | cut -c1-150
    for w in W4a W4b; do
      env $v KILN_DEBUG=1 timeout 120 bin/anchor_bench --device vulkan --only $w 2>&1 | grep -E "kiln: vulkan: (step|[0-9]+ dispatches)" > /tmp/prof_$w.txt
      python3 dispatch_medians.py /tmp/prof_$w.txt "[$v] $w"
    done
  done
}

"call$1" 2>&1 | tee $OUT/call$1.log
