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
#
# Vulkan on the GPU machine (its notes: /work/.library/device/README.md): it may have no Vulkan
# loader nor the GLVND libraries the NVIDIA ICD needs, so bundle/gl/ holds Debian 12's amd64 .debs
# of them (downloaded once into .gl/, ignored by git; KILN_GL_DEBS_DIR names another cache), and
# run_on_gpu.sh unpacks those whose library the machine lacks. bundle/vklayer/ holds the Khronos
# validation layer (vulkan_test turns it on) from Debian's vulkan-validationlayers, gzipped
# (21 MB -> 7 MB), with its manifest pointing beside itself.
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
# KILN_BUNDLE_TARGETS="ops_test cuda_test ..." builds only those (a fresh 2-core machine takes an
# hour for everything); the bundle then holds the executables the build directory has.
cmake --build "$BUILD" -j "$JOBS" ${KILN_BUNDLE_TARGETS:+--target $KILN_BUNDLE_TARGETS}

rm -rf "$B"
mkdir -p "$B/bin" "$B/lib/fallback" "$B/anchors" "$B/gl" "$B/vklayer"

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

# Vulkan loader + GLVND for the NVIDIA ICD: Debian 12's amd64 packages, fetched only when the
# cache lacks one (no network: a warning, and the bundle goes without them).
GL_PKGS="libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2"
GL_CACHE=${KILN_GL_DEBS_DIR:-$ROOT/.gl}
mkdir -p "$GL_CACHE"
missing=""
for p in $GL_PKGS; do
  compgen -G "$GL_CACHE/${p}_*_amd64.deb" > /dev/null || missing+=" $p"
done
if [ -n "$missing" ]; then
  echo "bundle.sh: downloading Debian's amd64 .debs of$missing into $GL_CACHE"
  lists=$(mktemp -d /tmp/kiln-apt-amd64.XXXXXX)
  mkdir -p "$lists/partial"
  # The package lists go to a folder of our own, and no binary cache is written: the system's
  # apt state is left as it was.
  apt_o=(-q -y -oAPT::Architecture=amd64 -oAPT::Architectures=amd64 "-oDir::State::Lists=$lists"
         -oDir::Cache::pkgcache= -oDir::Cache::srcpkgcache=)
  if ! { DEBIAN_FRONTEND=noninteractive apt-get "${apt_o[@]}" update > "$lists/update.log" 2>&1 &&
         (cd "$GL_CACHE" && DEBIAN_FRONTEND=noninteractive apt-get "${apt_o[@]}" download $missing > "$lists/download.log" 2>&1); }; then
    echo "bundle.sh: warning: could not download$missing (see $lists/*.log); Vulkan may not start where the GPU machine lacks them" >&2
  else
    rm -rf "$lists"
  fi
fi
for p in $GL_PKGS; do
  deb=$(ls "$GL_CACHE/${p}"_*_amd64.deb 2>/dev/null | sort -V | tail -1)
  if [ -n "$deb" ]; then cp "$deb" "$B/gl/"; fi
done

# The Khronos validation layer: its manifest names a bare file (the loader would search the
# system's library path), so the bundle's copy points beside itself.
VK_LAYER_JSON=${KILN_VK_LAYER_JSON:-/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json}
if [ -f "$VK_LAYER_JSON" ]; then
  lib=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["layer"]["library_path"])' "$VK_LAYER_JSON")
  case $lib in
    /*) ;;
    *) n=$(basename "$lib")
       lib=$(ldconfig -p | awk -v n="$n" '$1 == n { print $NF; exit }')
       if [ -z "$lib" ] && [ -f "/usr/lib/x86_64-linux-gnu/$n" ]; then lib=/usr/lib/x86_64-linux-gnu/$n; fi ;;
  esac
  if [ -n "$lib" ] && [ -f "$lib" ]; then
    # It needs the C/C++ runtime alone (the GPU machine's is newer); anything else would have to travel.
    extra=$(ldd "$lib" | awk '/=> \// { print $1 }' | grep -vE "$skip" | tr '\n' ' ' || true)
    if [ -n "$extra" ]; then echo "bundle.sh: warning: $lib also needs $extra(not bundled)" >&2; fi
    gzip -9 -c "$lib" > "$B/vklayer/$(basename "$lib").gz"
    python3 - "$VK_LAYER_JSON" "$B/vklayer/$(basename "$VK_LAYER_JSON")" "./$(basename "$lib")" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["layer"]["library_path"] = sys.argv[3]
json.dump(m, open(sys.argv[2], "w"), indent=4)
PY
  else
    echo "bundle.sh: warning: the validation layer's library ($lib) was not found; vulkan_test will fail there" >&2
  fi
else
  echo "bundle.sh: warning: no $VK_LAYER_JSON (Debian: vulkan-validationlayers); vulkan_test will fail on the GPU machine" >&2
fi

# The anchor scripts (torch / jax baselines) live beside the checkout, which does not travel.
for a in "$ROOT/../shared/bench-anchors" "$ROOT/shared/bench-anchors"; do
  if [ -d "$a" ]; then cp -r "$a"/. "$B/anchors/"; break; fi
done
rm -rf "$B/anchors/out"
cp bench/gpu/run_on_gpu.sh "$B/run_on_gpu.sh"
cp bench/gpu/dispatch_medians.py "$B/dispatch_medians.py"

{
  echo "kiln GPU bundle"
  echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release; echo "$PRETTY_NAME"), $(g++ --version | head -1)"
  echo "nvrtc at build time: $(ls /usr/local/cuda/lib64/libnvrtc.so.* 2>/dev/null | head -1)"
  echo "binaries: $(ls "$B/bin" | tr '\n' ' ')"
  echo "libraries: $(ls "$B/lib" | tr '\n' ' ')"
  echo "gl debs: $(ls "$B/gl" | tr '\n' ' ')"
  echo "vulkan layer: $(ls "$B/vklayer" | tr '\n' ' ')"
} > "$B/MANIFEST"

size=$(du -sm "$B" | cut -f1)
echo "bundle.sh: $B/ holds ${size} MiB ($(ls "$B/bin" | wc -l) binaries, $(ls "$B/lib" | grep -c so) libraries)"
if [ "$size" -gt 60 ]; then
  echo "bundle.sh: warning: over 60 MiB; a device call carries at most 64 MiB with the working tree" >&2
fi
echo "bundle.sh: on the GPU machine run: bash $B/run_on_gpu.sh   (carry: $B)"
