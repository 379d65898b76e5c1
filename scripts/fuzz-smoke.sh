#!/usr/bin/env bash
# A short fuzzing run of every target, for CI: catches decoder and core panics that the
# unit tests missed. Usage: scripts/fuzz-smoke.sh [SECONDS_PER_TARGET] (default 60).
#
# cargo-fuzz is installed from crates.io when missing. With a nightly toolchain the run uses
# AddressSanitizer; on stable it runs without a sanitizer (RUSTC_BOOTSTRAP lets cargo-fuzz pass
# its coverage flags), which still finds panics, overflows and hangs.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi

if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  run=(cargo +nightly fuzz run)
else
  export RUSTC_BOOTSTRAP=1
  run=(cargo fuzz run --sanitizer none)
fi

mkdir -p fuzz/corpus
for target in $(cargo fuzz list --fuzz-dir fuzz); do
  echo "== fuzzing $target for ${secs}s"
  mkdir -p "fuzz/corpus/$target"
  "${run[@]}" --fuzz-dir fuzz "$target" "fuzz/corpus/$target" -- \
    -max_total_time="$secs" -max_len=4096 -timeout=10 -print_final_stats=1
done
echo "fuzz smoke: all targets ran ${secs}s without a crash"
