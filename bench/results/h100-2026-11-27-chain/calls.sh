#!/usr/bin/env bash
# Device calls of this folder's README: `bash calls.sh N` from the bundle folder (bundle-att/,
# carried to the GPU machine; bundle.sh puts run_on_gpu.sh and dispatch_medians.py there); each
# call writes $OUT/call<N>.log.
cd "$(dirname "$0")"
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT
. ./run_on_gpu.sh --env
set +u

# W4a/W4b jit pipelined, chained (one kernel) and KILN_CHAIN_REDUCE=0 (the partials' own
# kernel), alternated twice on cuda and vulkan.
w4_alternated() {
  for rep in 1 2; do
    for dev in cuda vulkan; do
      for v in "X=chained" "KILN_CHAIN_REDUCE=0"; do
        env $v timeout 120 bin/anchor_bench --device $dev --only W4a,W4b --results $OUT/results.jsonl 2>&1 \
          | grep -E "^W4" | grep -v realize | sed "s/^/[$dev, $v] /" | cut -c1-150
      done
    done
  done
}

# Per-dispatch GPU timestamps of W4a and W4b on vulkan (KILN_DEBUG=1), medians per step.
w4_dispatches() {
  for v in "X=chained" "KILN_CHAIN_REDUCE=0"; do
    for w in W4a W4b; do
      env $v KILN_DEBUG=1 timeout 120 bin/anchor_bench --device vulkan --only $w 2>&1 | grep -E "kiln: vulkan: (step|[0-9]+ dispatches)" > /tmp/prof_$w.txt
      echo "[$v]"; python3 dispatch_medians.py /tmp/prof_$w.txt $w
    done
  done
}

chain_tests() {
  echo "cuda_test ColumnTiles/ChainedReductions/RowVectorLoads/RowReductions"
  KILN_DEVICE=cuda timeout 120 bin/cuda_test --gtest_filter='ColumnTiles.*:ChainedReductions.*:RowVectorLoads.*:RowReductions.*' 2>&1 | grep -E "FAILED|Failure|PASSED|OK \]" | head -20
  for dev in cuda vulkan; do
    echo "ops_test Chain.*:Reduce.* on $dev"; KILN_DEVICE=$dev KILN_VULKAN_VALIDATION=1 timeout 200 bin/ops_test --gtest_filter='Chain.*:Reduce.*' 2>&1 | grep -E "FAILED|Failure|PASSED|OK \]" | head -20
  done
  echo "vulkan_test chained (validation layer)"; KILN_DEVICE=vulkan KILN_VULKAN_VALIDATION=1 timeout 100 bin/vulkan_test --gtest_filter='*Chain*:CompileApart*' 2>&1 | grep -E "FAILED|Failure|PASSED|OK \]|SKIPPED \]" | head
  echo "compute-sanitizer memcheck, ops_test Chain.* on cuda"
  KILN_DEVICE=cuda timeout 200 compute-sanitizer --tool memcheck bin/ops_test --gtest_filter='Chain.*' 2>&1 | grep -E "ERROR SUMMARY|PASSED|FAILED" | head -5
}

call1() {
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  chain_tests
  echo "--- W4a/W4b, chained / KILN_CHAIN_REDUCE=0, alternated twice, cuda then vulkan"
  w4_alternated
  echo "--- per-dispatch GPU times on vulkan (timestamps, KILN_DEBUG=1): median us per step"
  w4_dispatches
}

