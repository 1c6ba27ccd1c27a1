#!/usr/bin/env bash
# On the GPU machine, from the repo root, with a bundle carried (bench/gpu/bundle.sh; KILN_BUNDLE
# names it, default bundle-att): a change checked on cuda and on NVIDIA's Vulkan driver in one call
# (first written for params, ir/params.h). Sections (default: cuda sanit fuzz vulkan):
#   cuda     ops_test, passes_test and cuda_test on cuda
#   sanit    compute-sanitizer memcheck on cuda over $SANIT_FILTER of $SANIT_BIN
#            (default: ops_test's Params.* and Cache.*)
#   fuzz     kiln_fuzz on cuda: every case runs with its float constants and seeds lifted into params
#   compile  onnx_bench on cuda with the kernel cache off: each model's compile time and replay
#            (needs onnx_bench in the bundle and the models in <bundle>/onnx_models)
#   vulkan   vulkan_test, ops_test and passes_test on vulkan (run_on_gpu.sh's section, with its loader
#            setup; the binaries it also runs that this bundle lacks just fail to start)
# Output under $OUT (default <bundle>/out).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
B=$ROOT/${KILN_BUNDLE:-bundle-att}
. "$HERE/gpu_env.sh" "$B"
T0=$(date +%s)
stamp() { echo "[check_run] $1 at +$(( $(date +%s) - T0 )) s"; }
for s in ${*:-cuda sanit fuzz vulkan}; do
  stamp "$s"
  case $s in
    cuda)
      nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | tee "$OUT/env.txt"
      for t in ops_test passes_test cuda_test; do
        KILN_DEVICE=cuda timeout 280 "$BIN/$t" --gtest_brief=1 > "$OUT/cuda_$t.log" 2>&1
        echo "$t (cuda) exit $?: $(grep -E "^\[  (PASSED|FAILED|SKIPPED)" "$OUT/cuda_$t.log" | tr '\n' ' ')"
        grep -E "^\[  FAILED  \]" "$OUT/cuda_$t.log" | head -10
      done
      ;;
    sanit)
      KILN_DEVICE=cuda timeout 200 compute-sanitizer --tool memcheck "$BIN/${SANIT_BIN:-ops_test}" \
        --gtest_filter="${SANIT_FILTER:-Params.*:Cache.*}" --gtest_brief=1 > "$OUT/sanitizer_memcheck.log" 2>&1
      echo "memcheck exit $?: $(grep -E "ERROR SUMMARY|PASSED|FAILED" "$OUT/sanitizer_memcheck.log" | tr '\n' ' ')"
      ;;
    fuzz)
      seed=$(( $(date +%s) % 1000003 ))
      timeout 240 "$BIN/kiln_fuzz" --device cuda --seed "$seed" --count 300 > "$OUT/fuzz_cuda.log" 2>&1
      echo "kiln_fuzz --device cuda --seed $seed --count 300: exit $?"
      tail -4 "$OUT/fuzz_cuda.log"
      ;;
    compile)
      KILN_DISK_CACHE=0 timeout 240 "$BIN/onnx_bench" --device cuda --iters 50 --results "$OUT/onnx_compile_cuda.jsonl" \
        "$B"/onnx_models/*.onnx 2>&1 | grep -v "^kiln:"
      ;;
    vulkan)
      bash "$B/run_on_gpu.sh" env > "$OUT/vk_env.log" 2>&1 || true
      OUT=$OUT bash "$B/run_on_gpu.sh" vulkan > "$OUT/vk_run.log" 2>&1
      echo "run_on_gpu.sh vulkan exit $?"
      grep -E "^=== .*exit|^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]" "$OUT/tests.log" 2>/dev/null | head -30
      ;;
  esac
done
stamp done
