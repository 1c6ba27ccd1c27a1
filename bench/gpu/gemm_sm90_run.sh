#!/usr/bin/env bash
# On the GPU machine, from the repo root, with bundle-gemm/ carried: the Hopper contraction path's
# checks and numbers in one call. Sections (default: all, in this order):
#   tests   cuda_test's GemmSm90* and CudaCompiler/graph tests, ops_test's Matmul.* on cuda
#   bench   anchor_bench W5 (sm_90a path, then KILN_CUDA_SM90_GEMM=0 for the mma.sync kernel),
#           MM4096, MM8192; torch.mm on the same shapes and torch.compile W5 (anchors' wl_torch.py)
#   sanit   compute-sanitizer memcheck and racecheck over GemmSm90Run.EveryEpilogue
# Output under $OUT (default bundle-gemm/out).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$HERE/bin
OUT=${OUT:-$HERE/out}
mkdir -p "$OUT"
. "$HERE/gpu_env.sh" "$HERE"
T0=$(date +%s)
stamp() { echo "[gemm_sm90_run] $1 at +$(( $(date +%s) - T0 )) s"; }
for s in ${*:-tests bench sanit}; do
  stamp "$s"
  case $s in
    tests)
      nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv 2>&1 | tee "$OUT/env.txt"
      cat "$HERE/MANIFEST" >> "$OUT/env.txt"
      # A first quick run: a hung kernel (a pipeline deadlock) stops the whole call here.
      KILN_DEBUG=2 timeout 90 "$BIN/cuda_test" --gtest_filter='GemmSm90Run.RaggedShapes' > "$OUT/first.log" 2>&1
      rc=$?
      echo "first GemmSm90Run.RaggedShapes exit $rc"; grep -E "Failure|FAILED|OK \]|error" "$OUT/first.log" | head -20
      if [ $rc -eq 124 ]; then echo "HUNG: stopping"; exit 1; fi
      {
        KILN_DEBUG=2 timeout 200 "$BIN/cuda_test" --gtest_filter='GemmSm90*:CudaCompiler*:CudaGraph*:CudaKernels.Bench*' 2>&1 |
          grep -v "^kiln: \(fus\|realize\|compile\)"
        echo "cuda_test exit ${PIPESTATUS[0]}"
        KILN_DEVICE=cuda timeout 180 "$BIN/ops_test" --gtest_filter='Matmul*:Jit*' --gtest_brief=1
        echo "ops_test exit $?"
      } > "$OUT/tests.log" 2>&1
      grep -E "^\[  (FAILED|PASSED|SKIPPED) |exit [0-9]|sm_90a|Failure" "$OUT/tests.log" | sort | uniq -c | sort -rn | head -40
      ;;
    bench)
      export ANCHOR_RESULTS=$OUT/results.jsonl
      {
        timeout 200 "$BIN/anchor_bench" --device cuda --only W5,MM4096,MM8192 --results "$OUT/results.jsonl"
        KILN_CUDA_SM90_GROUP=16 timeout 120 "$BIN/anchor_bench" --device cuda --only W5,MM8192 | sed 's/^\(W5\|MM8192\) /\1-group16 /'
        KILN_CUDA_SM90_GEMM=0 timeout 120 "$BIN/anchor_bench" --device cuda --only W5 | sed 's/^W5 /W5-mma.sync /'
        KILN_CUDA_SM90_BN=128 timeout 120 "$BIN/anchor_bench" --device cuda --only MM8192 | sed 's/^MM8192 /MM8192-bn128 /'
        timeout 120 python3 "$HERE/mm_sweep_torch.py" 4096 8192
        timeout 200 python3 -u "$HERE/anchors/wl_torch.py" W5
      } 2>&1 | tee "$OUT/bench.log" | grep -E "^(W5|MM|torch|anchor_bench)|TFLOPs|W5 " | cut -c1-260 | head -50
      ;;
    regress)
      # Everything else on cuda: the whole op and fusion suites and the differential fuzzer.
      {
        KILN_DEVICE=cuda timeout 300 "$BIN/ops_test" --gtest_brief=1; echo "ops_test exit $?"
        KILN_DEVICE=cuda timeout 200 "$BIN/passes_test" --gtest_brief=1; echo "passes_test exit $?"
        [ -x "$BIN/kiln_fuzz" ] && { timeout 200 "$BIN/kiln_fuzz" --count 300 --device cuda; echo "kiln_fuzz exit $?"; }
      } > "$OUT/regress.log" 2>&1
      grep -E "exit [0-9]|^\[  FAILED  \]|PASSED" "$OUT/regress.log" | sort | uniq -c | head -30; tail -3 "$OUT/regress.log"
      ;;
    prof)
      # One 4096^3 kernel under Nsight Compute: tensor pipe use, memory, warp stalls.
      timeout 240 ncu --kernel-name regex:kiln_k0_dot --launch-count 1 --section SpeedOfLight \
        --section MemoryWorkloadAnalysis --section WarpStateStats --section ComputeWorkloadAnalysis \
        --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_gmma.sum \
        "$BIN/anchor_bench" --device cuda --only MM4096 > "$OUT/ncu_mm4096.txt" 2>&1
      echo "ncu exit $?"; grep -E "Throughput|Duration|hmma|gmma|Stall|L2|DRAM|Issue|Warp Cycles" "$OUT/ncu_mm4096.txt" | head -40
      ;;
    variants)
      # Pipeline variants, each checked (GemmSm90Run) then timed beside the default, same call.
      for v in "default" "KILN_CUDA_SM90_BK=32" "KILN_CUDA_SM90_WAIT=0" "KILN_CUDA_SM90_BK=32 KILN_CUDA_SM90_WAIT=0"; do
        e=""; [ "$v" = default ] || e=$v
        env $e timeout 120 "$BIN/cuda_test" --gtest_filter='GemmSm90Run.*' --gtest_brief=1 > "$OUT/variant.log" 2>&1
        echo "[$v] GemmSm90Run exit $? $(grep -E 'PASSED|FAILED' "$OUT/variant.log" | tr '\n' ' ')"
        env $e timeout 150 "$BIN/anchor_bench" --device cuda --only MM4096,MM8192,W5 2>&1 | grep "jit" | sed "s|^|[$v] |" | cut -c1-150
      done 2>&1 | tee "$OUT/variants.log"
      ;;
    sanit)
      for tool in memcheck racecheck; do
        timeout 200 compute-sanitizer --tool $tool --error-exitcode 3 "$BIN/cuda_test" \
          --gtest_filter='GemmSm90Run.EveryEpilogue' > "$OUT/sanitizer_$tool.log" 2>&1
        echo "compute-sanitizer $tool exit $?"; tail -4 "$OUT/sanitizer_$tool.log"
      done
      ;;
  esac
done
stamp done
