#!/usr/bin/env bash
# Runs kiln_parse_fuzzer for a bounded time from the checked-in corpus (never writing into it).
#   bash tests/fuzz/parser/run.sh <build-dir> [seconds]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$1"
seconds="${2:-60}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$work/artifacts"
# New inputs go to $work/corpus; the repository corpus is read only. A crash, leak or failed
# property leaves its input in $work/artifacts and is printed (hex) before this script fails.
status=0
"$build/tests/fuzz/parser/kiln_parse_fuzzer" -max_total_time="$seconds" -dict="$here/ir.dict" -max_len=4096 \
  -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/artifacts/" \
  "$work/corpus" "$here/../corpus" || status=$?
for f in "$work"/artifacts/*; do
  [ -e "$f" ] || continue
  echo "kiln_parse_fuzzer: failing input $f:"
  od -c "$f" | head -40
done
exit $status
