#!/usr/bin/env bash
# On the GPU machine, from the repo root, with a bundle carried (bench/gpu/bundle.sh;
# KILN_BUNDLE names it, default bundle-att): the Hopper contraction path's checks and numbers in
# one call. Sections (default: tests bench sanit):
#   tests    a first short run that stops the call if a kernel hangs; cuda_test's GemmSm90*,
#            CudaCompiler*, CudaGraph*; ops_test's Matmul*, Jit*, Attention* on cuda
#   bench    the bf16 sweep (anchor_bench MM*, BMM*, W5) with the default configuration, then
#            without clusters (KILN_CUDA_SM90_CLUSTER=1) and with the epilogue stored straight
#            from registers (KILN_CUDA_SM90_STAGED=0), and ping-pong (KILN_CUDA_SM90_SCHEDULE=pingpong);
#            torch.mm/bmm on the same shapes and
#            torch.compile W5 (the anchors' wl_torch.py)
#   sanit    compute-sanitizer memcheck and racecheck over every tile width with and without clusters
#   regress  the whole op and fusion suites on cuda and 300 fuzz graphs
#   prof     one 4096^3 kernel under Nsight Compute
# Output under $OUT (default <bundle>/out).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
B=$ROOT/${KILN_BUNDLE:-bundle-att}
. "$HERE/gpu_env.sh" "$B"
SWEEP=${KILN_MM_SWEEP:-MM4096,MM8192,MM8192x8192x16384,MM16x8192x8192,MM128x8192x8192,BMM64x1024x1024x128}
T0=$(date +%s)
stamp() { echo "[gemm_sm90_run] $1 at +$(( $(date +%s) - T0 )) s"; }
for s in ${*:-tests bench sanit}; do
  stamp "$s"
  case $s in
    tests)
      nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv 2>&1 | tee "$OUT/env.txt"
      cat "$B/MANIFEST" >> "$OUT/env.txt"
      # A first quick run: a hung kernel (a pipeline deadlock) stops the whole call here.
      KILN_DEBUG=2 timeout 90 "$BIN/cuda_test" --gtest_filter='GemmSm90Run.EveryTileWidthWithAndWithoutClusters' > "$OUT/first.log" 2>&1
      rc=$?
      echo "first GemmSm90Run.EveryTileWidthWithAndWithoutClusters exit $rc"
      grep -E "Failure|FAILED|OK \]|error" "$OUT/first.log" | head -20
      if [ $rc -eq 124 ]; then echo "HUNG: stopping"; exit 1; fi
      {
        KILN_DEBUG=2 timeout 200 "$BIN/cuda_test" --gtest_filter='GemmSm90*:CudaCompiler*:CudaGraph*' 2>&1 |
          grep -v "^kiln: \(fus\|realize\|compile\)"
        echo "cuda_test exit ${PIPESTATUS[0]}"
        KILN_DEVICE=cuda timeout 240 "$BIN/ops_test" --gtest_filter='Matmul*:Jit*:Attention*' --gtest_brief=1
        echo "ops_test exit $?"
      } > "$OUT/tests.log" 2>&1
      grep -E "^\[  (FAILED|PASSED|SKIPPED) |exit [0-9]|Failure" "$OUT/tests.log" | sort | uniq -c | sort -rn | head -30
      grep -oE "contraction sm_90a[^;]*" "$OUT/tests.log" | sed 's/grid over [0-9]* tiles/grid over N tiles/' | sort | uniq -c | head -20
      ;;
    bench)
      {
        timeout 300 "$BIN/anchor_bench" --device cuda --only "$SWEEP,W5" --results "$OUT/results.jsonl"
        KILN_CUDA_SM90_CLUSTER=1 timeout 200 "$BIN/anchor_bench" --device cuda --only MM4096,MM8192,BMM64x1024x1024x128,W5 |
          sed -E "s/^(B?MM[0-9x]+|W5) /\\1-nocluster /"
        KILN_CUDA_SM90_SCHEDULE=pingpong timeout 200 "$BIN/anchor_bench" --device cuda --only MM4096,MM8192,BMM64x1024x1024x128,W5 |
          sed -E "s/^(B?MM[0-9x]+|W5) /\\1-pingpong /"
        KILN_CUDA_SM90_STAGED=0 timeout 200 "$BIN/anchor_bench" --device cuda --only MM4096,BMM64x1024x1024x128,W5 |
          sed -E "s/^(B?MM[0-9x]+|W5) /\\1-unstaged /"
        timeout 200 python3 "$HERE/mm_sweep_torch.py" ${SWEEP//,/ }
        timeout 200 python3 -u "$B/anchors/wl_torch.py" W5
      } 2>&1 | tee "$OUT/bench.log" | grep -E "^(W5|B?MM|torch|anchor_bench)|TFLOPs|W5 " | cut -c1-260 | head -60
      ;;
    sanit)
      for tool in memcheck racecheck; do
        timeout 240 compute-sanitizer --tool $tool --error-exitcode 3 "$BIN/cuda_test" \
          --gtest_filter='GemmSm90Run.EveryTileWidthWithAndWithoutClusters' > "$OUT/sanitizer_$tool.log" 2>&1
        echo "compute-sanitizer $tool exit $?"; tail -4 "$OUT/sanitizer_$tool.log"
      done
      ;;
    regress)
      {
        KILN_DEVICE=cuda timeout 300 "$BIN/ops_test" --gtest_brief=1; echo "ops_test exit $?"
        KILN_DEVICE=cuda timeout 200 "$BIN/passes_test" --gtest_brief=1; echo "passes_test exit $?"
        [ -x "$BIN/kiln_fuzz" ] && { timeout 200 "$BIN/kiln_fuzz" --count 300 --device cuda; echo "kiln_fuzz exit $?"; }
      } > "$OUT/regress.log" 2>&1
      grep -E "exit [0-9]|^\[  FAILED  \]|PASSED" "$OUT/regress.log" | sort | uniq -c | head -30; tail -3 "$OUT/regress.log"
      ;;
    prof)
      timeout 240 ncu --kernel-name regex:kiln_k0_dot --launch-count 1 --section SpeedOfLight \
        --section MemoryWorkloadAnalysis --section WarpStateStats --section ComputeWorkloadAnalysis \
        --section SchedulerStats --section SourceCounters --section LaunchStats --section Occupancy \
        --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_gmma.sum \
        env ${KILN_PROF_ENV:-} "$BIN/anchor_bench" --device cuda --only MM4096 > "$OUT/ncu_mm4096.txt" 2>&1
      echo "ncu exit $?"; grep -E "Throughput|Duration|hmma|gmma|Stall|L2|DRAM|Issue|Warp Cycles" "$OUT/ncu_mm4096.txt" | head -40
      ;;
  esac
done
stamp done
