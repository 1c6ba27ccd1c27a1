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

# W4b with a column tile's groups loading U positions before folding them (KILN_GPU_COLUMN_UNROLL),
# U = 1 (as committed), 2, 4, 8 alternated twice on cuda and vulkan; the copy ceiling and W4a
# beside them; then the reduction tests with U = 4 on both devices.
w4b_unroll() {
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  OUT=$OUT/anchors bash anchors/run_all.sh A > /dev/null 2>&1; tail -4 $OUT/anchors/A_ceil.log
  for rep in 1 2; do
    for dev in cuda vulkan; do
      for u in 1 2 4 8; do
        KILN_GPU_COLUMN_UNROLL=$u timeout 120 bin/anchor_bench --device $dev --only W4a,W4b 2>&1 \
          | grep -E "^W4" | grep -v realize | sed "s/^/[$dev, U=$u] /" | cut -c1-150
      done
    done
  done
  for dev in cuda vulkan; do
    KILN_GPU_COLUMN_UNROLL=4 KILN_DEVICE=$dev KILN_VULKAN_VALIDATION=1 timeout 600 bin/ops_test --gtest_brief=1 \
      --gtest_filter='Reduce.*:Chain.*:Softmax*:LayerNorm*:Norm*' 2>&1 | tail -2 | sed "s/^/[$dev ops_test U=4] /"
  done
}

# W4b's column-tile shape around the defaults (groups of 32 threads per tile, outputs per
# multiprocessor below which the rows are split), with 4 groups, which earlier sweeps left out;
# alternated twice on vulkan and cuda, the copy ceiling first.
w4b_shapes() {
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  OUT=$OUT/anchors bash anchors/run_all.sh A > /dev/null 2>&1; grep "A copy" $OUT/anchors/A_ceil.log | head -2
  for rep in 1 2; do
    for dev in vulkan cuda; do
      for gs in 8:128 4:64 4:128 4:256 8:64 8:256 16:128; do
        KILN_GPU_COLUMN_GROUPS=${gs%%:*} KILN_COLUMN_SPLIT_OUTPUTS=${gs##*:} timeout 120 bin/anchor_bench --device $dev --only W4b 2>&1 \
          | grep -E "^W4b" | grep -v realize | sed "s/^/[$dev, groups:split=$gs] /" | cut -c1-130
      done
    done
  done
}

case "$1" in
  3) w4b_shapes > $OUT/call3.log 2>&1 ;;
  1) suites > $OUT/call1.log 2>&1 ;;
  2) w4b_unroll > $OUT/call2.log 2>&1 ;;
esac
cat $OUT/call$1.log
