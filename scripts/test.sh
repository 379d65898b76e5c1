#!/usr/bin/env bash
# The whole test gate, as CI runs it (.ci/run calls this). On a fresh Debian 12 machine with
# the Rust toolchain, as root or with sudo:
#
#   scripts/test.sh
#
# Steps, each of which must pass:
#   1. Debian packages for the real-client suites (Apache ZooKeeper 3.8, Curator 5.4, kazoo,
#      Prometheus, MIT Kerberos);
#   2. rustfmt, clippy -D warnings;
#   3. every test of the workspace (what `cargo test --workspace` runs), with the `gssapi`
#      feature, each in its own process, several at once (scripts/run-tests.py): codec golden
#      bytes, unit tests, the seeded world, the suites against in-process servers, Apache
#      ZooKeeper, ensembles, Curator and the Java client, and the Kerberos tests in an MIT
#      realm on loopback;
#   4. the README's set-up and quickstart commands, run verbatim in a fresh clone of HEAD
#      (scripts/readme-commands.py; the README's server needs port 2181 free); then
#      $RZK_WORLD_SEEDS_GATE (10,000) seeds of the seeded world (crates/rzk-world),
#      release-built, run in the background through steps 5-8;
#   5. interop suites with unmodified clients (kazoo, zkCli, Curator, C client) against rzk and,
#      to keep the suites honest, against Apache ZooKeeper, the two side by side; Debian's
#      Prometheus scraping rzk;
#   6. the differential test: one scripted scenario, rzk vs Apache ZooKeeper, byte for byte
#      modulo masked ids and times;
#   7. a fuzz smoke run of every fuzz target ($RZK_FUZZ_SECONDS per target, default 15);
#   8. every criterion micro-benchmark run once (`-- --test`), so they keep building and working;
#   9. a coarse benchmark guard: a release rzk server must serve get, set, create and ephemeral
#      churn at 1.5x Apache ZooKeeper's throughput or more, measured side by side in this run
#      (the target is 2x; full runs measure about 3-18x on them, docs/BENCHMARKS.md). It catches
#      a server that has become several times slower, not a few percent. The same run hands off
#      an election on both servers (`rzk bench --workload handoff-event`, not guarded), so the
#      workload keeps working against Apache ZooKeeper.
set -euo pipefail
cd "$(dirname "$0")/.."

# The gate builds the workspace four ways (check, test, release, fuzz) in one target directory,
# on machines whose free disk is not guaranteed. Incremental caches buy nothing in a fresh clone,
# and line tables keep backtraces readable; together they keep the debug build to a fraction of
# its size with full debug info.
export CARGO_INCREMENTAL=0
export CARGO_PROFILE_DEV_DEBUG=line-tables-only

# Each banner carries the seconds since the gate started, so a log shows where the time goes.
# Seeds of the full-system world (crates/rzk-world) each run sweeps.
WORLD_SEEDS="${RZK_WORLD_SEEDS_GATE:-10000}"

step() { printf '\n==== [%ds] %s\n' "$SECONDS" "$*"; }

step "Debian packages"
scripts/install-deps.sh

step "format and lints"
cargo fmt --all -- --check
# With Kerberos built in, so the `gssapi` code is linted too.
cargo clippy --workspace --all-targets --features rzk/gssapi -- -D warnings

step "tests: every test of the workspace, side by side, with Kerberos built in"
# scripts/run-tests.py builds what `cargo test --workspace` builds, here with the `gssapi`
# feature (the set clippy lints above), and runs each test in its own process, several at
# once: the Kerberos tests (an MIT KDC on loopback, Kerberized ZooKeeper and rzk, the Java
# client) run among the others. It also builds every binary the later steps run
# (target/debug/rzk). Without `gssapi` (a default build) the Kerberos entry points say how to
# get it: the release binary below checks the server's; `cargo test` checks the client's.
/usr/bin/python3 -m scripts.run-tests -- --features rzk/gssapi

step "README commands, verbatim, in a fresh clone"
/usr/bin/python3 -m scripts.readme-commands