call3() {
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

# W4a chained with its rows split into at most 1, 2 (the default) or 4 partials per
# multiprocessor (128, 256, 512 on 132), and unchained (512), alternated twice on cuda and vulkan.
w4a_waves() {
  for rep in 1 2; do
    for dev in cuda vulkan; do
      for v in "KILN_ROW_SPLIT_OUTPUTS=1" "KILN_ROW_SPLIT_OUTPUTS=2" "KILN_ROW_SPLIT_OUTPUTS=4" "KILN_CHAIN_REDUCE=0"; do
        env $v timeout 60 bin/anchor_bench --device $dev --only W4a --results $OUT/results.jsonl 2>&1 \
          | grep -E "^W4" | grep -v realize | sed "s/^/[$dev, $v] /" | cut -c1-150
      done
    done
  done
}

call2() {
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  chain_tests
  echo "--- W4a: partials per multiprocessor (chained), and unchained"
  w4a_waves
  echo "--- W4b chained / unchained, once"
  for dev in cuda vulkan; do
    for v in "X=chained" "KILN_CHAIN_REDUCE=0"; do
      env $v timeout 60 bin/anchor_bench --device $dev --only W4b 2>&1 | grep -E "^W4" | grep -v realize | sed "s/^/[$dev, $v] /" | cut -c1-150
    done
  done
  echo "--- per-dispatch GPU times on vulkan (timestamps, KILN_DEBUG=1): median us per step"
  for w in W4a W4b; do
    KILN_DEBUG=1 timeout 120 bin/anchor_bench --device vulkan --only $w 2>&1 | grep -E "kiln: vulkan: (step|[0-9]+ dispatches)" > /tmp/prof_$w.txt
    python3 dispatch_medians.py /tmp/prof_$w.txt $w
  done
  echo "--- W1-W6 and H, vulkan then cuda (jit path)"
  for dev in vulkan cuda; do
    timeout 200 bin/anchor_bench --device $dev --results $OUT/results.jsonl 2>&1 | grep -E "^(W[1-6]|H )" | grep -v realize
  done
}

# On an H200 (the issue's machine): chained reductions' tests, W4 chained / unchained, W1-W6 on
# both devices, then the anchors' copy ceiling and torch / jax on W1-W6 in the same call.
call4() {
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  for dev in cuda vulkan; do
    echo "ops_test Chain.* on $dev"; KILN_DEVICE=$dev timeout 100 bin/ops_test --gtest_filter='Chain.*' 2>&1 | grep -E "FAILED|Failure|PASSED" | head -5
  done
  echo "--- W4a/W4b, chained / KILN_CHAIN_REDUCE=0, alternated twice, cuda then vulkan"
  w4_alternated
  echo "--- W1-W6 and H, vulkan then cuda (jit path)"
  for dev in vulkan cuda; do
    timeout 200 bin/anchor_bench --device $dev --results $OUT/results.jsonl 2>&1 | grep -E "^(W[1-6]|H )" | grep -v realize
  done
  echo "--- anchors: ceilings, jax, torch (bench-anchors A J C S)"
  OUT=$OUT/anchors timeout 420 bash anchors/run_all.sh A J C S 2>&1 | tail -45
}

# On an H200: W4b chained, the column split and the groups per tile varied (the pair's choice of
# the nineteenth session was made unchained), twice each on vulkan and cuda.
call5() {
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  for rep in 1 2; do
    for dev in vulkan cuda; do
      for v in "X=default" "KILN_COLUMN_SPLIT_OUTPUTS=32" "KILN_COLUMN_SPLIT_OUTPUTS=128" "KILN_COLUMN_SPLIT_OUTPUTS=256" \
               "KILN_GPU_COLUMN_GROUPS=32" "KILN_GPU_COLUMN_GROUPS=32 KILN_COLUMN_SPLIT_OUTPUTS=32" \
               "KILN_GPU_COLUMN_GROUPS=8 KILN_COLUMN_SPLIT_OUTPUTS=128" "KILN_GPU_COLUMN_GROUPS=8 KILN_COLUMN_SPLIT_OUTPUTS=256"; do
        env $v timeout 60 bin/anchor_bench --device $dev --only W4b 2>&1 | grep -E "^W4b" | grep -v realize | sed "s/^/[$dev, $v] /" | cut -c1-150
      done
    done
  done
}

# On an H200, the final build: the copy ceiling, W4 chained / unchained and W4b's new column
# defaults against the old ones (16 groups, split to 64) alternated, then the suites and W1-W6.
call6() {
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  OUT=$OUT/anchors timeout 100 bash anchors/run_all.sh A 2>&1 | grep -E "^A copy"
  w4_alternated
  for rep in 1 2; do
    for dev in vulkan cuda; do
      for v in "X=default" "KILN_GPU_COLUMN_GROUPS=16 KILN_COLUMN_SPLIT_OUTPUTS=64"; do
        env $v timeout 60 bin/anchor_bench --device $dev --only W4b 2>&1 | grep -E "^W4b" | grep -v realize | sed "s/^/[$dev, $v] /" | cut -c1-150
      done
    done
  done
  call3
}

# On an H200, an experiment build: column tiles reading 16 bytes per lane (4 outputs each) against
# the committed 4-byte tiles (KILN_GPU_COLUMN_VEC4=0), with more chunks and fewer groups beside,
# twice each on vulkan and cuda; the reduction tests first.
call7() {
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  for dev in cuda vulkan; do
    echo "ops_test Chain.*:Reduce.* on $dev"; KILN_DEVICE=$dev timeout 100 bin/ops_test --gtest_filter='Chain.*:Reduce.*' 2>&1 | grep -E "FAILED|Failure|PASSED" | head -5
  done
  echo "vulkan_test chained (validation layer)"; KILN_DEVICE=vulkan KILN_VULKAN_VALIDATION=1 timeout 100 bin/vulkan_test --gtest_filter='*Chain*' 2>&1 | grep -E "FAILED|Failure|PASSED" | head
  for rep in 1 2; do
    for dev in vulkan cuda; do
      for v in "X=vec4" "KILN_GPU_COLUMN_VEC4=0" "KILN_GPU_COLUMN_GROUPS=8 KILN_COLUMN_SPLIT_OUTPUTS=512" \
               "KILN_GPU_COLUMN_GROUPS=16 KILN_COLUMN_SPLIT_OUTPUTS=256" "KILN_COLUMN_SPLIT_OUTPUTS=256"; do
        env $v timeout 60 bin/anchor_bench --device $dev --only W4b 2>&1 | grep -E "^W4b" | grep -v realize | sed "s/^/[$dev, $v] /" | cut -c1-150
      done
    done
  done
}

n=${1:?call number}
call$n 2>&1 | tee $OUT/call$n.log
