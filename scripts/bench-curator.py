"""Curator 5.4 election benchmarks on Apache ZooKeeper 3.8 (the targets of docs/BENCHMARKS.md).

    /usr/bin/python3 -m scripts.bench-curator [--only latch,selector,crash,herd,predecessor,
        mutex,uncontended,semaphore,race,queue,counter,discovery] [--latch-n 5,100,1000] [--handoffs 200]
        [--herd-n 100,1000] [--changes 20] [--crash-trials 10] [--session-ms 4000]
        [--selector-s 10] [--mutex-n 5,100,1000] [--lock-s 10] [--semaphore-n 100]
        [--leases 10] [--race-n 1000] [--race-s 10] [--queue-n 4] [--counter-n 8]
        [--queue-s 10] [--discovery-n 100] [--discovery-trials 10] [--markdown] [--json-out F]
        [--config-n 1000] [--config-sessions N] [--config-s 10] [--config-gap-ms 50]

Compiles tests/interop/java/ElectionBench.java and LockBench.java against Debian's Curator 5.4 / ZooKeeper 3.8
jars (as tests/interop/curator_suite.py does) into tests/interop/java/build/, then for each
measurement starts a fresh Apache ZooKeeper 3.8 (tests/support/servers.py: standalone,
tickTime 2000, forceSync on, the JVM's default heap as Debian runs it), runs one harness JVM
and prints the JSON line it reports. All participants of a measurement share one JVM, each
with its own CuratorFramework (its own connection and session); in the crash measurement the
leader is a child JVM that is SIGKILLed.

Measurements:
  latch        LeaderLatch handoff: leader close() to the next isLeader(), the old leader
               rejoining at the tail; N from --latch-n; also start() of all to all nodes, and
               the drain of the whole group one by one
  selector     LeaderSelector, 3 participants, autoRequeue, empty takeLeadership: leaderships/s
  crash        SIGKILL of the leading JVM to the survivor's isLeader(), / session timeout
  herd         plain API, every participant watches the parent's children: notifications per
               change (server mntr and client-side count) and handoff latency; N from --herd-n
  predecessor  Curator LeaderLatch (each watches its predecessor): notifications per change
               (server mntr); N from --herd-n
  mutex        InterProcessMutex handoff among N contenders (--mutex-n), each acquiring and
               releasing in a loop: a holder's release() to the next acquire() returning
  uncontended  InterProcessMutex, one contender: acquire+release pairs per second
  semaphore    InterProcessSemaphoreV2 of --leases leases, --semaphore-n contenders: grants/s
  race         the race election (one EPHEMERAL node at a fixed path, exists watches, race
               again on delete) against predecessor watching, at the protocol level on both
               servers (`rzk bench --workload handoff-event --strategy race | predecessor`):
               handoff time and notifications per handoff (client count; server mntr on
               ZooKeeper); N from --race-n (needs --rzk, for the rzk binary)
  queue        SimpleDistributedQueue, N producers and N consumers (--queue-n), the backlog
               bounded: offer+take pairs per second (tests/interop/java/QueueBench.java)
  counter      DistributedAtomicLong, N clients (--counter-n) incrementing one counter with
               the optimistic retry: increments per second
  config       seed 002's configuration node: N caches of one node (--config-n; Curator's
               CuratorCache SINGLE_NODE_CACHE, tests/interop/java/ConfigBench.java, against
               rzk-recipes' NodeCache, `rzk bench --workload config-propagation`) on
               --config-sessions sessions (default one each), one setData at a time, each
               after every cache saw the last and --config-gap-ms: latency from the write to
               each cache's update (p50, p99) and to the last cache's

Service discovery (--only discovery; tests/interop/java/DiscoveryBench.java):
  discovery    --discovery-n ServiceCaches of one service, one CuratorFramework each; an
               instance's JVM is SIGKILLed (its session left to expire after --session-ms):
               the kill to the last cache without it, --discovery-trials times. With --rzk,
               the instance is `rzk register` (SIGKILLed) on Curator's side, and `rzk bench
               --workload discovery-expiry` (rzk-recipes' ServiceCache, the instance's
               connection closed) runs on rzk and on ZooKeeper.

The lock measurements run Curator (tests/interop/java/LockBench.java) and, with --rzk,
rzk-recipes through `rzk bench` one after another in each of --rounds rounds.

With --rzk, the same run also measures rzk-recipes on rzk through `rzk bench`, and on both
servers the protocol's floor under a LeaderLatch handoff (`rzk bench --workload handoff-read`:
the leader's delete, the successor's event and the list it reads on it, no library).
"""

