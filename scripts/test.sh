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
#   3. in the background, at the lowest priority, through steps 4-7: $RZK_WORLD_SEEDS_GATE
#      (10,000) seeds of the seeded world (crates/rzk-world), release-built; a fuzz smoke run
#      of every fuzz target ($RZK_FUZZ_SECONDS per target, default 15); every criterion
#      micro-benchmark run once (`-- --test`), so they keep building and working;
#   4. every test of the workspace (what `cargo test --workspace` runs), with the `gssapi` and
#      `zookeeper-tests` features, each in its own process, several at once
#      (scripts/run-tests.py): codec golden bytes, unit tests, the seeded world, the suites
#      against in-process servers, Apache ZooKeeper, ensembles, Curator and the Java client,
#      and the Kerberos tests in an MIT realm on loopback;
#   5. the README's set-up and quickstart commands, run verbatim in a fresh clone of HEAD
#      (scripts/readme-commands.py; the README's server needs port 2181 free);
#   6. interop suites with unmodified clients (kazoo, zkCli, Curator, C client) against rzk and,
#      to keep the suites honest, against Apache ZooKeeper, the two side by side; Debian's
#      Prometheus scraping rzk;
#   7. the differential test: one scripted scenario, rzk vs Apache ZooKeeper, byte for byte
#      modulo masked ids and times;
#   8. the background checks of step 3, waited for;
#   9. a coarse benchmark guard: a release rzk server must serve get, set, create and ephemeral
#      churn at 1.5x Apache ZooKeeper's throughput or more, measured side by side in this run
#      (the target is 2x; full runs measure about 3-18x on them, docs/BENCHMARKS.md). It catches
#      a server that has become several times slower, not a few percent. The same run hands off
#      an election on both servers (`rzk bench --workload handoff-event`, not guarded), so the
#      workload keeps working against Apache ZooKeeper; a small run of the sessions
#      benchmark (scripts/bench-sessions.py) on rzk; and a small sweep of the cost curves
#      (scripts/bench-curves.py), drawn.
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
# Seeds in which the world must find the rarest reintroduced bug (tests/README.md).
BUG_HUNT_SEEDS=3000

# Kerberos built in, and the tests that start Apache ZooKeeper or a JVM, which a plain
# `cargo test` (the fast tier) leaves out: every crate that has them names the feature.
FEATURES=rzk/gssapi
for krate in rzk rzk-server rzk-client rzk-recipes; do
  FEATURES="$FEATURES,$krate/zookeeper-tests"
done

step() { printf '\n==== [%ds] %s\n' "$SECONDS" "$*"; }

step "Debian packages"
scripts/install-deps.sh

step "format and lints"
cargo fmt --all -- --check
# With every feature the tests use, so the `gssapi` code and the ZooKeeper tests are linted.
cargo clippy --workspace --all-targets --features "$FEATURES" -- -D warnings
# ARCHITECTURE.md's table of crate edges against the Cargo.toml files.
/usr/bin/python3 -m scripts.crate-edges

step "in the background, at the lowest priority: the seeded world, fuzzing, micro-benchmarks"
# CPU-bound checks that time nothing: they take the CPU the test suites below leave idle
# (most tests wait on session timeouts, reconnects and JVMs), yield it to them at once (nice
# 19), and are waited for before the benchmark guard, which needs the machine to itself.
# - $WORLD_SEEDS seeds of the full-system world (crates/rzk-world), release-built: worlds of
#   10 s of faults and a calm of up to 9 s (longer than any holder's pause); every invariant is
#   checked after each, and a failure is printed with its replay command and shrunk; then
#   the reintroduced bug too rare for `cargo test` (`lease-release`), which the world must
#   find within $BUG_HUNT_SEEDS seeds of four semaphore holders;
# - a fuzz smoke run of every fuzz target ($RZK_FUZZ_SECONDS per target, default 15);
# - every criterion micro-benchmark run once (`-- --test`), so they keep building and working;
# - rzk-world's and rzk-sim's own tests (the world's bug hunts, the replay checks, the
#   server core's simulation), release-built.
# Each writes its own log; the release builds share target/release one after another.
background=$(mktemp -d)
(
  cd "$PWD"
  rc=0
  nice -n 19 cargo build --release -p rzk-world --bin rzk-world-soak || rc=1
  if [ "$rc" -eq 0 ]; then
    nice -n 19 target/release/rzk-world-soak --seeds "$WORLD_SEEDS" --threads 2 \
        --faulty-s 10 --calm-s 9 >"$background/world.log" 2>&1 &
    world=$!
  fi
  nice -n 19 scripts/fuzz-smoke.sh "${RZK_FUZZ_SECONDS:-15}" >"$background/fuzz.log" 2>&1 \
      || echo "fuzz smoke failed" >>"$background/failed"
  nice -n 19 cargo bench -p rzk-microbench -- --test >"$background/bench.log" 2>&1 \
      || echo "micro-benchmarks failed" >>"$background/failed"
  # The simulations' own tests, release-built on the soak's dependencies: CPU-bound, six
  # times faster than in the debug build the foreground tests use.
  if [ "$rc" -eq 0 ]; then
    nice -n 19 cargo test --release -p rzk-world -p rzk-sim >"$background/sim.log" 2>&1 \
        || echo "the world's or the simulation's tests failed" >>"$background/failed"
  fi
  if [ "$rc" -ne 0 ]; then
    echo "the world's release build failed" >>"$background/failed"
  elif ! wait "$world"; then
    echo "the seeded world's sweep failed" >>"$background/failed"
  elif ! nice -n 19 target/release/rzk-world-soak --bug lease-release --mix semaphore=4 \
      --seeds "$BUG_HUNT_SEEDS" --threads 2 --expect-found >>"$background/world.log" 2>&1; then
    echo "the seeded world missed the lease-release bug" >>"$background/failed"
  fi
) >"$background/build.log" 2>&1 &
background_run=$!
trap 'kill "$background_run" 2>/dev/null || true; pkill -f rzk-world-soak 2>/dev/null || true' EXIT

