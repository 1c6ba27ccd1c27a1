#!/usr/bin/env bash
# Builds kiln for the GPU machine and packs what runs there into bundle/ (ignored by git):
#
#   bash bench/gpu/bundle.sh        # here (Debian 12, CUDA 13 toolkit, no GPU)
#   # on the GPU machine (Ubuntu 24.04, CUDA 13 driver and toolkit, no network), from the repo
#   # root, with bundle/ carried along:
#   bash bundle/run_on_gpu.sh [env] [tests] [bench] [anchors]
#
# The build (build-gpu/) has no LLVM (no CPU backend: the GPU machine does not need it, and
# libLLVM is 123 MB), CUDA on, Vulkan when its SDK is found, libkiln shared. Binaries are
# stripped; the shared
# libraries they need that an Ubuntu 24.04 machine may lack (Debian's abseil, ...) are copied to
# bundle/lib. Not copied: the C/C++ runtime (24.04's is newer), libcuda (the driver's),
# libnvrtc (105 MB; the GPU machine's CUDA 13 toolkit has it: run_on_gpu.sh finds it), and
# libvulkan (copied to bundle/lib/fallback, used only where the machine has no loader).
# The whole bundle must stay under the 64 MiB a device call can carry.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BUILD=${KILN_GPU_BUILD_DIR:-build-gpu}
JOBS=${JOBS:-2}
B=${KILN_BUNDLE_DIR:-bundle}  # KILN_BUNDLE_DIR=bundle-<name> packs a second bundle beside this one

# libkiln as a shared library: a dozen binaries share its 8 MB (shaderc and SPIRV-Tools are in it)
# instead of each carrying a copy.
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DKILN_WITH_LLVM=OFF -DKILN_WITH_CUDA=ON -DKILN_WITH_VULKAN=ON -DKILN_WITH_HIP=OFF \
  -DKILN_BUILD_TESTS=ON -DKILN_BUILD_BENCH=ON -DKILN_BUILD_EXAMPLES=ON > /dev/null
if ! grep -q "cuda_test" "$BUILD/build.ninja"; then
  echo "bundle.sh: the build in $BUILD has no CUDA backend (no CUDA toolkit with NVRTC found?)" >&2
  exit 1
fi
cmake --build "$BUILD" -j "$JOBS"

rm -rf "$B"
mkdir -p "$B/bin" "$B/lib/fallback" "$B/anchors"

# Every executable the build made under tests/, bench/, examples/ and tools/.
mapfile -t EXES < <(find "$BUILD/tests" "$BUILD/bench" "$BUILD/examples" "$BUILD/tools" -type f -perm -u+x \
  -not -path "*/CMakeFiles/*" -not -name "*.so*" -not -name "*.cmake" -not -name "*.sh" 2>/dev/null | sort)
for exe in "${EXES[@]}"; do
  name=$(basename "$exe")
  if [ -e "$B/bin/$name" ]; then echo "bundle.sh: two executables named $name" >&2; exit 1; fi
  strip --strip-unneeded -o "$B/bin/$name" "$exe"
done

# Shared libraries: everything ldd resolves except the system's C/C++ runtime, the driver,
# NVRTC and the Vulkan loader.
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libstdc\+\+|libgcc_s|libpthread|libdl\.so|librt\.so|libcuda\.so|libnvrtc|libvulkan)'
for exe in "$B"/bin/*; do
  ldd "$exe" | awk '/=> \// { print $1, $3 }'
done | sort -u | while read -r soname path; do
  if [[ "$soname" =~ $skip ]]; then continue; fi
  cp -L "$path" "$B/lib/$soname"
done
strip --strip-unneeded "$B"/lib/*.so* 2>/dev/null || true
if vk=$(ldconfig -p | awk '/libvulkan\.so\.1 / { print $NF; exit }') && [ -n "$vk" ]; then
  cp -L "$vk" "$B/lib/fallback/libvulkan.so.1"
fi

# The anchor scripts (torch / jax baselines) live beside the checkout, which does not travel.
for a in "$ROOT/../shared/bench-anchors" "$ROOT/shared/bench-anchors"; do
  if [ -d "$a" ]; then cp -r "$a"/. "$B/anchors/"; break; fi
done
rm -rf "$B/anchors/out"
cp bench/gpu/run_on_gpu.sh "$B/run_on_gpu.sh"

{
  echo "kiln GPU bundle"
  echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release; echo "$PRETTY_NAME"), $(g++ --version | head -1)"
  echo "nvrtc at build time: $(ls /usr/local/cuda/lib64/libnvrtc.so.* 2>/dev/null | head -1)"
  echo "binaries: $(ls "$B/bin" | tr '\n' ' ')"
  echo "libraries: $(ls "$B/lib" | tr '\n' ' ')"
} > "$B/MANIFEST"

size=$(du -sm "$B" | cut -f1)
echo "bundle.sh: $B/ holds ${size} MiB ($(ls "$B/bin" | wc -l) binaries, $(ls "$B/lib" | grep -c so) libraries)"
if [ "$size" -gt 60 ]; then
  echo "bundle.sh: warning: over 60 MiB; a device call carries at most 64 MiB with the working tree" >&2
fi
echo "bundle.sh: on the GPU machine run: bash $B/run_on_gpu.sh   (carry: $B)"
