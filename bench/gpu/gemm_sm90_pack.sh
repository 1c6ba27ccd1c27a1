#!/usr/bin/env bash
# Packs what bench/gpu/gemm_sm90_run.sh needs from a GPU build (default build-gpu-gemm: KILN_SHARED,
# LLVM and Vulkan off; targets cuda_test ops_test anchor_bench, passes_test and kiln_fuzz if built) into bundle-gemm/ (git-ignored):
# the binaries, the libraries they load that the GPU machine lacks, the torch anchors.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${KILN_GPU_BUILD_DIR:-build-gpu-gemm}
B=${KILN_BUNDLE_DIR:-bundle-gemm}
rm -rf "$B"
mkdir -p "$B/bin" "$B/lib" "$B/anchors"
for exe in tests/cuda/cuda_test tests/ops_test tests/passes_test tools/kiln_fuzz bench/gpu/anchor_bench; do
  f=$(find "$BUILD" -path "*/$exe" -type f | head -1)
  [ -n "$f" ] || continue
  strip --strip-unneeded -o "$B/bin/$(basename "$exe")" "$f"
done
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libstdc\+\+|libgcc_s|libpthread|libdl\.so|librt\.so|libcuda\.so|libnvrtc|libvulkan)'
for exe in "$B"/bin/*; do ldd "$exe" | awk '/=> \// { print $1, $3 }'; done | sort -u | while read -r soname path; do
  if [[ "$soname" =~ $skip ]]; then continue; fi
  cp -L "$path" "$B/lib/$soname"
done
strip --strip-unneeded "$B"/lib/*.so* 2>/dev/null || true
for a in ../shared/bench-anchors shared/bench-anchors; do
  if [ -d "$a" ]; then cp -r "$a"/. "$B/anchors/"; break; fi
done
rm -rf "$B/anchors/out"
cp bench/gpu/run_on_gpu.sh bench/gpu/gemm_sm90_run.sh bench/gpu/gpu_env.sh bench/gpu/mm_sweep_torch.py "$B/"
echo "commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . || echo ' + uncommitted'), built $(date -u +%FT%TZ)" > "$B/MANIFEST"
du -sh "$B"
