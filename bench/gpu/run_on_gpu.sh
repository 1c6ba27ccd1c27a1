#!/usr/bin/env bash
# Runs kiln's GPU bundle (made by bench/gpu/bundle.sh) on the GPU machine, from the repo root:
#
#   bash bundle/run_on_gpu.sh [env] [tests] [vulkan] [bench] [anchors]
#   . bundle/run_on_gpu.sh --env     (from a script: libraries, Vulkan loader, ICD and layer only)
#
# Default: env tests bench anchors (about 5-8 minutes on an H100/H200; a device call allows 10,
# so split it when in doubt: `... env tests` then `... bench anchors`). Sections:
#   env      GPU, driver, libraries, whether kiln sees the device          -> env.txt
#   tests    cuda_test (the CUDA runtime on the GPU), every *_test binary with KILN_DEVICE=cuda
#            (op suite, fusion suite, ...), the differential fuzzer on cuda -> tests.log
#   coop     Vulkan's cooperative-matrix matmuls: tests, f16 matmuls and W5h beside cuda and torch
#   final    a stop's last check: vulkan_test, CUDA contraction tests, op suite and fuzzer on both
#   copyq    uploads on Vulkan's copy-engine queue: tests, op suite, fuzzer, the transfer pipeline
#   coopvar  the cooperative-matrix kernel's variants, tested and timed
#   control  issue 15: control_test on cuda (+ memcheck) and vulkan (+ validation; loops batched
#            and per trip), W10 beside torch and jax
#   dist     issue 16 (2 GPUs): dist_test on cuda:0/1 with NCCL, all_reduce bandwidth and the
#            tensor-parallel step beside torch.distributed
#   w11      W11: time to first result at batch sizes 1, 7, 64, 1000, kiln beside torch and jax
#   vkperf   Vulkan's host path and W4a/W4b/W6/H beside cuda (also the end of `vulkan`)
#   vulkan   vulkan_test, the op, pass and AOT suites with KILN_DEVICE=vulkan (not in the default
#            set). Where the machine has no Vulkan loader / GLVND, the bundle's Debian .debs
#            (bundle/gl) are unpacked into / first; the validation layer comes from bundle/vklayer
#   bench    anchor_bench W1-W6 + host overhead (jit and realize paths), W7 cold/warm first calls
#            in fresh processes                                              -> bench.log
#   anchors  ../shared/bench-anchors (torch eager/compile, jax.jit, ceilings, launch floors) in
#            the same run, then the summary table with kiln's rows beside them
# Results land in $OUT (default bundle/out), at most 8 files: env.txt tests.log bench.log
# results.jsonl summary.txt anchors_logs.tar.gz.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BIN=$HERE/bin
OUT=${OUT:-$HERE/out}
mkdir -p "$OUT"
SECTIONS=${*:-env tests bench anchors}
RESULTS=$OUT/results.jsonl
T_START=$(date +%s)
stamp() { echo "[run_on_gpu] $1 at +$(( $(date +%s) - T_START )) s"; }