import argparse
import json
import os
import subprocess
import sys
import time

from tests.support import java, servers
from tests.support.floor import handoff_floor
from tests.support.machine import children_cpu_s, cpu_seconds, log, status_kib, system_cpu, \
    wait_quiet
from scripts.bench_curator_report import BENCH_SERVERS, markdown

ALL = ["latch", "selector", "crash", "herd", "predecessor", "mutex", "uncontended", "semaphore",
       "race"]
ALL += ["queue", "counter"]
ALL += ["config"]
ALL += ["discovery"]


def machine_busy_s():
    return system_cpu()[0]


def run(args, measurement, params, timeout_s, harness="ElectionBench"):
    wait_quiet(args.quiet_wait_s, recheck_s=9.0)
    srv = servers.start_for_benchmark("zookeeper", args.zk_heap)
    try:
        logf = os.path.join(java.BUILD, "election-bench-client.log")
        cmd = java.harness_command(harness, [srv.hosts, measurement] + list(params),
                                   args.client_heap, logf)
        log("%s", " ".join(cmd[cmd.index(harness):]))
        t0 = time.monotonic()
        b0, s0, k0 = machine_busy_s(), cpu_seconds(srv.proc.pid), children_cpu_s()
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=None, text=True,
                               timeout=timeout_s)
        except subprocess.TimeoutExpired:
            log("  TIMED OUT after %.0f s", timeout_s)
            return {"measurement": measurement, "params": params, "error": "timeout"}
        lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
        if p.returncode != 0 or not lines:
            log("  FAILED (exit %d); client log %s", p.returncode, logf)
            return {"measurement": measurement, "params": params,
                    "error": "exit %d" % p.returncode}
        r = json.loads(lines[-1])
        r["wall_s"] = round(time.monotonic() - t0, 1)
        s1, k1 = cpu_seconds(srv.proc.pid), children_cpu_s()
        r["zk_server_cpu_s"] = round(s1 - s0, 2)
        r["client_jvm_cpu_s"] = round(k1 - k0, 2)
        # CPU used by anything else on the machine (other people's builds), as a fraction of it
        other = max(0.0, machine_busy_s() - b0 - (s1 - s0) - (k1 - k0))
        r["other_cpu_frac"] = round(other / (r["wall_s"] * os.cpu_count()), 3)
        r["zk_server_peak_rss_mib"] = round(status_kib(srv.proc.pid, "VmHWM") / 1024.0)
        print(json.dumps(r), flush=True)
        return r
    finally:
        srv.stop()


