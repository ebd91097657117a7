#!/usr/bin/env bash
# Short smoke run of every fuzz target (default 20 s each). Needs cargo-fuzz; on a stable
# toolchain RUSTC_BOOTSTRAP=1 lets it pass its -Z flags. Runs at low priority.
# Usage: fuzz/smoke.sh [seconds-per-target]
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-20}"
export RUSTC_BOOTSTRAP=1
sanitizer="${FUZZ_SANITIZER:-address}"
targets=(${FUZZ_TARGETS:-decode_uri parse_text jsonl_scan sse_parser retention zstd_scan index_file zstd_writer_open})
nice -n 19 cargo fuzz build -s "$sanitizer"
for t in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$t"
  seeds="fuzz/seeds/$t"
  extra=()
  [ -d "$seeds" ] && extra+=("$seeds")
  echo "== $t (${secs}s)"
  nice -n 19 cargo fuzz run -s "$sanitizer" "$t" "fuzz/corpus/$t" ${extra[@]+"${extra[@]}"} -- \
    -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
done
