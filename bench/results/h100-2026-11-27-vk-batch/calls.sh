#!/usr/bin/env bash
# Device calls of this folder's README: `bash calls.sh N` from the bundle folder (bundle-att/,
# carried to the GPU machine); each writes $OUT/call<N>.log.
cd "$(dirname "$0")"
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT
bash run_on_gpu.sh env > /dev/null 2>&1
export LD_LIBRARY_PATH=$PWD/lib:$(python3 -c 'import glob, site; print(":".join(p for s in site.getsitepackages() for p in glob.glob(s + "/nvidia/*/lib")))'):$LD_LIBRARY_PATH
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
VK_LAYER_DIR=$(mktemp -d /tmp/kiln-vklayer.XXXXXX)
cp vklayer/*.json "$VK_LAYER_DIR/"
for z in vklayer/*.so.gz; do gunzip -c "$z" > "$VK_LAYER_DIR/$(basename "${z%.gz}")"; done
export VK_ADD_LAYER_PATH=$VK_LAYER_DIR

# Per-dispatch GPU times of a KILN_DEBUG=1 log ($1: its "kiln: vulkan: step" lines and the
# workload lines after each path), as medians per path.
per_path_medians() {
python3 - "$1" <<'PY'
import re, statistics, sys
groups, cur = [], []
for line in open(sys.argv[1]):
    if line.startswith("W"):
        groups.append((line[:30], cur)); cur = []
        continue
    m = re.search(r"' ([0-9.]+) us GPU", line)
    if m: cur.append(float(m.group(1)))
for name, v in groups:
    if v: print(f"{name}: {len(v)} dispatches, median {statistics.median(v):.1f} us, min {min(v):.1f}, max {max(v):.1f}")
PY
}

call1() {
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "--- W4a/W4b/W6/H on vulkan: KILN_VULKAN_BATCH 1 (each run its own vkQueueSubmit) / 16 (default), alternated"
for rep in 1 2; do
  for b in 1 16; do
    KILN_VULKAN_BATCH=$b timeout 120 bin/anchor_bench --device vulkan --only W4a,W4b,W6,H --results $OUT/results.jsonl 2>&1 \
      | grep -E "^(W4|W6|H )" | grep -v realize | sed "s/^/[batch $b] /"
  done
done
echo "--- the same on cuda"
timeout 120 bin/anchor_bench --device cuda --only W4a,W4b,W6,H --results $OUT/results.jsonl 2>&1 | grep -E "^(W4|W6|H )"
echo "--- host_bench W6 on vulkan"
for b in 1 16; do KILN_DEVICE=vulkan KILN_VULKAN_BATCH=$b timeout 60 bin/host_bench --benchmark_filter='W6' 2>&1 | grep -E "^BM" | sed "s/^/[batch $b] /"; done
echo "--- tests"
echo "vulkan_test (validation layer)"; KILN_DEVICE=vulkan KILN_VULKAN_VALIDATION=1 timeout 200 bin/vulkan_test 2>&1 | grep -E "FAILED|Failure|PASSED|SKIPPED \]|submissions" | head
echo "ops_test on vulkan"; KILN_DEVICE=vulkan timeout 250 bin/ops_test 2>&1 | grep -E "FAILED|Failure|PASSED" | head
}

call2() {
echo "--- per-dispatch GPU times (timestamps, KILN_DEBUG=1) of W4a / W4b on vulkan: median us per step, and first-start-to-last-end"
for w in W4a W4b; do
  KILN_DEBUG=1 timeout 120 bin/anchor_bench --device vulkan --only $w 2>&1 | grep -E "kiln: vulkan: (step|[0-9]+ dispatches)" > /tmp/prof_$w.txt
  echo "$w: $(wc -l < /tmp/prof_$w.txt) lines"
  python3 - /tmp/prof_$w.txt <<'PY'
import re, sys, statistics, collections
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    m = re.search(r"step (\d+) kernel '([^']+)' ([0-9.]+) us", line)
    if m: d[m.group(1) + " " + m.group(2)].append(float(m.group(3)))
    m = re.search(r"([0-9.]+) us summed, ([0-9.]+) us first start", line)
    if m: d["span"].append(float(m.group(2)))
for k, v in sorted(d.items()): print(f"  {k}: median {statistics.median(v):.2f} us  min {min(v):.2f}  n={len(v)}")
PY
done
}

call3() {
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "--- tests (batched submission on, downloads on the copy queue)"
echo "vulkan_test (validation layer)"; KILN_DEVICE=vulkan KILN_VULKAN_VALIDATION=1 timeout 200 bin/vulkan_test 2>&1 | grep -E "FAILED|Failure|PASSED|SKIPPED \]|submissions" | head
echo "ops_test on vulkan"; KILN_DEVICE=vulkan timeout 250 bin/ops_test 2>&1 | grep -E "FAILED|Failure|PASSED" | head
echo "control_test on vulkan (validation layer)"; KILN_DEVICE=vulkan KILN_VULKAN_VALIDATION=1 timeout 200 bin/control_test 2>&1 | grep -E "FAILED|Failure|PASSED" | head
echo "onnx_test on vulkan"; KILN_DEVICE=vulkan timeout 200 bin/onnx_test 2>&1 | grep -E "FAILED|Failure|PASSED" | head
echo "kiln_fuzz on vulkan"; KILN_DEVICE=vulkan timeout 120 bin/kiln_fuzz --count 150 --device vulkan 2>&1 | tail -2
}

call4() {
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "--- W1-W6 and H, vulkan then cuda (jit path)"
for dev in vulkan cuda; do
  timeout 200 bin/anchor_bench --device $dev --results $OUT/results.jsonl 2>&1 | grep -E "^(W[1-6]|H )" | grep -v realize
done
echo "--- upload-compute-download pipeline (64 MiB in, W1, 64 MiB out)"
for q in 1 0; do echo "[vulkan, KILN_VULKAN_TRANSFER_QUEUE=$q]"; KILN_VULKAN_TRANSFER_QUEUE=$q KILN_DEVICE=vulkan timeout 90 bin/transfer_bench 2>&1 | tail -1; done
echo "[cuda]"; KILN_DEVICE=cuda timeout 60 bin/transfer_bench 2>&1 | tail -1
echo "[torch]"; timeout 120 python3 transfer_torch.py 2>&1 | tail -3
}

call5() {
echo "--- W2/W3 on vulkan: batch 1 / 16, SPIR-V optimizer off, and per-dispatch GPU time"
for v in "KILN_VULKAN_BATCH=1" "KILN_VULKAN_BATCH=16" "KILN_VULKAN_SPIRV_OPT=0"; do
  env $v timeout 120 bin/anchor_bench --device vulkan --only W1,W2,W3 2>&1 | grep -E "^W[123]" | grep -v realize | sed "s/^/[$v] /"
done
for w in W2 W3; do
  KILN_DEBUG=1 timeout 120 bin/anchor_bench --device vulkan --only $w 2>&1 | grep -E "kiln: vulkan: step" | head -400 | tail -3
done
}

call6() {
echo "--- W2/W3 on vulkan under runs in flight / batch settings (pipelined wall per call)"
for v in "X=1" "X=2" "KILN_VULKAN_IN_FLIGHT=4" "KILN_VULKAN_IN_FLIGHT=16" "KILN_VULKAN_BATCH=1 KILN_VULKAN_IN_FLIGHT=4" "KILN_VULKAN_BATCH=1"; do
  env $v timeout 120 bin/anchor_bench --device vulkan --only W2,W3 2>&1 | grep -E "^W[23]" | sed "s/^/[$v] /" | cut -c1-120
done
}

call7() {
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "vulkan_test (validation layer)"; KILN_DEVICE=vulkan KILN_VULKAN_VALIDATION=1 timeout 200 bin/vulkan_test 2>&1 | grep -E "FAILED|Failure|PASSED|SKIPPED \]|submissions" | head
echo "vulkan_test Batch.*:HeldCopies.*:TransferQueue.*:VulkanTransfers.* x5 (validation layer)"
KILN_DEVICE=vulkan KILN_VULKAN_VALIDATION=1 timeout 200 bin/vulkan_test --gtest_repeat=5 --gtest_filter='Batch.*:HeldCopies.*:TransferQueue.*:VulkanTransfers.*' 2>&1 | grep -E "FAILED|Failure|PASSED" | sort | uniq -c
echo "ops_test on vulkan, KILN_VULKAN_BATCH_HOLD=1 (every run waits for a full batch or a host wait)"; KILN_VULKAN_BATCH_HOLD=1 KILN_DEVICE=vulkan timeout 250 bin/ops_test 2>&1 | grep -E "FAILED|Failure|PASSED" | head
}

call8() {
echo "--- W2/W3 on vulkan, one process each: default x3, host waits without polling (KILN_VULKAN_SPIN_US=0), one run in flight"
for v in "X=1" "X=2" "X=3" "KILN_VULKAN_SPIN_US=0" "KILN_VULKAN_SPIN_US=0 X=2" "KILN_VULKAN_IN_FLIGHT=1" "KILN_VULKAN_IN_FLIGHT=2"; do
  env $v timeout 120 bin/anchor_bench --device vulkan --only W2,W3 2>&1 | grep -E "^W[23]" | sed "s/^/[$v] /" | cut -c1-110
done
}

call9() {
echo "--- W3 on vulkan: default, queue order by semaphores, and per-dispatch GPU times (KILN_DEBUG=1) of the jit and realize executables"
for v in "X=1" "KILN_VULKAN_QUEUE_ORDER=0"; do
  env $v timeout 120 bin/anchor_bench --device vulkan --only W3 2>&1 | grep -E "^W3" | sed "s/^/[$v] /" | cut -c1-110
done
KILN_DEBUG=1 timeout 200 bin/anchor_bench --device vulkan --only W3 2>&1 | grep -E "kiln: vulkan: step|^W3" > /tmp/p3.txt
per_path_medians /tmp/p3.txt
}

call10() {
echo "--- W2,W3 (W3 after W2 in one process) on vulkan: default / freed buffers not kept for reuse (KILN_VULKAN_REUSE_BYTES=0), alternated"
for v in "X=1" "KILN_VULKAN_REUSE_BYTES=0" "X=2" "KILN_VULKAN_REUSE_BYTES=0 X=2"; do
  env $v timeout 120 bin/anchor_bench --device vulkan --only W2,W3 2>&1 | grep -E "^W[23]" | sed "s/^/[$v] /" | cut -c1-110
done
echo "--- W1-W4b in one process, KILN_VULKAN_REUSE_BYTES=0"
KILN_VULKAN_REUSE_BYTES=0 timeout 200 bin/anchor_bench --device vulkan --only W1,W2,W3,W4a,W4b 2>&1 | grep -E "^W" | grep -v realize | cut -c1-110
}

call11() {
echo "--- per-dispatch GPU times (KILN_DEBUG=1) of W2 then W3 in one process, by path"
for v in "X=1" "KILN_VULKAN_REUSE_BYTES=300M"; do
KILN_DEBUG=1 env $v timeout 200 bin/anchor_bench --device vulkan --only W2,W3 2>&1 | grep -E "kiln: vulkan: step|^W[23]" > /tmp/p3.txt
echo "[$v]"
per_path_medians /tmp/p3.txt
done
echo "--- pipelined, KILN_VULKAN_REUSE_BYTES=300M (one 256 MiB buffer kept)"
KILN_VULKAN_REUSE_BYTES=300M timeout 120 bin/anchor_bench --device vulkan --only W2,W3 2>&1 | grep -E "^W[23]" | cut -c1-110
}

call12() {
echo "--- per-dispatch GPU times (KILN_DEBUG=1) of W3 after other workloads in one process, by path"
for only in W1,W3 W4a,W3 W3,W2; do
KILN_DEBUG=1 timeout 200 bin/anchor_bench --device vulkan --only $only 2>&1 | grep -E "kiln: vulkan: step|^W[0-9]" > /tmp/p3.txt
echo "[--only $only]"
per_path_medians /tmp/p3.txt
done
}

call13() {
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "--- tests after the subgroup-per-row reduction strategy"
for dev in cuda vulkan; do
  echo "ops_test on $dev"; KILN_DEVICE=$dev timeout 200 bin/ops_test 2>&1 | grep -E "FAILED|Failure|PASSED" | head
  echo "passes_test on $dev"; KILN_DEVICE=$dev timeout 150 bin/passes_test 2>&1 | grep -E "FAILED|Failure|PASSED" | head
done
echo "cuda_test"; timeout 200 bin/cuda_test --gtest_filter='RowReductions.*:SymbolicKernels.*:CudaGraphTest.*:CudaDeviceTest.*:CudaKernels.*' 2>&1 | grep -E "FAILED|PASSED" | head
echo "vulkan_test (validation layer)"; KILN_DEVICE=vulkan KILN_VULKAN_VALIDATION=1 timeout 150 bin/vulkan_test 2>&1 | grep -E "FAILED|Failure|PASSED" | head
echo "kiln_fuzz"; KILN_DEVICE=cuda timeout 100 bin/kiln_fuzz --count 200 --device cuda 2>&1 | tail -1; KILN_DEVICE=vulkan timeout 100 bin/kiln_fuzz --count 150 --device vulkan 2>&1 | tail -1
}

call14() {
echo "--- W4a/W4b (and W2/W3 first in their process) with subgroup rows on / off (KILN_GPU_SUBGROUP_ROWS=0), alternated"
for rep in 1 2; do for v in "X=1" "KILN_GPU_SUBGROUP_ROWS=0"; do for dev in vulkan cuda; do
  env $v timeout 100 bin/anchor_bench --device $dev --only W4a,W4b 2>&1 | grep -E "^W4" | grep -v realize | sed "s/^/[$v] /" | cut -c1-120
done; done; done
for v in "X=1" "KILN_GPU_SUBGROUP_ROWS=0"; do
  KILN_DEBUG=1 env $v timeout 100 bin/anchor_bench --device vulkan --only W4b 2>&1 | grep -E "kiln: vulkan: step 1" | head -300 | tail -2 | sed "s/^/[$v] /"
done
}

call15() {
echo "--- W2 then W3 in one process: uploads on the copy engines' queue (default) / on the compute queue (KILN_VULKAN_TRANSFER_QUEUE=0)"
for v in "X=1" "KILN_VULKAN_TRANSFER_QUEUE=0"; do
  env $v timeout 100 bin/anchor_bench --device vulkan --only W2,W3 2>&1 | grep -E "^W[23]" | sed "s/^/[$v] /" | cut -c1-110
done
}

call"$1" 2>&1 | tee $OUT/call"$1".log