def run_bench(args, workload, flags, timeout_s, tag=None, server="rzk"):
    """`rzk bench` on a fresh durable rzk server: rzk-recipes' workloads, for the side-by-side
    table; with server="zookeeper", on a fresh Apache ZooKeeper instead (the protocol-level
    handoff-read). `tag` is merged into the result (e.g. the handoff's gap, to pair it with
    Curator's)."""
    wait_quiet(args.quiet_wait_s, recheck_s=9.0)
    srv = servers.start_for_benchmark(server, args.zk_heap)
    try:
        cmd = [args.rzk_bin, "bench", "--connect", srv.hosts, "--workload", workload]
        cmd += [str(x) for x in flags] + ["--json"]
        log("%s", " ".join(cmd[1:]))
        n0 = server_notifications(srv)
        t0 = time.monotonic()
        b0, s0, k0 = machine_busy_s(), cpu_seconds(srv.proc.pid), children_cpu_s()
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               timeout=timeout_s)
        except subprocess.TimeoutExpired:
            log("  TIMED OUT after %.0f s", timeout_s)
            return {"server": server, "workload": workload, "flags": flags, "error": "timeout"}
        lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
        if p.returncode != 0 or not lines:
            log("  FAILED (exit %d): %s", p.returncode, p.stderr[-500:])
            return {"server": server, "workload": workload, "flags": flags,
                    "error": "exit %d" % p.returncode}
        r = json.loads(lines[-1])
        r.update(tag or {})
        r["server"] = server
        r["command"] = "rzk bench " + " ".join(cmd[4:])  # without --connect HOSTS
        r["wall_s"] = round(time.monotonic() - t0, 1)
        s1, k1 = cpu_seconds(srv.proc.pid), children_cpu_s()
        r["server_cpu_s"] = round(s1 - s0, 3)
        other = max(0.0, machine_busy_s() - b0 - (s1 - s0) - (k1 - k0))
        r["other_cpu_frac"] = round(other / (r["wall_s"] * os.cpu_count()), 3)
        n1 = server_notifications(srv)
        handoffs = r.get("rounds", r.get("ops"))
        if n0 is not None and n1 is not None and handoffs:
            # Joins notify nobody in these workloads: every notification is a handoff's.
            r["server_notifications_per_handoff"] = round((n1 - n0) / float(handoffs), 2)
        print(json.dumps(r), flush=True)
        return r
    finally:
        srv.stop()


def server_notifications(srv):
    """Watch notifications the server has sent so far: the sum of ZooKeeper's mntr
    zk_sum_node_*_watch_count rows (watchers triggered); None where mntr has no such rows
    (rzk's)."""
    try:
        out = srv.four_letter("mntr")
    except OSError:
        return None
    rows = [ln.split("\t") for ln in out.splitlines() if ln.startswith("zk_sum_node_")
            and "_watch_count" in ln]
    return sum(int(float(v[1])) for v in rows if len(v) == 2) if rows else None


def floor_row():
    """The fsync + round-trip floor, measured now, as scripts/bench-compare.py does."""
    r = {"measurement": "floor", "server": "-"}
    # Back to back (as back-to-back handoffs run), and after 20 ms asleep (as handoffs with
    # --gap-ms 20 do: on a virtual machine an idle vCPU is slow to wake).
    for tag, idle_ms, n, m in (("", 0.0, 1000, 10000), ("idle_", 20.0, 200, 200)):
        fs, rt = handoff_floor(n, m, idle_ms)
        r.update({tag + "fdatasync_p50_us": fs["p50_us"], tag + "fdatasync_p99_us": fs["p99_us"],
                  tag + "rtt_p50_us": rt["p50_us"], tag + "rtt_p99_us": rt["p99_us"],
                  tag + "floor_us": fs["p50_us"] + rt["p50_us"]})
    print(json.dumps(r), flush=True)
    return r


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default=",".join(ALL))
    ap.add_argument("--latch-n", default="5,100,1000")
    ap.add_argument("--handoffs", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=1,
                    help="LeaderLatch handoff rounds per gap and N; each round runs Curator, "
                         "rzk-recipes and both protocol floors in turn, and the comparison "
                         "takes medians over the rounds")
    ap.add_argument("--herd-n", default="100,1000")
    ap.add_argument("--changes", type=int, default=20)
    ap.add_argument("--gap-ms", type=int, default=20,
                    help="also measure LeaderLatch handoffs with this idle gap after each "
                         "rejoin (0: only back to back, as rzk bench's handoff does)")
    ap.add_argument("--crash-trials", type=int, default=10)
    ap.add_argument("--session-ms", type=int, default=4000)
    ap.add_argument("--selector-s", type=float, default=10.0)
    ap.add_argument("--mutex-n", default="5,100,1000")
    ap.add_argument("--lock-s", type=float, default=10.0,
                    help="seconds measured per lock measurement, on each side")
    ap.add_argument("--semaphore-n", default="100")
    ap.add_argument("--leases", type=int, default=10)
    ap.add_argument("--race-n", default="1000")
    ap.add_argument("--race-s", type=float, default=10.0)
    ap.add_argument("--queue-n", default="4", help="queue producers (and consumers each)")
    ap.add_argument("--counter-n", default="8", help="counter clients")
    ap.add_argument("--queue-s", type=float, default=10.0,
                    help="seconds measured per queue or counter measurement, on each side")
    ap.add_argument("--config-n", default="1000", help="config caches (config)")
    ap.add_argument("--config-sessions", type=int, default=0,
                    help="sessions carrying the config caches (0: one per cache)")
    ap.add_argument("--config-s", type=float, default=10.0,
                    help="seconds measured per config measurement, on each side")
    ap.add_argument("--config-gap-ms", type=int, default=50,
                    help="idle time after each config write's last cache update")
    ap.add_argument("--discovery-n", type=int, default=100, help="service caches")
    ap.add_argument("--discovery-trials", type=int, default=10)
    ap.add_argument("--client-heap", default="3g")
    ap.add_argument("--zk-heap", default="",
                    help="ZooKeeper -Xmx (default: none, the JVM default, as Debian runs it)")
    ap.add_argument("--quiet-wait-s", type=float, default=300,
                    help="before each measurement, wait up to this long for the machine to idle")
    ap.add_argument("--rzk", action="store_true",
                    help="also run rzk-recipes on a durable rzk server through `rzk bench`")
    ap.add_argument("--rzk-only", action="store_true", help="only the --rzk part")
    ap.add_argument("--rzk-duration-s", type=float, default=10.0)
    ap.add_argument("--rzk-alone-n", default="10000",
                    help="rzk-recipes handoffs at these N on rzk alone (no Curator run)")
    ap.add_argument("--rzk-bin", default=servers.release_rzk_binary())
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--json-out")
    args = ap.parse_args()
    args.rzk = args.rzk or args.rzk_only
    return args


