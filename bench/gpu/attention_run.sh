#!/usr/bin/env bash
# On the GPU machine, from the repo root, with a bundle carried (KILN_BUNDLE, default bundle-att):
# the fused-attention checks and numbers in one call. Sections (default: tests bench sanit):
#   tests   the attention suites on cuda (values against the interpreter; which kernel ran, from
#           KILN_DEBUG=2) in each sm_90a schedule and on the mma.sync kernel, a first short run
#           that stops the call if a kernel hangs
#   bench   anchor_bench W9, W9n (no mask) and W8 (each schedule; W9 on the mma.sync kernel too), then torch
#           (SDPA, torch.compile) on the same shapes
#   sanit   compute-sanitizer memcheck and racecheck over the attention suite's smaller cases
#   ncu     Nsight Compute on one W9 attention kernel (speed of light, pipes, warp stalls), clocks
#           left alone
#   regress the whole op and fusion suites on cuda, cuda_test, the AOT suites on cuda
#   aot     aot_load_bench on cuda (load vs JIT cold/warm; an older GPU's section through PTX)
#   w16     anchor_bench W1-W6 and the host overhead (kiln only: a regression check)
# Output under $OUT (default <bundle>/out).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
B=$ROOT/${KILN_BUNDLE:-bundle-att}
. "$HERE/gpu_env.sh" "$B"
T0=$(date +%s)
stamp() { echo "[attention_run] $1 at +$(( $(date +%s) - T0 )) s"; }
for s in ${*:-tests bench sanit}; do
  stamp "$s"
  case $s in
    tests)
      nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv 2>&1 | tee "$OUT/env.txt"
      KILN_DEVICE=cuda KILN_DEBUG=2 timeout 60 "$BIN/ops_test" --gtest_filter='Attention.EpilogueAfterAttention' > "$OUT/first.log" 2>&1
      rc=$?
      echo "first Attention.EpilogueAfterAttention exit $rc"; grep -E "Failure|FAILED|OK \]|attention" "$OUT/first.log" | cut -c1-240 | head -12
      if [ $rc -eq 124 ]; then echo "HUNG: stopping"; exit 1; fi
      {
        KILN_DEVICE=cuda KILN_DEBUG=2 timeout 240 "$BIN/ops_test" --gtest_filter='Attention*'
        echo "ops_test exit $?"
        KILN_DEVICE=cuda KILN_DEBUG=2 timeout 120 "$BIN/passes_test" --gtest_filter='Attention*'
        echo "passes_test exit $?"
        for sch in plain pingpong; do
          KILN_CUDA_SM90_ATTENTION_SCHEDULE=$sch KILN_DEVICE=cuda KILN_DEBUG=2 timeout 240 "$BIN/ops_test" --gtest_filter='Attention*'
          echo "ops_test ($sch schedule) exit $?"
        done
        KILN_CUDA_SM90_ATTENTION=0 KILN_DEVICE=cuda KILN_DEBUG=2 timeout 240 "$BIN/ops_test" --gtest_filter='Attention*'
        echo "ops_test (mma.sync kernel) exit $?"
        KILN_CUDA_SM90_ATTENTION_CLUSTER=2 KILN_DEVICE=cuda KILN_DEBUG=2 timeout 240 "$BIN/ops_test" --gtest_filter='Attention*'
        echo "ops_test (clusters of 2) exit $?"
      } > "$OUT/tests.log" 2>&1
      grep -E "^\[  (FAILED|PASSED|SKIPPED) |exit [0-9]|Failure" "$OUT/tests.log" | head -30
      grep -oE "attention( sm_90a)?: [^;]*" "$OUT/tests.log" | sed 's/[0-9]* blocks/N blocks/' | sort | uniq -c | head -24
      ;;
    bench)
      {
        timeout 240 "$BIN/anchor_bench" --device cuda --only W9,W9n,W8 --results "$OUT/results.jsonl"
        for sch in plain pingpong; do
          KILN_CUDA_SM90_ATTENTION_SCHEDULE=$sch timeout 120 "$BIN/anchor_bench" --device cuda --only W9,W8 | sed "s/^W\([89]\) /W\1-$sch /"
        done
        KILN_CUDA_SM90_ATTENTION=0 timeout 120 "$BIN/anchor_bench" --device cuda --only W9 | sed 's/^W9 /W9-mma.sync /'
        timeout 240 python3 "$HERE/attention_torch.py" W9 W9n W8
      } 2>&1 | tee "$OUT/bench.log" | grep -E "^(W8|W9|anchor_bench)|TFLOP" | cut -c1-260 | head -40
      ;;
    sanit)
      for tool in memcheck racecheck; do
        KILN_DEVICE=cuda timeout 200 compute-sanitizer --tool $tool --error-exitcode 3 "$BIN/ops_test" \
          --gtest_filter='Attention.MasksBroadcastAndScale:Attention.EpilogueAfterAttention:Attention.RowWithNothingToAttendToIsNaN:Attention.LongKeysRaggedQueriesAndPaddedRows' \
          > "$OUT/sanitizer_$tool.log" 2>&1
        echo "compute-sanitizer $tool exit $?"; tail -4 "$OUT/sanitizer_$tool.log"
      done
      ;;
    ncu)
      timeout 300 ncu --clock-control none --kernel-name regex:attention --launch-skip 3 --launch-count 1 \
        --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
        --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats \
        "$BIN/anchor_bench" --device cuda --only W9 > "$OUT/ncu_w9.txt" 2>&1
      echo "ncu exit $?"
      grep -E "Duration|Throughput|Pipe|Issue|Stall|Warp Cycles|Eligible|Active Warps|Registers|Occupancy|Executed Ipc|L2 Hit|Mem Busy|Max Bandwidth" "$OUT/ncu_w9.txt" | head -60
      ;;
    regress)
      {
        KILN_DEVICE=cuda timeout 300 "$BIN/ops_test" --gtest_brief=1; echo "ops_test exit $?"
        KILN_DEVICE=cuda timeout 200 "$BIN/passes_test" --gtest_brief=1; echo "passes_test exit $?"
        timeout 200 "$BIN/cuda_test" --gtest_brief=1 --gtest_filter='-CudaKernels.OpAndFusionSuitesCompileForSm90'; echo "cuda_test exit $?"
        KILN_DEVICE=cuda KILN_DEBUG=1 timeout 200 "$BIN/aot_test" --gtest_brief=1; echo "aot_test exit $?"
        KILN_DEVICE=cuda timeout 120 "$BIN/aot_errors_test" --gtest_brief=1; echo "aot_errors_test exit $?"
      } > "$OUT/regress.log" 2>&1
      grep -E "exit [0-9]|^\[  FAILED  \]|PASSED|driver JIT-compiles" "$OUT/regress.log" | sort | uniq -c | head -30
      ;;
    aot)
      timeout 200 "$BIN/aot_load_bench" --device cuda --repeats 5 2>&1 | tee "$OUT/aot_load.log" | grep -v '^{'
      ;;
    w16)
      timeout 200 "$BIN/anchor_bench" --device cuda --results "$OUT/results_w16.jsonl" 2>&1 | tee "$OUT/w16.log" |
        grep -E "^(W|H)[0-9a-z]* " | cut -c1-200
      ;;
  esac
done
stamp done