step "the seeded world: $WORLD_SEEDS seeds, in the background while the next steps wait on JVMs"
# Release-built, at the lowest priority: it takes the CPU the suites below leave idle, and is
# waited for before the benchmark guard, which needs the machine to itself. Worlds of 10 s of
# faults and 9 s of calm (the calm outlasts any holder's pause); every invariant is checked
# after each, and a failure is printed with its replay command and shrunk.
cargo build --release -p rzk-world --bin rzk-world-soak
world_log=$(mktemp)
nice -n 19 target/release/rzk-world-soak --seeds "$WORLD_SEEDS" --threads 2 \
    --faulty-s 10 --calm-s 9 >"$world_log" 2>&1 & world_run=$!
trap 'kill "$world_run" 2>/dev/null || true' EXIT

step "interop suites against rzk and against Apache ZooKeeper (their own reference), side by side"
# The suites wait on JVMs and servers more than they compute, and every server they start
# takes a free port of its own (tests/support/net.py), so the two runs share the machine.
interop=$(mktemp -d)
tests/interop/run_all.sh --server rzk >"$interop/rzk.log" 2>&1 & rzk_run=$!
tests/interop/run_all.sh --server zookeeper >"$interop/zookeeper.log" 2>&1 & zk_run=$!
rzk_rc=0; wait "$rzk_run" || rzk_rc=$?
zk_rc=0; wait "$zk_run" || zk_rc=$?
echo "---- against rzk"; cat "$interop/rzk.log"
echo "---- against Apache ZooKeeper"; cat "$interop/zookeeper.log"
rm -rf "$interop"
[ "$rzk_rc" -eq 0 ] && [ "$zk_rc" -eq 0 ]

step "Prometheus scrapes rzk's metrics endpoint"
/usr/bin/python3 -m tests.interop.prometheus_suite --server rzk

step "differential test: rzk vs Apache ZooKeeper"
/usr/bin/python3 -m tests.differential.diff_test

step "fuzz smoke"
scripts/fuzz-smoke.sh "${RZK_FUZZ_SECONDS:-15}"

step "profiling scripts: handoff-timeline.py splits a recorded idle handoff"
# A real `perf sched timehist -w` excerpt (four handoffs against a server of pid 10815).
timeline=$(/usr/bin/python3 -m scripts.handoff-timeline \
    --timehist scripts/testdata/handoff-timehist.txt --server-pid 10815)
grep -qx '4 handoffs with every step seen' <<<"$timeline"
grep -qxF '| delete to the event sent | 445 | 486 | 501 |' <<<"$timeline"

step "micro-benchmarks, each run once"
cargo bench -p rzk-microbench -- --test

step "the seeded world's sweep, waited for"
world_rc=0; wait "$world_run" || world_rc=$?
cat "$world_log"; rm -f "$world_log"
[ "$world_rc" -eq 0 ]

step "coarse benchmark guard: rzk against Apache ZooKeeper, side by side"
# target/release/rzk is the README step's build: its `cargo run --release` in a clone of HEAD
# writes into this target directory. Building it again here would compile every workspace
# crate once more, under this checkout's path (about 2.5 minutes on 2 cores).
[ -x target/release/rzk ] || { echo "the README step left no target/release/rzk" >&2; exit 1; }
# A default build (no `gssapi`) refuses a Kerberos JAAS section and says how to get it.
krb=$(mktemp -d)
printf 'sessionRequireClientSASLAuth=true\n' >"$krb/zoo.cfg"
printf 'Server {\n  com.sun.security.auth.module.Krb5LoginModule required\n  useKeyTab=true keyTab="/etc/zk.keytab" principal="zookeeper/h@R";\n};\n' >"$krb/jaas.conf"
if timeout 10 target/release/rzk server --in-memory --bind 127.0.0.1 --port 0 \
    --config "$krb/zoo.cfg" --jaas "$krb/jaas.conf" 2>"$krb/err"; then
  echo "a default build started a Kerberos server" >&2; exit 1
fi
grep -q "without GSSAPI" "$krb/err" || { cat "$krb/err" >&2; exit 1; }
rm -rf "$krb"
/usr/bin/python3 -m scripts.bench-compare --workloads get,set,create,churn,handoff-event --rounds 1 \
    --duration-s 3 --warmup-s 1 --skip-1m --startup-trials 1 --quiet-wait-s 0 \
    --guard-throughput-ratio 1.5

step "all tests passed"
