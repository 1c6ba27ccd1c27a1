#!/usr/bin/env bash
# On the GPU machine, from the repo root, with a bundle carried (bench/gpu/bundle.sh; KILN_BUNDLE
# names it, default bundle-att): TF32 matmuls (kiln::MatmulPrecision::kTf32) checked and timed in
# one call. Sections (default: tests sanit bench):
#   tests   ops_test's Matmul*, MatmulPrecision*, Conv* and Jit* on cuda; cuda_test's CudaKernels.Tf32*,
#           CudaDevice*, CudaGraph*
#   sanit   compute-sanitizer memcheck and racecheck over MatmulPrecision* on cuda
#   bench   float32 matmuls (anchor_bench FMM*) exact and with KILN_MATMUL_PRECISION=tf32, the bf16
#           MM4096 beside them, and torch.mm on the same shapes exact and with allow_tf32
# Output under $OUT (default <bundle>/out).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
B=$ROOT/${KILN_BUNDLE:-bundle-att}
. "$HERE/gpu_env.sh" "$B"
SWEEP=${KILN_FMM_SWEEP:-FMM4096,FMM8192,FMM16x8192x8192}
T0=$(date +%s)
stamp() { echo "[tf32_run] $1 at +$(( $(date +%s) - T0 )) s"; }
for s in ${*:-tests sanit bench}; do
  stamp "$s"
  case $s in
    tests)
      nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv 2>&1 | tee "$OUT/env.txt"
      {
        KILN_DEVICE=cuda KILN_DEBUG=2 timeout 240 "$BIN/ops_test" --gtest_filter='Matmul*:MatmulPrecision*:Conv*:Jit*' \
          --gtest_brief=1 2>&1 | grep -v "^kiln: \(fus\|realize\|compile\)"
        echo "ops_test exit ${PIPESTATUS[0]}"
        timeout 200 "$BIN/cuda_test" --gtest_filter='CudaKernels.Tf32*:CudaDevice*:CudaGraph*' --gtest_brief=1
        echo "cuda_test exit $?"
      } > "$OUT/tests.log" 2>&1
      grep -E "^\[  (FAILED|PASSED|SKIPPED) |exit [0-9]|Failure" "$OUT/tests.log" | sort | uniq -c | sort -rn | head -30
      grep -oE "contraction: tensor cores[^;]*" "$OUT/tests.log" | sort | uniq -c | head
      ;;
    sanit)
      for tool in memcheck racecheck; do
        KILN_DEVICE=cuda timeout 150 compute-sanitizer --tool "$tool" "$BIN/ops_test" \
          --gtest_filter='MatmulPrecision*' --gtest_brief=1 > "$OUT/sanitizer_$tool.log" 2>&1
        echo "$tool exit $?: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED" "$OUT/sanitizer_$tool.log" | tr '\n' ' ')"
      done
      ;;
    bench)
      {
        timeout 200 "$BIN/anchor_bench" --device cuda --only "FMM4096,MM4096" --results "$OUT/results.jsonl" |
          sed -E "s/^(F?MM[0-9x]+) /\\1-exact /"
        KILN_MATMUL_PRECISION=tf32 timeout 200 "$BIN/anchor_bench" --device cuda --only "$SWEEP" --results "$OUT/results.jsonl" |
          sed -E "s/^(FMM[0-9x]+) /\\1-tf32 /"
        timeout 200 python3 "$HERE/mm_sweep_torch.py" ${SWEEP//,/ } MM4096
      } 2>&1 | tee "$OUT/bench.log" | grep -E "^(F?MM|torch|anchor_bench)|TFLOP" | cut -c1-220 | head -40
      ;;
  esac
done
stamp done