def latch_handoffs(args, only, latch_n):
    """The LeaderLatch handoffs of Curator, rzk-recipes and the protocol floors, per gap and N."""
    results = []
    gaps = sorted({0, args.gap_ms})
    # The LeaderLatch handoffs side by side: at each gap and N, every round measures Curator,
    # rzk-recipes and both servers' protocol floors one after another, the order reversed in
    # odd rounds, so that a slow spell of the machine (an idle fdatasync's cost drifts by tens
    # of percent over an hour) lands on both sides of a ratio instead of on one.
    for gap in gaps:
        for n in latch_n:
            for rnd in range(args.rounds):
                steps = []
                if "latch" in only:
                    steps.append(lambda: run(args, "latch", [n, args.handoffs] + (
                        ["gap=%d" % gap] if gap else []), 900))
                if args.rzk and ("latch" in only or args.rzk_only):
                    steps.append(lambda: run_bench(args, "handoff", [
                        "--participants", n, "--duration-s", args.rzk_duration_s,
                        "--gap-ms", gap], 900, {"gap_ms": gap}))
                    # The protocol's floor under those handoffs, on each server with no
                    # election library (the successor lists the children on its event, as
                    # both latches do before claiming).
                    for server in BENCH_SERVERS[::-1]:
                        steps.append(lambda server=server: run_bench(args, "handoff-read", [
                            "--participants", n, "--duration-s", args.rzk_duration_s,
                            "--gap-ms", gap], 900, {"gap_ms": gap, "participants": n}, server))
                for step in (steps if rnd % 2 == 0 else steps[::-1]):
                    r = step()
                    r["round"] = rnd
                    results.append(r)
    return results


