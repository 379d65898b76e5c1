#!/usr/bin/env bash
# A short fuzzing run of every target, for CI: catches decoder and core panics that the
# unit tests missed. Usage: scripts/fuzz-smoke.sh [SECONDS_PER_TARGET] (default 60).
#
# The targets are libFuzzer binaries (libfuzzer-sys), built here with the coverage flags
# `cargo fuzz` passes, on the stable toolchain and without a sanitizer: that still finds
# panics, overflows (debug assertions are on) and hangs. Building them directly spares the gate
# compiling cargo-fuzz itself, about a hundred crates, on every fresh machine; `cargo fuzz run
# TARGET` (cargo install cargo-fuzz) works on the same crate for longer runs by hand, with
# AddressSanitizer on a nightly toolchain.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"

host=$(rustc -vV | sed -n 's/^host: //p')
# Only the targets get the flags: with --target, build scripts and proc-macros are built
# for the host without them (they would not link against libFuzzer's coverage hooks).
# RUSTFLAGS replaces .cargo/config.toml's (tokio_unstable), which these crates do not need.
export RUSTFLAGS="--cfg fuzzing -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares -Cdebug-assertions -Coverflow-checks"
cargo build --manifest-path fuzz/Cargo.toml --release --bins --target "$host" \
    --target-dir fuzz/target
unset RUSTFLAGS

mkdir -p fuzz/corpus fuzz/artifacts
for src in fuzz/fuzz_targets/*.rs; do
  target=$(basename "$src" .rs)
  echo "== fuzzing $target for ${secs}s"
  mkdir -p "fuzz/corpus/$target" "fuzz/artifacts/$target"
  "fuzz/target/$host/release/$target" "fuzz/corpus/$target" \
    -artifact_prefix="fuzz/artifacts/$target/" -max_total_time="$secs" -max_len=4096 \
    -timeout=10 -print_final_stats=1
done
echo "fuzz smoke: all targets ran ${secs}s without a crash"
