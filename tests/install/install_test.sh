#!/usr/bin/env bash
# Installs kiln from the build tree into a temporary prefix, builds a separate project against
# it with find_package(kiln), and runs it.
set -euo pipefail
build_dir=$1
src_dir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build_dir" --prefix "$tmp/prefix" > "$tmp/install.log"
test -f "$tmp/prefix/lib/cmake/kiln/kilnConfig.cmake" || { echo "no kilnConfig.cmake installed"; exit 1; }
test -f "$tmp/prefix/include/kiln/kiln.h" || { echo "no kiln.h installed"; exit 1; }
test -x "$tmp/prefix/bin/kilnc" || { echo "no kilnc installed"; exit 1; }
"$tmp/prefix/bin/kilnc" --help | grep -q "kilnc compile" || { echo "installed kilnc --help fails"; exit 1; }
cmake -S "$src_dir/tests/install/consumer" -B "$tmp/build" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" > "$tmp/configure.log"
cmake --build "$tmp/build" > "$tmp/build.log"
LD_LIBRARY_PATH="$tmp/prefix/lib:${LD_LIBRARY_PATH:-}" "$tmp/build/consumer"
