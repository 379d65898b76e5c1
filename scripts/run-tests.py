"""Runs the workspace's tests side by side: every test in a process of its own, several at once.

    /usr/bin/python3 -m scripts.run-tests [--jobs N] [--heavy-slots K] [--timeout-s S]
                                          [--match TEXT] [-- CARGO_TEST_ARGS...]

Builds the test binaries with `cargo test --workspace --no-run` (plus CARGO_TEST_ARGS), lists
each binary's tests, and runs each test as `BINARY --exact NAME` in its package's directory, as
cargo does, N at a time; the doc-tests run as one more job (`cargo test --workspace --doc`).
Exits 1 if any test fails or outlives --timeout-s, after printing each failure's output; then
prints the slowest tests.

Why not `cargo test`: it runs one binary at a time, and most of the gate's tests spend their
time waiting out session timeouts, reconnects and JVM start-ups, not computing. Run side by
side they share two cores well. What must not overlap much, scenarios that start JVMs or have
tight time bounds, holds a heavy slot (`rzk_testkit::slots`): the run allows K of them at once
(RZK_TEST_HEAVY_SLOTS).

Why not cargo-nextest, which does the same: CI machines are fresh and fetch from registries
only, so it would be compiled from source on every run, and this is one small script.
A test is never retried: a test that fails once has failed.
"""

import argparse
import collections
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Defaults, sized for the 2-core machines the gate runs on: enough tests at once to keep both
# cores busy while most of them wait, and two heavy scenarios. With 8 and 3 the tests took
# 418-441 s instead of 607 s, but timing-bound tests failed under the load in one gate run.
JOBS_DEFAULT = 6
HEAVY_SLOTS_DEFAULT = 2
TIMEOUT_S_DEFAULT = 600
# How much of a failed test's output is printed (its end, where the panic is).
FAILURE_OUTPUT_MAX_CHARS = 40_000
SLOWEST_SHOWN = 15


class Test:
    def __init__(self, binary, package, cwd, name):
        self.binary, self.package, self.cwd, self.name = binary, package, cwd, name
        self.seconds, self.output, self.outcome = 0.0, "", None

    def label(self):
        return f"{self.package}::{os.path.basename(self.binary).rsplit('-', 1)[0]} {self.name}"


def build(cargo_args):
    """The test binaries: [(executable, package name, package directory)]."""
    cmd = ["cargo", "test", "--workspace", "--no-run", "--message-format=json-render-diagnostics"]
    proc = subprocess.run(cmd + cargo_args, cwd=REPO, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        sys.exit(f"build failed: {' '.join(cmd + cargo_args)}")
    out = []
    for line in proc.stdout.splitlines():
        msg = json.loads(line)
        if msg.get("reason") == "compiler-artifact" and msg.get("executable") and \
                msg["profile"]["test"]:
            cwd = os.path.dirname(msg["manifest_path"])
            # Each crate's directory is named as the crate is.
            out.append((msg["executable"], os.path.basename(cwd), cwd))
    return out


def listed(binary, cwd):
    """The tests of one binary, from `--list --format terse`."""
    out = subprocess.run([binary, "--list", "--format", "terse"], cwd=cwd,
                         stdout=subprocess.PIPE, text=True, check=True).stdout
    return [line[:-len(": test")] for line in out.splitlines() if line.endswith(": test")]


def interleaved(tests):
    """The tests, one from each binary in turn: a binary's slow scenarios start early and
    overlap those of the others, and no binary waits for its turn at the end."""
    by_binary = collections.OrderedDict()
    for t in tests:
        by_binary.setdefault(t.binary, collections.deque()).append(t)
    order = []
    while by_binary:
        for binary in list(by_binary):
            order.append(by_binary[binary].popleft())
            if not by_binary[binary]:
                del by_binary[binary]
    return order


def run_one(argv, cwd, env, timeout_s):
    """(passed, seconds, output) of one process; a process outliving timeout_s is killed with
    its process group, and fails."""
    start = time.monotonic()
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            code = proc.wait(timeout=timeout_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            code, timed_out = -1, True
        log.seek(0)
        output = log.read().decode("utf-8", "replace")
    if timed_out:
        output += f"\n[run-tests] killed after {timeout_s} s\n"
    return code == 0, time.monotonic() - start, output


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=JOBS_DEFAULT)
    ap.add_argument("--heavy-slots", type=int, default=HEAVY_SLOTS_DEFAULT)
    ap.add_argument("--timeout-s", type=int, default=TIMEOUT_S_DEFAULT)
    ap.add_argument("--match", default="", help="only tests whose label contains this")
    ap.add_argument("cargo_args", nargs="*")
    args = ap.parse_args()

    binaries = build(args.cargo_args)
    tests = [Test(b, pkg, cwd, name) for b, pkg, cwd in binaries for name in listed(b, cwd)]
    tests = interleaved([t for t in tests if args.match in t.label()])
    env = dict(os.environ)
    env["RZK_TEST_HEAVY_SLOTS"] = str(args.heavy_slots)
    slot_dir = tempfile.mkdtemp(prefix="rzk-test-slots-")
    env["RZK_TEST_SLOT_DIR"] = slot_dir
    env.setdefault("RUST_BACKTRACE", "1")

    jobs = collections.deque(tests)
    doc = Test("cargo test --doc", "workspace", REPO, "doc-tests")
    if not args.match:
        jobs.appendleft(doc)
    lock = threading.Lock()
    done = []
    start = time.monotonic()

    def worker():
        while True:
            with lock:
                if not jobs:
                    return
                t = jobs.popleft()
            if t is doc:
                argv = ["cargo", "test", "--workspace", "--doc"] + args.cargo_args
                test_env = env
            else:
                argv = [t.binary, "--exact", t.name, "--test-threads", "1"]
                test_env = dict(env, CARGO_MANIFEST_DIR=t.cwd)
            ok, t.seconds, t.output = run_one(argv, t.cwd, test_env, args.timeout_s)
            t.outcome = "ok" if ok else "FAILED"
            with lock:
                done.append(t)
                print(f"[{time.monotonic() - start:6.0f}s] {t.outcome:<6} {t.seconds:6.1f}s "
                      f"{t.label()}  ({len(done)}/{len(tests) + (0 if args.match else 1)})",
                      flush=True)

    threads = [threading.Thread(target=worker) for _ in range(max(1, args.jobs))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()

    shutil.rmtree(slot_dir, ignore_errors=True)
    failed = [t for t in done if t.outcome != "ok"]
    for t in failed:
        print(f"\n---- {t.label()} ({t.seconds:.1f} s) ----")
        print(t.output[-FAILURE_OUTPUT_MAX_CHARS:])
    print(f"\nslowest {SLOWEST_SHOWN}:")
    for t in sorted(done, key=lambda t: -t.seconds)[:SLOWEST_SHOWN]:
        print(f"  {t.seconds:6.1f}s {t.label()}")
    wall = time.monotonic() - start
    busy = sum(t.seconds for t in done)
    print(f"\n{len(done) - len(failed)} passed, {len(failed)} failed, in {wall:.0f} s "
          f"({busy:.0f} s of test time, {args.jobs} jobs, {args.heavy_slots} heavy slots)")
    for t in failed:
        print(f"FAILED {t.label()}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
