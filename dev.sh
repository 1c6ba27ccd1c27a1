#!/usr/bin/env bash
# kiln's one entry point for a fresh Debian 12 machine (as root):
#   bash dev.sh run    install what is missing, build, run the main example on the default device
#   bash dev.sh test   install what is missing, build once, run the whole test suite (ctest,
#                      parallel); KILN_TEST_STAGES=all adds the sanitizer and parser-fuzzing stages
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
  clang-14 libclang-rt-14-dev
  libonnx-dev libonnx-testdata libprotobuf-dev protobuf-compiler
  libamd-comgr-dev libamdhip64-dev
  openmpi-bin
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

# `test` builds once and runs the suite (stage main): that is CI, kept under 30 minutes on two
# cores. The reliability stages each need a build of their own (tests/fuzz, tests/reliability; see
# the README): the suite under ASan+UBSan+LSan, the concurrency test under TSan, and 60 s of
# libFuzzer on the IR parser and the ONNX parser. KILN_TEST_STAGES picks stages from
# "main asan tsan parser-fuzz"; `all` is the four, and what a change to the runtime should pass.
STAGES=${KILN_TEST_STAGES:-main}
[ "$STAGES" = all ] && STAGES="main asan tsan parser-fuzz"
for s in $STAGES; do
  case $s in main | asan | tsan | parser-fuzz) ;; *) echo "dev.sh: unknown stage '$s' in KILN_TEST_STAGES (main asan tsan parser-fuzz, or all)" >&2; exit 2 ;; esac
done
TIMINGS=()

timed() {  # timed <label> <command...>: runs it and records its wall time
  local label=$1 start=$SECONDS
  shift
  echo "dev.sh: --- $label"
  "$@"
  TIMINGS+=("$label $((SECONDS - start))s")
}

preset() {  # preset <name>: configure (once) and build a CMake preset
  [ -f "build-$1/build.ninja" ] || cmake --preset "$1"
  cmake --build --preset "$1"
}

has_stage() { [[ " $STAGES " == *" $1 "* ]]; }

run_tests() {
  install_packages
  if has_stage main; then
    timed "build" build
    timed "ctest" ctest --test-dir "$BUILD_DIR" -j "$(nproc)" --output-on-failure ${KILN_CTEST_ARGS:-}
  fi
  if has_stage asan; then
    timed "asan build" preset asan
    timed "asan ctest" ctest --preset asan
  fi
  if has_stage tsan; then
    timed "tsan build" preset tsan
    timed "tsan concurrency test" ctest --preset tsan
  fi
  if has_stage parser-fuzz; then
    timed "parser fuzzer build" preset fuzz
    timed "parser fuzzing" bash tests/fuzz/parser/run.sh build-fuzz "${KILN_PARSER_FUZZ_SECONDS:-60}"
    timed "onnx parser fuzzing" bash tests/fuzz/onnx/run.sh build-fuzz "${KILN_ONNX_FUZZ_SECONDS:-30}"
  fi
  echo "dev.sh: stage times: $(IFS=,; echo "${TIMINGS[*]}" | sed 's/,/, /g')"
}

case "${1:-}" in
  run)
    build
    "$BUILD_DIR/examples/mlp"
    ;;
  test)
    run_tests
    ;;
  build)
    build
    ;;
  *)
    echo "usage: bash dev.sh run|test|build" >&2
    exit 2
    ;;
esac