step "tests: every test of the workspace, side by side, with Kerberos built in"
# scripts/run-tests.py builds what `cargo test --workspace` builds, here with the features
# clippy lints above, and runs each test in its own process, several at
# once: the Kerberos tests (an MIT KDC on loopback, Kerberized ZooKeeper and rzk, the Java
# client) run among the others. It also builds every binary the later steps run
# (target/debug/rzk). Without `gssapi` (a default build) the Kerberos entry points say how to
# get it: the release binary below checks the server's; `cargo test` checks the client's.
# rzk-world's and rzk-sim's tests run in the background instead, release-built.
/usr/bin/python3 -m scripts.run-tests -- --features "$FEATURES" \
    --exclude rzk-world --exclude rzk-sim

step "README commands, verbatim, in a fresh clone"
/usr/bin/python3 -m scripts.readme-commands

step "packaging: the systemd units, readiness and the watchdog, completions, man pages"
/usr/bin/python3 -m tests.packaging.suite

step "interop suites against rzk and against Apache ZooKeeper (their own reference), side by side"
# The suites wait on JVMs and servers more than they compute, and every server they start
# takes a free port of its own (tests/support/net.py), so the two runs share the machine.
interop=$(mktemp -d)
shots=target/console-screenshots
rm -rf "$shots"
tests/interop/run_all.sh --server rzk >"$interop/rzk.log" 2>&1 & rzk_run=$!
tests/interop/run_all.sh --server zookeeper >"$interop/zookeeper.log" 2>&1 & zk_run=$!
rzk_rc=0; wait "$rzk_run" || rzk_rc=$?
zk_rc=0; wait "$zk_run" || zk_rc=$?
echo "---- against rzk"; cat "$interop/rzk.log"
echo "---- against Apache ZooKeeper"; cat "$interop/zookeeper.log"
rm -rf "$interop"
[ "$rzk_rc" -eq 0 ] && [ "$zk_rc" -eq 0 ]
# The console suite's screenshots are the run's artifacts (CI keeps $shots): every page it
# shows, against each server.
for kind in rzk zookeeper; do
  for page in overview lock election election-after markup-as-text ask-to-go \
      election-on-admin-port; do
    [ -s "$shots/$page-$kind.png" ] || { echo "no screenshot $shots/$page-$kind.png" >&2; exit 1; }
  done
done
ls -l "$shots"

step "Prometheus scrapes rzk's metrics endpoint"
/usr/bin/python3 -m tests.interop.prometheus_suite --server rzk

step "differential test: rzk vs Apache ZooKeeper"
/usr/bin/python3 -m tests.differential.diff_test

step "profiling scripts: handoff-timeline.py splits a recorded idle handoff"
# A real `perf sched timehist -w` excerpt (four handoffs against a server of pid 10815).
timeline=$(/usr/bin/python3 -m scripts.handoff-timeline \
    --timehist scripts/testdata/handoff-timehist.txt --server-pid 10815)
grep -qx '4 handoffs with every step seen' <<<"$timeline"
grep -qxF '| delete to the event sent | 445 | 486 | 501 |' <<<"$timeline"

step "the background checks, waited for: the seeded world, fuzzing, micro-benchmarks"
wait "$background_run" || true
for log in build fuzz bench sim world; do
  [ -f "$background/$log.log" ] || continue
  echo "---- $log"
  # The fuzzers' and the benchmarks' full output is long; their last lines say how they ended.
  case "$log" in
    fuzz|bench|sim) tail -n 15 "$background/$log.log" ;;
    *) cat "$background/$log.log" ;;
  esac
done
if [ -f "$background/failed" ]; then
  cat "$background/failed" >&2
  for log in fuzz bench sim; do cat "$background/$log.log"; done
  exit 1
fi
rm -rf "$background"

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

# The sessions benchmark keeps working end to end (docs/BENCHMARKS.md, Sessions), small: a
# storm, a victim process's expiry seen by the observers, a crash and recovery, one size of
# one-read-in-flight load; every session must be set up, and every ephemeral recovered.
sessions=$(/usr/bin/python3 -m scripts.bench-sessions --servers rzk --sessions 2000 --victims 1000 \
    --hold-s 2 --throughput 1000 --rzk-bin target/release/rzk)
echo "$sessions"
grep -qx '| connect errors | 0 |' <<<"$sessions"
grep -qx '| deletion events the observers saw | 4,000 |' <<<"$sessions"
grep -qx '| ephemerals recovered / logged | 2,000 / 2,000 |' <<<"$sessions"

# The cost curves keep being measured and drawn (docs/BENCHMARKS.md, Curves), small: every
# curve on both servers at one or two sizes; the script fails if any point did.
charts=$(mktemp -d)
/usr/bin/python3 -m scripts.bench-curves --sessions 1,100 --znodes 20000 --participants 5 \
    --recipe-participants 5 --curator-participants 5 --watchers 1,10 --duration-s 1 \
    --quiet-wait-s 0 --rzk-bin target/release/rzk --out-dir "$charts"
for chart in sessions znodes handoff fanout; do
  grep -q 'Apache ZooKeeper 3.8' "$charts/$chart.svg"
done
rm -rf "$charts"

step "all tests passed"
