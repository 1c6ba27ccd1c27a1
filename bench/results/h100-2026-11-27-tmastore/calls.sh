#!/usr/bin/env bash
# Device calls of this folder's README: `bash calls.sh N` from the bundle folder (bundle-att/,
# carried to the GPU machine, with this file and bench/gpu/{mm_sweep_torch,attention_torch}.py
# copied beside run_on_gpu.sh); each call writes $OUT/call<N>.log.
cd "$(dirname "$0")"
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT
. ./run_on_gpu.sh --env
set +u
SWEEP=MM4096,MM8192,MM8192x8192x16384,MM16x8192x8192,MM128x8192x8192,BMM64x1024x1024x128
f() { grep -E "^\[  FAILED|Failure|PASSED|tests ran|Expected|Which|HUNG" | head -20; }

# The Hopper GEMM's epilogue stored by TMA (cp.async.bulk.tensor from swizzled shared-memory
# chunks) instead of 16-byte st.global: a first run that stops the call if a kernel hangs, the
# GEMM and op suites on cuda, then the sweep, W5 and W8 with TMA stores (default) and without
# (KILN_CUDA_SM90_TMA_STORE=0), twice in alternation, and torch in the same call.
call1() {
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  timeout 120 bin/cuda_test --gtest_filter='GemmSm90Run.EveryTileWidthWithAndWithoutClusters' > $OUT/first.log 2>&1
  rc=$?; echo "first run exit $rc"; f < $OUT/first.log
  if [ $rc -eq 124 ]; then echo HUNG; return 1; fi
  timeout 200 bin/cuda_test --gtest_filter='GemmSm90*:CudaCompiler*:CudaGraph*:Autotune*:SymbolicKernels*' 2>&1 | f | sed "s/^/[cuda_test] /"
  KILN_DEVICE=cuda timeout 200 bin/ops_test --gtest_filter='Matmul*:Jit*:Attention*:Symbolic*' 2>&1 | f | sed "s/^/[ops_test] /"
  echo "--- bench (kiln: TMA stores, then 16-byte stores, twice; then torch)"
  for rep in 1 2; do
    timeout 150 bin/anchor_bench --device cuda --only "$SWEEP,W5,W8" 2>&1 | grep -E "^(B?MM|W[58])" | grep -v realize | cut -c1-120 | sed "s/^/[tma $rep] /"
    KILN_CUDA_SM90_TMA_STORE=0 timeout 150 bin/anchor_bench --device cuda --only "$SWEEP,W5,W8" 2>&1 | grep -E "^(B?MM|W[58])" | grep -v realize | cut -c1-120 | sed "s/^/[st.global $rep] /"
  done
  timeout 120 python3 mm_sweep_torch.py ${SWEEP//,/ } 2>&1 | grep -v RESULT
  timeout 120 python3 -u anchors/wl_torch.py W5 2>&1 | grep -E "W5" | grep -v RESULT | head -4
  timeout 150 python3 attention_torch.py W8 2>&1 | grep -E "^W8"
}

# How many chunk buffers the TMA epilogue keeps per warpgroup (2 or 4 forced, then the rule
# that shipped: 4 where k <= 256), against the 16-byte st.global epilogue, on the shapes where
# the epilogue weighs most; the GEMM tests again; sanitizers over the TMA-store epilogue (every
# tile width, cluster, schedule and buffer count; every epilogue); the whole cuda suites.
call2() {
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  timeout 120 bin/cuda_test --gtest_filter='GemmSm90Run.EveryTileWidthWithAndWithoutClusters' > $OUT/first.log 2>&1
  rc=$?; echo "first run exit $rc"; f < $OUT/first.log
  if [ $rc -eq 124 ]; then echo HUNG; return 1; fi
  W=BMM64x1024x1024x128,MM4096,W5
  for rep in 1 2; do
    for nb in 2 4 0; do
      KILN_CUDA_SM90_TMA_BUFFERS=$nb timeout 100 bin/anchor_bench --device cuda --only "$W" 2>&1 | grep -E "^(B?MM|W[58])" | grep -v realize | cut -c1-60 | sed "s/^/[tma buffers=$nb $rep] /"
    done
    KILN_CUDA_SM90_TMA_STORE=0 timeout 100 bin/anchor_bench --device cuda --only "$W" 2>&1 | grep -E "^(B?MM|W[58])" | grep -v realize | cut -c1-60 | sed "s/^/[st.global $rep] /"
  done
  timeout 120 bin/cuda_test --gtest_filter='GemmSm90*:Autotune*' 2>&1 | f | sed "s/^/[cuda_test] /"
  for tool in memcheck racecheck; do
    timeout 130 compute-sanitizer --tool $tool bin/cuda_test --gtest_filter='GemmSm90Run.EveryTileWidthWithAndWithoutClusters:GemmSm90Run.EveryEpilogue' 2>&1 | tail -2 | sed "s/^/[$tool] /"
  done
  KILN_DEVICE=cuda timeout 120 bin/ops_test --gtest_brief=1 2>&1 | tail -3 | sed "s/^/[cuda ops_test] /"
}

# The rule that shipped (TMA stores where k >= 512, 4 buffers for 256-wide tiles): the GEMM
# tests, memcheck and racecheck over every tile width (TMA stores forced at any k there), the
# sweep, W5 and W8 by default and with KILN_CUDA_SM90_TMA_STORE=0, twice in alternation, torch in
# the same call; the whole cuda_test.
call3() {
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  timeout 120 bin/cuda_test --gtest_filter='GemmSm90Run.EveryTileWidthWithAndWithoutClusters' > $OUT/first.log 2>&1
  rc=$?; echo "first run exit $rc"; f < $OUT/first.log
  if [ $rc -eq 124 ]; then echo HUNG; return 1; fi
  for tool in memcheck racecheck; do
    timeout 100 compute-sanitizer --tool $tool bin/cuda_test --gtest_filter='GemmSm90Run.EveryTileWidthWithAndWithoutClusters' 2>&1 | tail -2 | sed "s/^/[$tool] /"
  done
  echo "--- bench (kiln: default, then 16-byte stores, twice; then torch)"
  for rep in 1 2; do
    timeout 150 bin/anchor_bench --device cuda --only "$SWEEP,W5,W8" 2>&1 | grep -E "^(B?MM|W[58])" | grep -v realize | cut -c1-120 | sed "s/^/[default $rep] /"
    KILN_CUDA_SM90_TMA_STORE=0 timeout 150 bin/anchor_bench --device cuda --only "$SWEEP,W5,W8" 2>&1 | grep -E "^(B?MM|W[58])" | grep -v realize | cut -c1-120 | sed "s/^/[st.global $rep] /"
  done
  timeout 120 python3 mm_sweep_torch.py ${SWEEP//,/ } 2>&1 | grep -v RESULT
  timeout 120 python3 -u anchors/wl_torch.py W5 > $OUT/w5_torch.log 2>&1; grep -oE '"var": "[a-z-]+"|"ms": [0-9.]+' $OUT/w5_torch.log | paste - - | head -4
  timeout 150 python3 attention_torch.py W8 2>&1 | grep -E "^W8"
  timeout 150 bin/cuda_test --gtest_brief=1 2>&1 | tail -3 | sed "s/^/[cuda_test] /"
}

# Call 3's torch side did not run (the scripts were missing from the bundle) and its cuda_test
# ran past its time: the sweep, W5 and W8 by default again with torch in the same call, then the
# whole cuda_test.
call4() {
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  for rep in 1 2; do
    timeout 150 bin/anchor_bench --device cuda --only "$SWEEP,W5,W8" 2>&1 | grep -E "^(B?MM|W[58])" | grep -v realize | cut -c1-120 | sed "s/^/[default $rep] /"
  done
  timeout 120 python3 mm_sweep_torch.py ${SWEEP//,/ } 2>&1 | grep -v RESULT
  timeout 120 python3 -u anchors/wl_torch.py W5 > $OUT/w5_torch.log 2>&1; grep -oE '"var": "[a-z-]+"|"ms": [0-9.]+' $OUT/w5_torch.log | paste - - | head -4
  timeout 150 python3 attention_torch.py W8 2>&1 | grep -E "^W8"
  timeout 280 bin/cuda_test --gtest_brief=1 > $OUT/cuda_test.log 2>&1; echo "cuda_test exit $?"
  grep -E "^\[  (PASSED|FAILED|SKIPPED)|tests ran" $OUT/cuda_test.log | head | sed "s/^/[cuda_test] /"
}

# Like for like: torch.mm timed both as do_bench does (L2 flushed between runs) and back to back
# with CUDA events per call, as anchor_bench times kiln; kiln's sweep and W5 by default and in
# the variants the TMA stores might have changed the ranking of (2-CTA clusters, ping-pong).
call5() {
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  timeout 150 bin/anchor_bench --device cuda --only "$SWEEP,W5" 2>&1 | grep -E "^(B?MM|W[58])" | grep -v realize | cut -c1-120 | sed "s/^/[default] /"
  KILN_CUDA_SM90_CLUSTER=2 timeout 100 bin/anchor_bench --device cuda --only MM4096,MM8192,W5 2>&1 | grep -E "^(B?MM|W[58])" | grep -v realize | cut -c1-60 | sed "s/^/[cluster 2] /"
  KILN_CUDA_SM90_SCHEDULE=pingpong timeout 100 bin/anchor_bench --device cuda --only MM4096,MM8192,W5 2>&1 | grep -E "^(B?MM|W[58])" | grep -v realize | cut -c1-60 | sed "s/^/[pingpong] /"
  timeout 200 python3 mm_sweep_torch.py ${SWEEP//,/ } 2>&1 | grep -v RESULT
  timeout 150 bin/anchor_bench --device cuda --only "$SWEEP,W5" 2>&1 | grep -E "^(B?MM|W[58])" | grep -v realize | cut -c1-120 | sed "s/^/[default again] /"
}

# The SIMT contraction's threads on runs of 4 rows and columns (16-byte shared-memory reads) for
# large float32 tiles with a long k: values (the matmul suites on cuda and vulkan), then float32
# 4096^3 / 8192^3 exact on cuda and vulkan with and without (KILN_SIMT_RUNS=0), twice, and torch's
# exact float32 in the same call.
call6() {
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  for dev in cuda vulkan; do
    KILN_DEVICE=$dev timeout 200 bin/ops_test --gtest_filter='Matmul*:Jit*' 2>&1 | f | sed "s/^/[$dev ops_test] /"
  done
  for rep in 1 2; do
    for dev in cuda vulkan; do
      timeout 100 bin/anchor_bench --device $dev --only FMM4096,FMM8192 2>&1 | grep -E "^FMM" | grep -v realize | cut -c1-110 | sed "s/^/[runs $dev $rep] /"
      KILN_SIMT_RUNS=0 timeout 100 bin/anchor_bench --device $dev --only FMM4096,FMM8192 2>&1 | grep -E "^FMM" | grep -v realize | cut -c1-110 | sed "s/^/[strided $dev $rep] /"
    done
  done
  timeout 150 python3 mm_sweep_torch.py FMM4096 FMM8192 2>&1 | grep -v RESULT
}

# Two more variants of the runs: warps of 4 x 8 threads (fewer shared-memory wavefronts per
# read) and 16-deep k slices (half the barriers), float32 exact on cuda and vulkan.
call7() {
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  for rep in 1 2; do
    for dev in cuda vulkan; do
      for v in "" "KILN_SIMT_WARP_ROWS=4" "KILN_SIMT_BK=16" "KILN_SIMT_WARP_ROWS=4 KILN_SIMT_BK=16"; do
        env $v timeout 100 bin/anchor_bench --device $dev --only FMM4096,FMM8192 2>&1 | grep -E "^FMM" | grep -v realize | cut -c1-60 | sed "s/^/[$dev ${v:-default} $rep] /"
      done
    done
  done
  for v in "KILN_SIMT_WARP_ROWS=4" "KILN_SIMT_BK=16" "KILN_SIMT_WARP_ROWS=4 KILN_SIMT_BK=16"; do
    for dev in cuda vulkan; do
      env $v KILN_DEVICE=$dev timeout 100 bin/ops_test --gtest_filter='Matmul*' 2>&1 | f | sed "s/^/[$dev $v ops_test] /"
    done
  done
}

# With the TMA stores, does another variant of the Hopper kernel beat the default at 4096^3 and
# in W5? The autotuner's timings of every candidate (KILN_DEBUG=1) and the tile-order group.
call8() {
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  KILN_AUTOTUNE=1 KILN_DEBUG=1 KILN_CACHE_DIR=/tmp/kc8 timeout 200 bin/anchor_bench --device cuda --only MM4096,W5 > $OUT/autotune.log 2>&1
  grep -iE "autotun|candidate|bn=" $OUT/autotune.log | cut -c1-200 | head -40
  grep -E "^(MM|W5)" $OUT/autotune.log | grep -v realize | cut -c1-60 | sed "s/^/[tuned] /"
  for g in 4 8 16; do
    KILN_CUDA_SM90_GROUP=$g timeout 100 bin/anchor_bench --device cuda --only MM4096,W5 2>&1 | grep -E "^(MM|W5)" | grep -v realize | cut -c1-60 | sed "s/^/[group $g] /"
  done
}

# The stop's last check, from the final tree: the whole op suite on cuda and on vulkan, the GEMM
# tests, the differential fuzzer on cuda and vulkan; and an experiment (a local build reading
# KILN_X_ATTN_TREE): the Hopper attention's row max and row sum as pairwise trees instead of
# chains, W9 / W9n / W8 with and without, torch SDPA in the same call.
call9() {
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  KILN_X_ATTN_TREE=1 KILN_DEVICE=cuda timeout 100 bin/ops_test --gtest_filter='Attention*' 2>&1 | f | sed "s/^/[tree Attention] /"
  for rep in 1 2; do
    timeout 100 bin/anchor_bench --device cuda --only W9,W9n,W8 2>&1 | grep -E "^W[89]" | grep -v realize | cut -c1-60 | sed "s/^/[chains $rep] /"
    KILN_X_ATTN_TREE=1 timeout 100 bin/anchor_bench --device cuda --only W9,W9n,W8 2>&1 | grep -E "^W[89]" | grep -v realize | cut -c1-60 | sed "s/^/[trees $rep] /"
  done
  timeout 150 python3 attention_torch.py W9 W9n 2>&1 | grep -E "^W9"
  KILN_DEVICE=cuda timeout 150 bin/ops_test --gtest_brief=1 2>&1 | tail -2 | sed "s/^/[cuda ops_test] /"
  KILN_DEVICE=vulkan timeout 150 bin/ops_test --gtest_brief=1 2>&1 | tail -2 | sed "s/^/[vulkan ops_test] /"
  timeout 60 bin/kiln_fuzz --device cuda --count 100 2>&1 | tail -2 | sed "s/^/[fuzz cuda] /"
  timeout 60 bin/kiln_fuzz --device vulkan --count 60 2>&1 | tail -2 | sed "s/^/[fuzz vulkan] /"
}

# Where 4096^3's time goes now (for the next step): one kernel under Nsight Compute, the TMA-store
# epilogue and, for comparison, st.global.
call10() {
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  for v in "" "KILN_CUDA_SM90_TMA_STORE=0"; do
    env $v timeout 200 ncu --kernel-name regex:kiln_k0_dot --launch-skip 3 --launch-count 1 --section SpeedOfLight \
      --section WarpStateStats --section SchedulerStats \
      --metrics sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second,gpu__time_duration.sum \
      bin/anchor_bench --device cuda --only MM4096 > $OUT/ncu_mm4096${v:+_stglobal}.txt 2>&1
    echo "--- ${v:-TMA stores}"
    grep -E "Duration|SM Frequency|Compute \(SM\) Throughput|Memory Throughput|gmma|per_second|Stall|Issue Slots|Warp Cycles|No Eligible" $OUT/ncu_mm4096${v:+_stglobal}.txt | head -24
  done
}

# Each warp stores its own 16 rows of a chunk by TMA (a __syncwarp, no warpgroup barrier: call
# 10's top stall was the warpgroup barrier) against the warpgroup's 64 rows (a local build
# reading KILN_X_WG_STORE); racecheck and the GEMM runs with the per-warp stores.
call11() {
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  timeout 90 bin/cuda_test --gtest_filter='GemmSm90Run.EveryTileWidthWithAndWithoutClusters' > $OUT/first.log 2>&1
  rc=$?; echo "first run exit $rc"; f < $OUT/first.log
  if [ $rc -eq 124 ]; then echo HUNG; return 1; fi
  for rep in 1 2; do
    timeout 100 bin/anchor_bench --device cuda --only MM4096,MM8192,W5,W8 2>&1 | grep -E "^(MM|W[58])" | grep -v realize | cut -c1-60 | sed "s/^/[per warp $rep] /"
    KILN_X_WG_STORE=1 timeout 100 bin/anchor_bench --device cuda --only MM4096,MM8192,W5,W8 2>&1 | grep -E "^(MM|W[58])" | grep -v realize | cut -c1-60 | sed "s/^/[per warpgroup $rep] /"
  done
  timeout 100 compute-sanitizer --tool racecheck bin/cuda_test --gtest_filter='GemmSm90Run.EveryTileWidthWithAndWithoutClusters' 2>&1 | tail -1 | sed "s/^/[racecheck] /"
  timeout 90 bin/cuda_test --gtest_filter='GemmSm90Run.*' 2>&1 | f | sed "s/^/[cuda_test] /"
}

case "$1" in
1) call1 2>&1 | tee $OUT/call1.log ;;
2) call2 2>&1 | tee $OUT/call2.log ;;
3) call3 2>&1 | tee $OUT/call3.log ;;
4) call4 2>&1 | tee $OUT/call4.log ;;
5) call5 2>&1 | tee $OUT/call5.log ;;
6) call6 2>&1 | tee $OUT/call6.log ;;
7) call7 2>&1 | tee $OUT/call7.log ;;
8) call8 2>&1 | tee $OUT/call8.log ;;
9) call9 2>&1 | tee $OUT/call9.log ;;
10) call10 2>&1 | tee $OUT/call10.log ;;
11) call11 2>&1 | tee $OUT/call11.log ;;
esac
