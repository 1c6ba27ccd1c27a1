#!/usr/bin/env bash
# kiln's one entry point for a fresh Debian 12 machine (as root):
#   bash dev.sh run    install what is missing, build, run the main example on the default device
#   bash dev.sh test   install what is missing, build, run the whole test suite (ctest, parallel)
#   bash dev.sh build  install what is missing and build only
set -euo pipefail
cd "$(dirname "$0")"

# Debian packages kiln builds and tests with. Installed only when missing, non-interactively.
PACKAGES=(
  g++ cmake ninja-build pkg-config python3 python3-pip python3-venv
  llvm-16-dev libzstd-dev zlib1g-dev libedit-dev libxml2-dev libffi-dev libtinfo-dev
  libabsl-dev libgtest-dev libgmock-dev libbenchmark-dev
  graphviz
  libvulkan-dev mesa-vulkan-drivers vulkan-validationlayers vulkan-tools
  libshaderc-dev glslang-dev glslang-tools spirv-tools spirv-headers
)

install_packages() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "dev.sh: installing ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
}

BUILD_DIR=${KILN_BUILD_DIR:-build}

build() {
  install_packages
  if [ ! -f "$BUILD_DIR/build.ninja" ]; then
    cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo ${KILN_CMAKE_ARGS:-}
  fi
  cmake --build "$BUILD_DIR" -j "$(nproc)"
}

case "${1:-}" in
  run)
    build
    "$BUILD_DIR/examples/mlp"
    ;;
  test)
    build
    ctest --test-dir "$BUILD_DIR" -j "$(nproc)" --output-on-failure ${KILN_CTEST_ARGS:-}
    ;;
  build)
    build
    ;;
  *)
    echo "usage: bash dev.sh run|test|build" >&2
    exit 2
    ;;
esac
