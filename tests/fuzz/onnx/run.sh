#!/usr/bin/env bash
# Runs kiln_onnx_fuzzer for a bounded time, seeded with the ONNX node tests' models (Debian's
# libonnx-testdata; read only) and a scratch corpus.
#   bash tests/fuzz/onnx/run.sh <build-dir> [seconds]
set -euo pipefail
build="$1"
seconds="${2:-60}"
data=/usr/share/libonnx-testdata/data/node
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$work/seeds" "$work/artifacts"
if [ -d "$data" ]; then
  for d in "$data"/*/; do
    [ -f "$d/model.onnx" ] && cp "$d/model.onnx" "$work/seeds/$(basename "$d").onnx"
  done
fi
status=0
"$build/tests/fuzz/onnx/kiln_onnx_fuzzer" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$work/artifacts/" "$work/corpus" "$work/seeds" || status=$?
for f in "$work"/artifacts/*; do
  [ -e "$f" ] || continue
  echo "kiln_onnx_fuzzer: failing input $f:"
  od -c "$f" | head -40
done
exit $status
