#!/usr/bin/env bash
# On the GPU machine, from the repo root, with a bundle carried (bench/gpu/bundle.sh; KILN_BUNDLE
# names it, default bundle-att): the pre-Hopper tensor-core contraction (cp.async + ldmatrix +
# mma.sync, codegen/c_family/contraction_sm80.cc) checked and timed in one call. On a Hopper GPU
# the sm_90a path is switched off (KILN_CUDA_SM90_GEMM=0) so that contractions take it, as they
# would on an A100 or L4. Sections (default: tests sanit bench):
#   tests   cuda_test GemmSm80*, ops_test Matmul*, Conv*, Attention*, Jit* on cuda
#   sanit   compute-sanitizer memcheck and racecheck over GemmSm80Run.*
#   bench   the bf16 matmul sweep and W5 with the pipelined kernel, with the register-staged
#           kernel it replaces (KILN_CUDA_CP_ASYNC=0), and on the sm_90a path, beside torch.mm
# Output under $OUT (default <bundle>/out).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
B=$ROOT/${KILN_BUNDLE:-bundle-att}
. "$HERE/gpu_env.sh" "$B"
SWEEP=${KILN_MM_SWEEP:-MM4096,MM8192,MM8192x8192x16384,MM16x8192x8192,MM128x8192x8192,BMM64x1024x1024x128}
T0=$(date +%s)
stamp() { echo "[gemm_sm80_run] $1 at +$(( $(date +%s) - T0 )) s"; }
for s in ${*:-tests sanit bench}; do
  stamp "$s"
  case $s in
    tests)
      nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv 2>&1 | tee "$OUT/env.txt"
      {
        timeout 300 "$BIN/cuda_test" --gtest_filter='GemmSm80*' --gtest_brief=1
        echo "cuda_test exit $?"
        KILN_CUDA_SM90_GEMM=0 KILN_DEVICE=cuda KILN_DEBUG=2 timeout 300 "$BIN/ops_test" \
          --gtest_filter='Matmul*:Conv*:Attention*:Jit*' --gtest_brief=1 2>&1 | grep -v "^kiln: \(fus\|realize\|compile\)"
        echo "ops_test exit ${PIPESTATUS[0]}"
      } > "$OUT/tests.log" 2>&1
      grep -E "^\[  (FAILED|PASSED|SKIPPED) |exit [0-9]|Failure" "$OUT/tests.log" | sort | uniq -c | sort -rn | head -30
      grep -oE "contraction( sm_80)?: [^;(]*" "$OUT/tests.log" | sort | uniq -c | head
      ;;
    sanit)
      for tool in memcheck racecheck; do
        timeout 240 compute-sanitizer --tool "$tool" "$BIN/cuda_test" --gtest_filter='GemmSm80Run.*' --gtest_brief=1 \
          > "$OUT/sanitizer_$tool.log" 2>&1
        echo "$tool exit $?: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED" "$OUT/sanitizer_$tool.log" | tr '\n' ' ')"
      done
      ;;
    bench)
      {
        for variant in cp_async registers sm90a; do
          case $variant in
            cp_async) env=(KILN_CUDA_SM90_GEMM=0) ;;
            registers) env=(KILN_CUDA_SM90_GEMM=0 KILN_CUDA_CP_ASYNC=0) ;;
            sm90a) env=() ;;
          esac
          env "${env[@]}" timeout 240 "$BIN/anchor_bench" --device cuda --only "$SWEEP,W5" \
            --results "$OUT/results_$variant.jsonl" | sed -E "s/^((B?MM|W)[0-9x]+) /\\1-$variant /"
        done
        timeout 200 python3 "$HERE/mm_sweep_torch.py" ${SWEEP//,/ }
      } 2>&1 | tee "$OUT/bench.log" | grep -E "^(B?MM|W5|torch|anchor_bench)|TFLOP" | cut -c1-220 | head -60
      ;;
  esac
done
stamp done
