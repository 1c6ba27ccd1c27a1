#!/usr/bin/env bash
# On the GPU machine, from the repo root, with a bundle carried (bench/gpu/bundle.sh with
# onnx_bench among its targets, and the models bench/onnx/speed.py wrote copied to
# <bundle>/onnx_models): ONNX models end to end (issue 12's speed bench) on cuda and vulkan with
# bench/onnx_bench, and the same PyTorch models in PyTorch (bench/onnx/torch_speed.py: eager and
# torch.compile with CUDA graphs), in one call. Output under $OUT (default <bundle>/out).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
B=$ROOT/${KILN_BUNDLE:-bundle-att}
# run_on_gpu.sh's environment (NVRTC, libcuda, the Vulkan loader and NVIDIA's ICD) without its sections.
sed -n '/^vk_perf()/,$d; p' "$B/run_on_gpu.sh" | sed "s|^HERE=.*|HERE=$B|" > /tmp/kiln_prelude.sh
. /tmp/kiln_prelude.sh > /dev/null 2>&1
BIN=$B/bin
OUT=${OUT:-$B/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | tee "$OUT/env.txt"
for dev in cuda vulkan; do
  echo "--- onnx_bench on $dev"
  timeout 240 "$BIN/onnx_bench" --device "$dev" --iters 200 --results "$OUT/onnx_$dev.jsonl" "$B"/onnx_models/*.onnx 2>&1 | grep -v "^kiln:"
done
echo "--- PyTorch"
timeout 240 python3 "$ROOT/bench/onnx/torch_speed.py" --device cuda --iters 200 --results "$OUT/torch.jsonl" 2>&1 | grep -v Warning | tail -8