def lock_measurements(args, only):
    """Curator's and rzk-recipes' locks, one after the other in each round (the order reversed
    in odd rounds, as the LeaderLatch handoffs are)."""
    plan = []
    if "mutex" in only:
        for n in [int(x) for x in args.mutex_n.split(",")]:
            plan.append((["mutex", n, args.lock_s], "mutex-handoff", ["--participants", n]))
    if "uncontended" in only:
        plan.append((["uncontended", args.lock_s], "mutex-uncontended", []))
    if "semaphore" in only:
        for n in [int(x) for x in args.semaphore_n.split(",")]:
            plan.append((["semaphore", n, args.leases, args.lock_s], "semaphore",
                         ["--participants", n, "--leases", args.leases]))

    def floors(java_args, workload, flags):
        if workload != "mutex-handoff":
            return []
        # The protocol's floor under a mutex handoff on each server (delete, the successor's
        # event, the list it reads on it; no library), as for the latch.
        return [lambda server=server: run_bench(args, "handoff-read", flags + [
            "--duration-s", args.lock_s], 900,
            {"lock_floor": True, "participants": java_args[1]}, server)
            for server in BENCH_SERVERS[::-1]]
    return paired_rounds(args, plan, "LockBench", args.lock_s, floors)


def paired_rounds(args, plan, java_class, duration_s, more_steps=None):
    """Runs each (Curator arguments, `rzk bench` workload, its flags) of `plan` for
    `args.rounds` rounds: Curator's side (`java_class`) and, with --rzk, rzk-recipes' and
    `more_steps(java_args, workload, flags)`, in that order in even rounds and reversed in odd
    ones, so that neither side always runs first."""
    results = []
    for java_args, workload, flags in plan:
        for rnd in range(args.rounds):
            steps = [lambda: run(args, java_args[0], java_args[1:], 1200, java_class)]
            if args.rzk:
                steps.append(lambda: run_bench(args, workload, flags + [
                    "--duration-s", duration_s], 1200))
                if more_steps:
                    steps += more_steps(java_args, workload, flags)
            for step in (steps if rnd % 2 == 0 else steps[::-1]):
                r = step()
                r["round"] = rnd
                results.append(r)
    return results


def queue_measurements(args, only):
    """Curator's and rzk-recipes' queue and counter, one after the other in each round (the
    order reversed in odd rounds, as the locks are)."""
    plan = []
    if "queue" in only:
        for n in [int(x) for x in args.queue_n.split(",")]:
            plan.append((["queue", n, args.queue_s], "queue-pairs", ["--participants", n]))
    if "counter" in only:
        for n in [int(x) for x in args.counter_n.split(",")]:
            plan.append((["counter", n, args.queue_s], "counter-add", ["--participants", n]))
    return paired_rounds(args, plan, "QueueBench", args.queue_s)


def config_measurements(args, only):
    """Curator's CuratorCache and rzk-recipes' NodeCache of one config node, one after the
    other in each round (the order reversed in odd rounds, as the locks are)."""
    if "config" not in only:
        return []
    plan = []
    for n in [int(x) for x in args.config_n.split(",")]:
        sessions = args.config_sessions or n
        plan.append((["config", n, sessions, args.config_s, args.config_gap_ms],
                     "config-propagation", ["--watchers", n, "--participant-sessions", sessions,
                                            "--gap-ms", args.config_gap_ms]))
    return paired_rounds(args, plan, "ConfigBench", args.config_s)


def race_measurements(args):
    """The race election against predecessor watching, at the protocol level, on both servers."""
    results = []
    for n in [int(x) for x in args.race_n.split(",")]:
        for server in BENCH_SERVERS:
            for strategy in ("race", "predecessor"):
                r = run_bench(args, "handoff-event", [
                    "--participants", n, "--strategy", strategy, "--duration-s", args.race_s],
                    1200, {"race_n": n, "strategy_asked": strategy}, server)
                results.append(r)
    return results


def curator_measurements(args, only):
    """Curator's LeaderSelector, crash failover, herd and predecessor notifications."""
    results = []
    if "selector" in only:
        results.append(run(args, "selector", [args.selector_s], args.selector_s + 300))
    if "crash" in only:
        results.append(run(args, "crash", [args.crash_trials, args.session_ms],
                           args.crash_trials * (args.session_ms * 4 / 1000.0 + 30) + 120))
    for n in [int(x) for x in args.herd_n.split(",")]:
        if "herd" in only:
            results.append(run(args, "herd", [n, args.changes], 1200))
        if "predecessor" in only:
            results.append(run(args, "latch", [n, args.changes, "count"], 900))
    return results


