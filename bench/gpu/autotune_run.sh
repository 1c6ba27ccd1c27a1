#!/usr/bin/env bash
# On the GPU machine, from the repo root, with a bundle carried (bench/gpu/bundle.sh; KILN_BUNDLE
# names it, default bundle-att): autotuning (KILN_AUTOTUNE=1, replay/autotune.h) checked and
# measured in one call. Sections (default: tests bench):
#   tests   cuda_test Autotune*, GemmSm90*, GemmSm80*; ops_test Matmul*, Attention*, Jit* on cuda
#           with KILN_AUTOTUNE=1 (a fresh cache: every shape class tuned once)
#   bench   the bf16 sweep, W5, W9, W9n and W8 with the heuristics, then with KILN_AUTOTUNE=1
#           (its first call pays the tuning: first_call_s), then torch on the same shapes
#           (mm_sweep_torch.py, attention_torch.py, the anchors' wl_torch.py W5); the tuning
#           records (each candidate's time) are copied to $OUT/autotune/
# Output under $OUT (default <bundle>/out).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
B=$ROOT/${KILN_BUNDLE:-bundle-att}
. "$HERE/gpu_env.sh" "$B"
SWEEP=${KILN_MM_SWEEP:-MM4096,MM8192,MM8192x8192x16384,MM16x8192x8192,MM128x8192x8192,BMM64x1024x1024x128}
T0=$(date +%s)
stamp() { echo "[autotune_run] $1 at +$(( $(date +%s) - T0 )) s"; }
for s in ${*:-tests bench}; do
  stamp "$s"
  case $s in
    tests)
      nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv 2>&1 | tee "$OUT/env.txt"
      {
        timeout 300 "$BIN/cuda_test" --gtest_filter='Autotune*:GemmSm90*:GemmSm80*' --gtest_brief=1
        echo "cuda_test exit $?"
        KILN_CACHE_DIR=$(mktemp -d /tmp/kiln-tune.XXXXXX) KILN_AUTOTUNE=1 KILN_DEVICE=cuda KILN_DEBUG=1 timeout 400 \
          "$BIN/ops_test" --gtest_filter='Matmul*:Attention*:Jit*' --gtest_brief=1 2>&1 | grep -v "^kiln: \(realize\|compiled\)"
        echo "ops_test (autotuned) exit ${PIPESTATUS[0]}"
      } > "$OUT/tests.log" 2>&1
      grep -E "^\[  (FAILED|PASSED|SKIPPED) |exit [0-9]|Failure" "$OUT/tests.log" | sort | uniq -c | sort -rn | head -30
      grep -c "kiln: autotune .*chose" "$OUT/tests.log"
      ;;
    bench)
      {
        timeout 300 "$BIN/anchor_bench" --device cuda --only "$SWEEP,W5,W9,W9n,W8" --results "$OUT/results_heuristic.jsonl" |
          sed -E "s/^((B?MM|W)[0-9xn]+) /\\1-heuristic /"
        KILN_AUTOTUNE=1 KILN_DEBUG=1 timeout 400 "$BIN/anchor_bench" --device cuda --only "$SWEEP,W5,W9,W9n,W8" \
          --results "$OUT/results_autotuned.jsonl" 2>"$OUT/autotune_debug.log" | sed -E "s/^((B?MM|W)[0-9xn]+) /\\1-autotuned /"
        mkdir -p "$OUT/autotune" && cp -r "$KILN_CACHE_DIR/autotune/." "$OUT/autotune/" 2>/dev/null
        timeout 200 python3 "$HERE/mm_sweep_torch.py" ${SWEEP//,/ }
        timeout 200 python3 -u "$B/anchors/wl_torch.py" W5
        timeout 240 python3 "$HERE/attention_torch.py" W9 W9n W8
      } 2>&1 | tee "$OUT/bench.log" | grep -E "^((B?MM|W)[0-9xn]+-(heuristic|autotuned) cuda jit|torch|anchor_bench)|TFLOP/s$|ms ->" | cut -c1-200 | head -60
      grep "chose" "$OUT/autotune_debug.log" | cut -c1-260
      ;;
  esac
done
stamp done