# --- libraries: the bundle's own, then NVRTC 13 and the driver from the machine -------------
export LD_LIBRARY_PATH="$HERE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvrtc_dirs="/usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib"
nvrtc_dirs+=" $(python3 -c 'import glob, site; print(" ".join(p for s in site.getsitepackages() for p in glob.glob(s + "/nvidia/*/lib")))' 2>/dev/null)"
NVRTC_DIR=""
for d in $nvrtc_dirs; do
  if [ -e "$d/libnvrtc.so.13" ]; then NVRTC_DIR=$d; break; fi
done
if [ -n "$NVRTC_DIR" ]; then LD_LIBRARY_PATH+=":$NVRTC_DIR"; else echo "run_on_gpu: no libnvrtc.so.13 found (searched $nvrtc_dirs)"; fi
if ! ldconfig -p | grep -q "libcuda.so.1 "; then
  for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/local/cuda/compat; do
    if [ -e "$d/libcuda.so.1" ]; then LD_LIBRARY_PATH+=":$d"; break; fi
  done
fi

# --- Vulkan: the loader and the GLVND libraries the NVIDIA ICD needs, where the machine lacks
# them: bundle/gl holds Debian 12's .debs (bundle.sh); each whose library is missing is unpacked
# into / and ldconfig run (the device notes' recipe; the machine starts bare each time), or into a
# folder of our own on LD_LIBRARY_PATH where / is not ours to write. Then the NVIDIA ICD and the
# Khronos validation layer (bundle/vklayer, which vulkan_test turns on).
have_lib() { ldconfig -p | awk '{ print $1 }' | grep -qxF "$1"; }
declare -A GL_SONAME=([libvulkan1]=libvulkan.so.1 [libglvnd0]=libGLdispatch.so.0 [libglx0]=libGLX.so.0
  [libgl1]=libGL.so.1 [libegl1]=libEGL.so.1 [libopengl0]=libOpenGL.so.0 [libgles2]=libGLESv2.so.2)
GL_UNPACKED=""
GL_ROOT=/
if [ "$(id -u)" != 0 ] || [ ! -w /usr/lib ]; then GL_ROOT=$(mktemp -d /tmp/kiln-gl.XXXXXX); fi
for deb in "$HERE"/gl/*.deb; do
  [ -e "$deb" ] || continue
  pkg=$(basename "$deb"); pkg=${pkg%%_*}
  so=${GL_SONAME[$pkg]:-}
  if [ -n "$so" ] && have_lib "$so"; then continue; fi
  if dpkg -x "$deb" "$GL_ROOT"; then GL_UNPACKED+=" $pkg"; else echo "run_on_gpu: dpkg -x $deb $GL_ROOT failed"; fi
done
if [ -n "$GL_UNPACKED" ]; then
  if [ "$GL_ROOT" = / ]; then ldconfig; else LD_LIBRARY_PATH+=":$GL_ROOT/usr/lib/x86_64-linux-gnu"; fi
  echo "run_on_gpu: no Vulkan loader / GLVND here: unpacked$GL_UNPACKED from $HERE/gl into $GL_ROOT"
fi
if ! have_lib libvulkan.so.1 && [ ! -e "$GL_ROOT/usr/lib/x86_64-linux-gnu/libvulkan.so.1" ]; then
  LD_LIBRARY_PATH+=":$HERE/lib/fallback"
fi
if ! have_lib libGLX_nvidia.so.0 && [ -e /usr/local/nvidia/lib64/libGLX_nvidia.so.0 ] &&
   [[ ":$LD_LIBRARY_PATH:" != *":/usr/local/nvidia/lib64:"* ]]; then
  LD_LIBRARY_PATH+=":/usr/local/nvidia/lib64"
fi
if [ -z "${VK_DRIVER_FILES:-}" ] && [ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
if [ -z "${__EGL_VENDOR_LIBRARY_FILENAMES:-}" ] && [ -f /usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json ]; then
  export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
fi
# The layer's manifest names its library as ./libVkLayer_khronos_validation.so (beside itself).
if compgen -G "$HERE/vklayer/*.json" > /dev/null; then
  VK_LAYER_DIR=$(mktemp -d /tmp/kiln-vklayer.XXXXXX)
  cp "$HERE"/vklayer/*.json "$VK_LAYER_DIR/"
  for z in "$HERE"/vklayer/*.so.gz; do [ -e "$z" ] && gunzip -c "$z" > "$VK_LAYER_DIR/$(basename "${z%.gz}")"; done
  export VK_ADD_LAYER_PATH="$VK_LAYER_DIR${VK_ADD_LAYER_PATH:+:$VK_ADD_LAYER_PATH}"
fi
export LD_LIBRARY_PATH
# Each run starts with an empty kernel cache (W7 makes its own).
export KILN_CACHE_DIR=$(mktemp -d /tmp/kiln-cache.XXXXXX)
export PYTHONUNBUFFERED=1
# Sourced as `. run_on_gpu.sh --env` (a device call's own script): the environment above, no section.
if [ "${1:-}" = "--env" ]; then return 0 2>/dev/null || exit 0; fi

# Vulkan's host path (host_bench; waits spinning, the default, and blocking) and the reductions
# and replay workloads on vulkan beside cuda (issue 18).
vk_perf() {
  if [ -x "$BIN/host_bench" ]; then
    echo "--- vulkan host path (host_bench)"
    KILN_DEVICE=vulkan timeout 120 "$BIN/host_bench" --benchmark_min_time=0.3 2>&1 | tail -12
    echo "--- vulkan host path with blocking waits (KILN_VULKAN_SPIN_US=0), for comparison"
    KILN_DEVICE=vulkan KILN_VULKAN_SPIN_US=0 timeout 60 "$BIN/host_bench" --benchmark_min_time=0.3 \
      --benchmark_filter='Realize|Jit|Kernel' 2>&1 | tail -6
  fi
  echo "--- W4a, W4b, W6, H on vulkan (wall time per call), then on cuda (CUDA events)"
  timeout 150 "$BIN/anchor_bench" --device vulkan --only W4a,W4b,W6,H --results "$RESULTS" 2>&1 | grep -v "^RESULT"
  timeout 60 "$BIN/anchor_bench" --device cuda --only W4a,W4b,W6,H --results "$RESULTS" 2>&1 | grep -v "^RESULT"
}

run_test() {  # run_test <label> <timeout s> <command...>
  local label=$1 limit=$2; shift 2
  local t0=$(date +%s)
  echo "=== $label: $*"
  timeout "$limit" "$@"
  local rc=$?
  echo "=== $label: exit $rc after $(( $(date +%s) - t0 )) s"
  echo "$label exit $rc" >> "$OUT/.test_summary"
}

for s in $SECTIONS; do
  stamp "section $s start"
  case $s in
    env)
      {
        date -u; uname -a; nproc
        nvidia-smi 2>&1 | head -20
        nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv 2>&1
        cat "$HERE/MANIFEST"
        echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
        echo "nvrtc: ${NVRTC_DIR:-not found}"
        ldconfig -p | grep -E "libcuda\.so\.1|libvulkan\.so\.1|libGLdispatch\.so\.0|libGLX(_nvidia)?\.so\.0"
        echo "gl debs unpacked:${GL_UNPACKED:- none} (into $GL_ROOT)"
        echo "VK_DRIVER_FILES=${VK_DRIVER_FILES:-} VK_ADD_LAYER_PATH=${VK_ADD_LAYER_PATH:-}"
        ldd "$HERE/lib/libkiln.so" | grep -E "nvrtc|not found"
        for b in "$BIN"/*; do ldd "$b" | grep "not found" | sed "s|^|$(basename "$b"): |"; done
        "$BIN/cuda_test" --gtest_filter='CudaGraphTest.DeviceDescribesItself:Nvrtc.*' --gtest_brief=0 2>&1 | tail -15
        echo "--- vulkan (with the validation layer):"
        # The loader's own errors and warnings say why a driver or layer does not load.
        [ -x "$BIN/vulkan_test" ] && KILN_DEVICE=vulkan VK_LOADER_DEBUG=error,warn "$BIN/vulkan_test" \
          --gtest_filter='DeviceTest.TargetInfoComesFromTheDevice' --gtest_brief=0 2>&1 | tail -12
      } > "$OUT/env.txt" 2>&1
      tail -22 "$OUT/env.txt"
      ;;
    tests)
      : > "$OUT/.test_summary"
      {
        run_test cuda_test 300 "$BIN/cuda_test" --gtest_brief=1
        for t in "$BIN"/*_test; do
          name=$(basename "$t")
          case $name in cuda_test|vulkan_test) continue ;; esac
          KILN_DEVICE=cuda run_test "$name (cuda)" 400 "$t" --gtest_brief=1
        done
        if [ -x "$BIN/kiln_fuzz" ]; then
          run_test "kiln_fuzz (cuda)" 300 "$BIN/kiln_fuzz" --count 300 --device cuda
        fi
      } > "$OUT/tests.log" 2>&1
      echo "--- tests:"; cat "$OUT/.test_summary"
      grep -E "^\[  FAILED  \]" "$OUT/tests.log" | sort -u | head -40
      ;;
    vulkan)
      {
        [ -x "$BIN/vulkan_test" ] && KILN_DEVICE=vulkan run_test "vulkan_test" 300 "$BIN/vulkan_test" --gtest_brief=1
        KILN_DEVICE=vulkan run_test "ops_test (vulkan)" 400 "$BIN/ops_test" --gtest_brief=1
        KILN_DEVICE=vulkan run_test "passes_test (vulkan)" 300 "$BIN/passes_test" --gtest_brief=1
        KILN_DEVICE=vulkan run_test "aot_test (vulkan)" 300 "$BIN/aot_test" --gtest_brief=1
        echo "--- vulkan: the peaks a profile measures, and the host path"
        (cd "$OUT" && KILN_DEVICE=vulkan KILN_PROFILE="$OUT/vk_mlp.json" timeout 120 "$BIN/mlp" > /dev/null 2>&1
         grep -o '"peak GB/s": [0-9.e+]*, "peak GFLOP/s": [0-9.e+]*, "peaks from": "[^"]*"' "$OUT/vk_mlp.json" | sort -u | head -3
         rm -f "$OUT"/vk_mlp.*)
        vk_perf
      } >> "$OUT/tests.log" 2>&1
      tail -5 "$OUT/.test_summary"
      ;;
    coop)
      # Vulkan's cooperative-matrix contraction (issue 10): its tests with the validation layer,
      # the strategies the op suite's matmuls take, then f16 matmuls and W5 in f16 on vulkan
      # (cooperative matrices, then the SIMT kernel), on cuda, and torch's in the same call.
      {
        KILN_DEVICE=vulkan KILN_VULKAN_VALIDATION=1 run_test "vulkan_test GemmCoop*" 300 "$BIN/vulkan_test" \
          --gtest_filter='GemmCoop*:VulkanCompiler*'
        KILN_DEVICE=vulkan KILN_DEBUG=2 run_test "ops_test Matmul* (vulkan)" 300 "$BIN/ops_test" \
          --gtest_filter='Matmul*:Jit*:Conv*' --gtest_brief=1 2>&1 | grep -v "^kiln: \(fus\|realize\|compile\)" |
          grep -E "contraction|FAILED|PASSED|exit" | sed -E 's/^kiln: kiln_k[0-9]+_[a-z_0-9]*: //' | sort | uniq -c | sort -rn | head -20
        SHAPES=HMM4096,HMM8192,HMM16x8192x8192,HMM128x8192x8192,HBMM64x1024x1024x128
        echo "--- vulkan, cooperative matrices"
        timeout 200 "$BIN/anchor_bench" --device vulkan --only "$SHAPES,W5h" --results "$RESULTS" 2>&1 | grep -v "^RESULT"
        echo "--- vulkan, SIMT kernel (KILN_VULKAN_COOP_MATRIX=0)"
        KILN_VULKAN_COOP_MATRIX=0 timeout 200 "$BIN/anchor_bench" --device vulkan --only "HMM4096,W5h" \
          --results "$OUT/results_simt.jsonl" 2>&1 | grep -v "^RESULT"
        echo "--- cuda"
        timeout 100 "$BIN/anchor_bench" --device cuda --only "$SHAPES,W5h,W5" --results "$OUT/results_cuda.jsonl" 2>&1 | grep -v "^RESULT"
        echo "--- torch"
        timeout 150 python3 "$HERE/../bench/gpu/mm_sweep_torch.py" ${SHAPES//,/ } MM4096
        timeout 200 python3 "$HERE/anchors/wl_torch.py" W5
      } >> "$OUT/tests.log" 2>&1
      tail -5 "$OUT/.test_summary"
      ;;
    coopvar)
      # The cooperative-matrix kernel's shapes side by side (KILN_VULKAN_COOP_WARPS, _BK): each
      # checked against the interpreter, then timed; cuda's W5 in the same call.
      {
        for v in ${KILN_COOP_VARIANTS:-default KILN_VULKAN_COOP_WARPS=8 KILN_VULKAN_COOP_BK=64}; do
          v=${v//+/ }  # KILN_COOP_VARIANTS="default A=1+B=2": two variants, the second setting two variables
          [ "$v" = default ] && v=""
          echo "--- variant: ${v:-default}"
          env $v KILN_DEVICE=vulkan KILN_VULKAN_VALIDATION=1 timeout 120 "$BIN/vulkan_test" --gtest_filter='GemmCoopRun*' \
            --gtest_brief=1 2>&1 | tail -3
          env $v timeout 150 "$BIN/anchor_bench" --device vulkan --only HMM4096,HMM8192,HMM128x8192x8192,HBMM64x1024x1024x128,W5h \
            --results "$RESULTS" 2>&1 | grep -v "^RESULT"
        done
        timeout 100 "$BIN/anchor_bench" --device cuda --only HBMM64x1024x1024x128,W5h,W5 --results "$OUT/results_cuda.jsonl" 2>&1 | grep -v "^RESULT"
      } 2>&1 | tee -a "$OUT/bench.log" | grep -E "variant|PASSED|FAILED|jit" | cut -c1-150
      ;;
    split)
      # Decode-shaped products on Vulkan with this build, then with the library carried in
      # bundle-oldlib/ (the build before a change), alternating, in one call.
      {
        for round in 1 2; do
          for lib in new old; do
            echo "--- $lib library, round $round"
            if [ $lib = old ]; then pre="$HERE/../bundle-oldlib"; else pre="$HERE/lib"; fi
            LD_LIBRARY_PATH="$pre:$LD_LIBRARY_PATH" timeout 120 "$BIN/anchor_bench" --device vulkan \
              --only HMM16x8192x8192,HMM128x8192x8192,HMM32x4096x4096,MM16x8192x8192,W5h 2>&1 | grep -E " jit "
          done
        done
      } 2>&1 | tee -a "$OUT/bench.log" | cut -c1-140
      ;;
    final)
      # A stop's last check of what changed (issues 10, 18): the Vulkan runtime and contraction
      # tests with the validation layer, the CUDA contraction tests, the op suite on both
      # devices, the fuzzer on both (its matmuls reach the tensor-core kernels).
      {
        KILN_DEVICE=vulkan KILN_VULKAN_VALIDATION=1 run_test "vulkan_test" 300 "$BIN/vulkan_test" --gtest_brief=1
        run_test "cuda_test Gemm*/Autotune*/Split*" 300 "$BIN/cuda_test" --gtest_brief=1 --gtest_filter='Gemm*:Autotune*:SplitK*'
        KILN_DEVICE=cuda run_test "ops_test (cuda)" 200 "$BIN/ops_test" --gtest_brief=1
        KILN_DEVICE=vulkan run_test "ops_test (vulkan)" 200 "$BIN/ops_test" --gtest_brief=1
        run_test "kiln_fuzz cuda" 100 "$BIN/kiln_fuzz" --device cuda --count 200
        run_test "kiln_fuzz vulkan" 100 "$BIN/kiln_fuzz" --device vulkan --count 150
      } >> "$OUT/tests.log" 2>&1
      tail -6 "$OUT/.test_summary"
      ;;
    copyq)
      # Uploads on Vulkan's copy-engine queue (issue 18): its tests (the held-upload one needs the
      # queue), the fixture's tests with the queue forced on under the validation layer, the op
      # suite and the fuzzer on vulkan with it (the default without the layer), then the
      # upload-compute-download pipeline with uploads on the copy queue and on the compute queue.
      {
        KILN_DEVICE=vulkan run_test "vulkan_test TransferQueue*" 120 "$BIN/vulkan_test" --gtest_filter='TransferQueue*'
        KILN_DEVICE=vulkan KILN_VULKAN_TRANSFER_QUEUE=1 run_test "vulkan_test, copy queue under validation" 300 \
          "$BIN/vulkan_test" --gtest_brief=1 --gtest_filter='Replay*:Memory*:Cache*:Device*:Errors*:GemmCoopRun*'
        KILN_DEVICE=vulkan run_test "ops_test (vulkan, copy queue)" 400 "$BIN/ops_test" --gtest_brief=1
        [ -x "$BIN/kiln_fuzz" ] && run_test "kiln_fuzz vulkan" 150 "$BIN/kiln_fuzz" --device vulkan --count 150
        if [ -x "$BIN/transfer_bench" ]; then
          for q in -1 0; do
            echo "--- pipeline on vulkan, KILN_VULKAN_TRANSFER_QUEUE=$q"
            KILN_VULKAN_TRANSFER_QUEUE=$q KILN_DEVICE=vulkan timeout 90 "$BIN/transfer_bench" 2>&1 | tail -2
          done
          echo "--- pipeline on cuda"
          KILN_DEVICE=cuda timeout 60 "$BIN/transfer_bench" 2>&1 | tail -1
        fi
      } >> "$OUT/tests.log" 2>&1
      tail -6 "$OUT/.test_summary"
      grep -E "^BM_|pipeline" "$OUT/tests.log" | tail -8
      ;;
    control)
      # Issue 15: loops and branches on the GPU. control_test on cuda (conditional graph nodes),
      # under compute-sanitizer memcheck, and on vulkan with the validation layer; the compile
      # checks of cuda_test; then W10 (kiln cuda and vulkan beside torch and jax) at scale 32
      # (converges in ~10 trips) and 8 (runs all 1000).
      {
        run_test control.cuda 300 env KILN_DEVICE=cuda "$BIN/control_test"
        run_test control.cuda.memcheck 300 env KILN_DEVICE=cuda compute-sanitizer --tool memcheck --error-exitcode 9 \
          "$BIN/control_test" --gtest_filter='*Newton*:*Nested*:*Cond*:*MaxTrips*'
        for batch in 4 1; do
          run_test control.vulkan.batch$batch 300 env KILN_DEVICE=vulkan KILN_VULKAN_VALIDATION=1 KILN_VULKAN_LOOP_BATCH=$batch \
            "$BIN/control_test"
        done
        run_test cuda_test.control 120 "$BIN/cuda_test" --gtest_filter='CudaControl*'
        for scale in 32 8; do
          timeout 240 "$BIN/anchor_bench" --device cuda --w10 --scale $scale --results "$RESULTS" 2>&1 | grep -v "^RESULT"
          for batch in 16 1; do
            echo "--- vulkan, KILN_VULKAN_LOOP_BATCH=$batch"
            KILN_VULKAN_LOOP_BATCH=$batch timeout 240 "$BIN/anchor_bench" --device vulkan --w10 --scale $scale --results "$RESULTS" \
              2>&1 | grep -v "^RESULT"
          done
          for fw in torch-eager torch-graph torch-graph-unchecked jax; do
            echo "--- $fw (scale $scale)"
            timeout 240 python3 "$HERE/../bench/gpu/w10_anchor.py" $fw --scale $scale 2>&1 | grep -E "^W10|^RESULT|Error|error" | head -6
          done
        done
      } 2>&1 | tee -a "$OUT/tests.log"
      ;;
    splitk)
      # W10's trip: its f32 64x1024x1024 dot has 16 output tiles; split-K chunks of 512 (the
      # default), 256 and 128 rows of k (KILN_SPLIT_K_CHUNK), and W5 and the f32 matmuls of the
      # op suite unchanged.
      {
        for chunk in 512 256 128; do
          echo "--- KILN_SPLIT_K_CHUNK=$chunk"
          for scale in 8 32; do
            KILN_SPLIT_K_CHUNK=$chunk timeout 240 "$BIN/anchor_bench" --device cuda --w10 --scale $scale --results "$RESULTS" \
              2>&1 | grep -v "^RESULT"
          done
          KILN_SPLIT_K_CHUNK=$chunk KILN_DEBUG=1 timeout 120 "$BIN/anchor_bench" --device cuda --w10 --scale 32 2>&1 \
            | grep -E "dot|kernel" | head -12
        done
        echo "--- jax (scale 8)"
        timeout 240 python3 "$HERE/../bench/gpu/w10_anchor.py" jax --scale 8 2>&1 | grep -E "^W10|Error|error" | head -3
        run_test matmul.cuda.chunk128 300 env KILN_DEVICE=cuda KILN_SPLIT_K_CHUNK=128 "$BIN/ops_test" --gtest_filter='*Matmul*:*Dot*'
      } 2>&1 | tee -a "$OUT/tests.log"
      ;;
    fmm)
      # float32 products with few output tiles (split-K), exact f32: kiln with k chunks of 512 (the
      # old default) and 128 (the new), torch.mm (TF32 off) in the same call; and cuda_test.
      {
        run_test cuda_test 300 "$BIN/cuda_test" --gtest_brief=1
        ids="FMM16x512x4096,FMM64x1024x1024,FMM32x2048x2048,FMM64x256x8192,FMM128x1024x2048"
        for chunk in 512 128; do
          echo "--- kiln, KILN_SPLIT_K_CHUNK=$chunk"
          KILN_SPLIT_K_CHUNK=$chunk timeout 200 "$BIN/anchor_bench" --device cuda --only "$ids" --results "$RESULTS" 2>&1 \
            | grep -v "^RESULT"
        done
        echo "--- torch.mm"
        timeout 200 python3 "$HERE/../bench/gpu/mm_sweep_torch.py" ${ids//,/ } 2>&1 | grep -v "^RESULT" | head -20
      } 2>&1 | tee -a "$OUT/tests.log"
      ;;
    onnxcontrol)
      # ONNX If and Loop decided at run time import as kiln::cond / kiln::while_loop: the importer's
      # tests on cuda (conditional graph nodes) and on vulkan with the validation layer.
      {
        run_test onnx.control.cuda 300 env KILN_DEVICE=cuda "$BIN/onnx_test" --gtest_filter='*If*:*Loop*'
        run_test onnx.control.vulkan 300 env KILN_DEVICE=vulkan KILN_VULKAN_VALIDATION=1 "$BIN/onnx_test" \
          --gtest_filter='*If*:*Loop*'
      } 2>&1 | tee -a "$OUT/tests.log"
      ;;
    segments)
      # Issue 15's persistent kernels: segment_test on cuda under each thread mapping (and memcheck
      # on the work queue), on vulkan (thread, block) with the validation layer, the compile checks;
      # then ragged segment sums: kiln's three mappings beside torch.segment_reduce and index_add_.
      {
        for how in queue block thread; do
          run_test segment.cuda.$how 300 env KILN_DEVICE=cuda KILN_GPU_SEGMENTS=$how "$BIN/segment_test"
        done
        # One block of 8 warps: all but the first 256 segments come from the queue's atomic pulls.
        run_test segment.cuda.queue_pulls 300 env KILN_DEVICE=cuda KILN_GPU_SEGMENTS=queue KILN_GPU_SEGMENTS_GRID=1 \
          "$BIN/segment_test"
        run_test segment.cuda.memcheck 300 env KILN_DEVICE=cuda KILN_GPU_SEGMENTS=queue KILN_GPU_SEGMENTS_GRID=1 \
          compute-sanitizer --tool memcheck \
          --error-exitcode 9 "$BIN/segment_test" --gtest_filter='*EveryMode*:*LongAndShort*:*Clamped*:*EmptyShapes*'
        run_test segment.cuda.racecheck 300 env KILN_DEVICE=cuda KILN_GPU_SEGMENTS=block compute-sanitizer --tool racecheck \
          --error-exitcode 9 "$BIN/segment_test" --gtest_filter='*EveryMode*:*LongAndShort*'
        for how in thread block; do
          run_test segment.vulkan.$how 300 env KILN_DEVICE=vulkan KILN_VULKAN_VALIDATION=1 KILN_GPU_SEGMENTS=$how "$BIN/segment_test"
        done
        run_test cuda_test.segments 120 "$BIN/cuda_test" --gtest_filter='CudaSegments*'
        for dist in short skewed long; do
          for width in 1 8; do
            for how in default queue block thread; do
              KILN_GPU_SEGMENTS=${how/default/} timeout 120 "$BIN/anchor_bench" --device cuda --segments $dist --width $width \
                --results "$RESULTS" 2>&1 | grep -v "^RESULT"
            done
            echo "--- the queue on 264 blocks (2 per SM): the batches past the first 67584 segments are pulled"
            KILN_GPU_SEGMENTS=queue KILN_GPU_SEGMENTS_GRID=264 timeout 120 "$BIN/anchor_bench" --device cuda --segments $dist \
              --width $width 2>&1 | grep -v "^RESULT"
            for how in default block thread; do
              KILN_GPU_SEGMENTS=${how/default/} timeout 120 "$BIN/anchor_bench" --device vulkan --segments $dist --width $width \
                --results "$RESULTS" 2>&1 | grep -v "^RESULT"
            done
            for fw in torch-segment torch-index-add; do
              timeout 120 python3 "$HERE/../bench/gpu/segment_anchor.py" $fw $dist --width $width 2>&1 \
                | grep -E "^SEG|^RESULT|Error|error" | head -4
            done
          done
        done
      } 2>&1 | tee -a "$OUT/tests.log"
      ;;
    dist)
      # Issue 16 on the GPUs of this machine (nvidia-h200-x2: two): dist_test with one rank per GPU
      # (NCCL captured into each rank's CUDA graph), then all_reduce bandwidth and the tensor-parallel
      # MLP step beside torch.distributed. NCCL comes from the pip wheel torch brings; NVLink
      # multicast stays off for every process.
      export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
      for d in $(python3 -c 'import glob, site; print(" ".join(p for s in site.getsitepackages() for p in glob.glob(s + "/nvidia/nccl/lib")))' 2>/dev/null); do
        [ -e "$d/libnccl.so.2" ] && { LD_LIBRARY_PATH+=":$d"; echo "NCCL from $d"; break; }
      done
      {
        nvidia-smi -L
        run_test dist_test.cuda 300 env KILN_DEVICE=cuda "$BIN/dist_test"
        gpus=$(nvidia-smi -L | wc -l)
        for n in 2 4; do
          [ "$n" -le "$gpus" ] || continue
          timeout 300 "$BIN/dist_bench" --allreduce --ranks $n --results "$RESULTS" 2>&1
          timeout 300 python3 "$HERE/../bench/gpu/dist_anchor.py" --allreduce --ranks $n --results "$RESULTS" 2>&1 | grep -E "^RESULT|Error|error" | head -12
        done
        for n in 1 2 4; do
          [ "$n" -le "$gpus" ] || continue
          timeout 200 "$BIN/dist_bench" --tp --ranks $n --results "$RESULTS" 2>&1
          timeout 200 python3 "$HERE/../bench/gpu/dist_anchor.py" --tp --ranks $n --results "$RESULTS" 2>&1 | grep -E "^RESULT|Error|error" | head -4
        done
        # Where a step's host time goes: the block on 2 ranks without its all_reduce, on 1 rank with
        # one (NCCL over a group of one); then compute beside communication.
        timeout 200 "$BIN/dist_bench" --tp --ranks 2 --collective never --results "$RESULTS" 2>&1
        timeout 200 "$BIN/dist_bench" --tp --ranks 1 --collective always --results "$RESULTS" 2>&1
        timeout 200 "$BIN/dist_bench" --overlap --ranks 2 --results "$RESULTS" 2>&1
        # The 2-rank block's host spans (bind, launch, after it) in a trace: $OUT/dist_tp2_trace.json
        KILN_PROFILE="$OUT/dist_tp2_trace.json" timeout 200 "$BIN/dist_bench" --tp --ranks 2 2>&1
      } 2>&1 | tee -a "$OUT/tests.log"
      ;;
    w11)
      # W11 (issue 14): the MLP block at batch sizes 1, 7, 64, 1000 in a fresh process each: time to
      # each new size's first result, kiln (cuda, then vulkan, empty kernel caches) and the frameworks.
      {
        for d in cuda vulkan; do
          KILN_CACHE_DIR=$(mktemp -d /tmp/kiln-w11.XXXXXX) timeout 300 "$BIN/anchor_bench" --device $d --w11 \
            --results "$RESULTS" 2>&1 | grep -v "^RESULT"
        done
        for fw in torch-compile torch-eager jax; do
          timeout 300 python3 "$HERE/../bench/gpu/w11_anchor.py" $fw 2>&1 | grep -E "^W11|Error|error" | head -8
        done
      } 2>&1 | tee -a "$OUT/bench.log"
      ;;
    vkperf)
      vk_perf >> "$OUT/tests.log" 2>&1
      tail -40 "$OUT/tests.log"
      ;;
    bench)
      {
        timeout 400 "$BIN/anchor_bench" --device cuda --results "$RESULTS"
        # W7: the first realize in a fresh process, with an empty disk cache (cold), then again in
        # another fresh process with the cache the first one filled (warm: nothing compiles).
        for wl in W1 W3; do
          c=$(mktemp -d /tmp/kiln-w7.XXXXXX)
          KILN_CACHE_DIR=$c timeout 60 "$BIN/anchor_bench" --device cuda --first-call $wl --var cold --results "$RESULTS"
          KILN_CACHE_DIR=$c timeout 60 "$BIN/anchor_bench" --device cuda --first-call $wl --var warm --results "$RESULTS"
        done
      } 2>&1 | grep -v '^RESULT ' | tee "$OUT/bench.log"
      ;;
    anchors)
      if [ -f "$HERE/anchors/run_all.sh" ]; then
        A=$(mktemp -d /tmp/kiln-anchors.XXXXXX)
        OUT=$A bash "$HERE/anchors/run_all.sh" env B A J W7 C D > "$A/run_all.log" 2>&1
        cat "$A/results.jsonl" >> "$RESULTS" 2>/dev/null
        tar -czf "$OUT/anchors_logs.tar.gz" -C "$A" .
        tail -3 "$A/run_all.log"
      else
        echo "run_on_gpu: no anchors in the bundle (bundle.sh copies ../shared/bench-anchors)"
      fi
      ;;
    *) echo "run_on_gpu: unknown section $s" ;;
  esac
  stamp "section $s end"
done

# The summary: the anchors' tables (kiln's sec "C" rows among them), then kiln's own rows.
if [ -f "$RESULTS" ]; then
  {
    if [ -f "$HERE/anchors/summarize.py" ]; then python3 "$HERE/anchors/summarize.py" "$RESULTS"; fi
    echo
    echo "## kiln: host overhead per cached realize (H: y = x + 1 on 4096 floats; W6: 64 ops)"
    grep -hE '^(H|W6) ' "$OUT/bench.log" 2>/dev/null
    echo
    echo "## kiln: W7 first realize in a fresh process (cold: empty disk cache; warm: filled)"
    grep -h '^W7 ' "$OUT/bench.log" 2>/dev/null
  } > "$OUT/summary.txt" 2>&1
  echo "--- summary: $OUT/summary.txt"
  tail -25 "$OUT/summary.txt"
fi
rm -f "$OUT/.test_summary"