def rzk_measurements(args, latch_n):
    """rzk-recipes on rzk alone: large N, the floor, selector, failover, herd and predecessor."""
    results = []
    for n in [int(x) for x in args.rzk_alone_n.split(",") if x]:
        # One session per 10 participants: 10,000 sessions would also work, but the
        # harness's file descriptors are the limit then, not the election.
        results.append(run_bench(args, "handoff", [
            "--participants", n, "--participant-sessions", max(1, n // 10),
            "--duration-s", args.rzk_duration_s], 1800, {"gap_ms": 0}))
    results.append(floor_row())
    results.append(run_bench(args, "selector", ["--participants", 3, "--duration-s",
                                                args.selector_s], args.selector_s + 300))
    results.append(run_bench(args, "failover", ["--session-timeout-ms", args.session_ms,
                                                "--trials", args.crash_trials],
                             args.crash_trials * (args.session_ms * 4 / 1000.0 + 30) + 120))
    for n in [int(x) for x in args.herd_n.split(",")]:
        for strategy in ("herd", "predecessor"):
            if strategy == "predecessor" and n in latch_n:
                continue  # measured above
            results.append(run_bench(args, "handoff", [
                "--participants", n, "--strategy", strategy,
                "--duration-s", args.rzk_duration_s], 1200, {"gap_ms": 0}))
    return results


def discovery_measurements(args, only):
    """An instance's death to every service cache updated: Curator's caches on ZooKeeper and,
    with --rzk, rzk-recipes' on rzk and on ZooKeeper, in each round (the order reversed in odd
    rounds, as the locks are)."""
    if "discovery" not in only:
        return []
    n, trials, ms = args.discovery_n, args.discovery_trials, args.session_ms
    timeout_s = trials * (ms * 4 / 1000.0 + 30) + 300
    results = []
    for rnd in range(args.rounds):
        # With --rzk, Curator's instance is `rzk register`, a session of the same client
        # library as rzk bench's victim, so that both expire alike and only the caches differ.
        victim = [args.rzk_bin] if args.rzk else []
        steps = [lambda: run(args, "discovery", [n, trials, ms] + victim, timeout_s,
                             "DiscoveryBench")]
        if args.rzk:
            for server in BENCH_SERVERS[::-1]:
                steps.append(lambda server=server: run_bench(args, "discovery-expiry", [
                    "--participants", n, "--trials", trials, "--session-timeout-ms", ms],
                    timeout_s, {"caches": n, "session_timeout_ms": ms}, server))
        for step in (steps if rnd % 2 == 0 else steps[::-1]):
            r = step()
            r["round"] = rnd
            results.append(r)
    return results


def main():
    args = parse_args()
    only = [] if args.rzk_only else args.only.split(",")
    try:
        java.compile_harness("ElectionBench", 300)
        java.compile_harness("LockBench", 300)
        java.compile_harness("QueueBench", 300)
        java.compile_harness("ConfigBench", 300)
        java.compile_harness("DiscoveryBench", 300)
    except java.JavaError as e:
        sys.exit(str(e))
    latch_n = [int(x) for x in args.latch_n.split(",")]
    if args.rzk:
        os.environ["RZK_BIN"] = args.rzk_bin
    results = latch_handoffs(args, only, latch_n) + curator_measurements(args, only)
    results += lock_measurements(args, only)
    results += queue_measurements(args, only)
    results += config_measurements(args, only)
    results += discovery_measurements(args, only)
    if args.rzk and "race" in only:
        results += race_measurements(args)
    if args.rzk and (args.rzk_only or any(m in only for m in (
            "latch", "selector", "crash", "herd", "predecessor"))):
        results += rzk_measurements(args, latch_n)
    if args.json_out:
        with open(args.json_out, "w") as fo:
            json.dump(results, fo, indent=1)
    if args.markdown:
        print(markdown(results, sys.argv[1:]))


if __name__ == "__main__":
    main()
