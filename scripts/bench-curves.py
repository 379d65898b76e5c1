"""Cost curves: rzk against Apache ZooKeeper 3.8 (and Curator 5.4 for the recipe rows), each
load swept and drawn as SVG charts (docs/BENCHMARKS.md, Curves).

    /usr/bin/python3 -m scripts.bench-curves [--only sessions,znodes,handoff,fanout]
        [--sessions 1,10,100,1000,5000,10000,19000] [--znodes 1000000]
        [--participants 5,100,1000,5000] [--recipe-participants 5,100,1000,10000]
        [--curator-participants 5,100,1000,5000]
        [--watchers 1,10,100,1000,10000] [--duration-s 10] [--out-dir docs/charts]
        [--json-out FILE] [--update FILE]
    /usr/bin/python3 -m scripts.bench-curves --plot-from FILE [--out-dir DIR]

One run, one server at a time (the machine has two cores and the load shares them), each point
on a fresh durable server (tests/support/servers.py: ZooKeeper with forceSync, rzk with
`--data-dir`), the load from `rzk bench` ($RZK_BIN's release build, the same for both):
  sessions  N sessions, one read in flight each, back to back (scripts/bench-sessions.py's
            throughput): reads/s, p50 and p99, and the server's RSS with every session set up
            (each holds an ephemeral and a watch) less its RSS before, per session; rzk also
            with `--schedule throughput` (--sessions-servers);
  znodes    `rzk bench --workload populate` of --znodes znodes, the server's RSS against its
            node count sampled as it grows (for ZooKeeper also after a forced GC at the end);
  handoff   the election handoff against participants, back to back: at the protocol level
            on both servers (`handoff-event`, each participant watching its predecessor; a
            participant is a thread with two descriptors, and a process here may hold 20,000),
            and the LeaderLatch recipe, Curator's on ZooKeeper (--curator-participants, each a
            CuratorFramework with its own connection, selector and threads, in one JVM) and
            rzk-recipes' on rzk (--recipe-participants, each its own session);
  fanout    one write and N watchers re-arming one-shot watches (`fanout`): the time from the
            write to the last watcher notified, p50 and p99, and the server's CPU per write.
The charts are drawn with Debian's matplotlib (scripts/bench_curves_plot.py), one SVG per
chart, into --out-dir. --json-out keeps every raw measurement; --plot-from draws them again;
--update FILE measures the --only curves again, keeps FILE's others, and writes FILE back.
"""

import argparse
import importlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time

from tests.support import servers
from tests.support.machine import cpu_seconds, log, status_kib

sessions_bench = importlib.import_module("scripts.bench-sessions")
curator_bench = importlib.import_module("scripts.bench-curator")
compare_bench = importlib.import_module("scripts.bench-compare")

ALL = ("sessions", "znodes", "handoff", "fanout")
# Handoffs per Curator LeaderLatch point: each is a close() and a rejoin at the tail.
CURATOR_HANDOFFS = 200
# How often the znodes sweep reads the server's node count and RSS.
SAMPLE_INTERVAL_S = 0.25


def sessions_curve(args, kinds):
    rows = []
    # rzk also with `--schedule throughput`, beside its default, unless told otherwise.
    derived = kinds + (["rzk-throughput"] if "rzk" in kinds else [])
    for kind in args.sessions_servers.split(",") if args.sessions_servers else derived:
        for n in ints(args.sessions):
            row = sessions_bench.throughput(kind, args.rzk_bin, n, args.duration_s)
            log("  %s", json.dumps(row))
            rows.append(row)
    return rows


def node_count(srv):
    out = srv.four_letter("srvr")
    for line in out.splitlines():
        if line.startswith("Node count:"):
            return int(line.split(":")[1])
    raise RuntimeError("srvr has no node count: %r" % out[-500:])


def znodes_curve(args, kinds):
    rows = []
    for kind in kinds:
        srv = servers.start_for_benchmark(kind)
        pid = srv.proc.pid
        try:
            time.sleep(1.0)  # the JVM settles after start-up before the baseline
            samples = [(node_count(srv), status_kib(pid, "VmRSS"))]
            cmd = [args.rzk_bin, "bench", "--connect", srv.hosts, "--workload", "populate",
                   "--znodes", str(args.znodes), "--sessions", "8", "--in-flight", "16",
                   "--json"]
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
            done = threading.Event()

            def sample():
                while not done.wait(SAMPLE_INTERVAL_S):
                    try:
                        samples.append((node_count(srv), status_kib(pid, "VmRSS")))
                    except OSError:
                        pass  # a four-letter word refused under load: the next one counts
            t = threading.Thread(target=sample, daemon=True)
            t.start()
            out, _ = proc.communicate(timeout=1800)
            done.set()
            t.join()
            if proc.returncode != 0:
                raise RuntimeError("%s failed (%d)" % (" ".join(cmd), proc.returncode))
            time.sleep(1.0)
            samples.append((node_count(srv), status_kib(pid, "VmRSS")))
            row = {"server": kind, "znodes": args.znodes, "samples": samples,
                   "report": json.loads(out.strip().splitlines()[-1])}
            if kind == "zookeeper" and shutil.which("jcmd"):
                subprocess.run(["jcmd", str(pid), "GC.run"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=120)
                time.sleep(1.0)
                row["after_gc"] = (node_count(srv), status_kib(pid, "VmRSS"))
            log("  %s: %d samples, %d znodes, RSS %.0f MiB", kind, len(samples),
                samples[-1][0], samples[-1][1] / 1024)
            rows.append(row)
        finally:
            srv.stop()
    return rows


def handoff_curve(args, kinds):
    """The protocol's handoff on both servers, then the two LeaderLatch recipes."""
    bench = curator_args(args)
    rows = []
    for n in ints(args.participants):
        for kind in kinds:
            rows.append(curator_bench.run_bench(bench, "handoff-event", [
                "--participants", n, "--duration-s", args.duration_s], 1800, {"n": n,
                "level": "protocol"}, kind))
    for n in ints(args.recipe_participants) if "rzk" in kinds else []:
        rows.append(curator_bench.run_bench(bench, "handoff", [
            "--participants", n, "--duration-s", args.duration_s], 1800, {"n": n,
            "level": "recipe"}, "rzk"))
    if "zookeeper" in kinds:
        curator_bench.java.compile_harness("ElectionBench", 300)
        for n in ints(args.curator_participants):
            r = curator_bench.run(bench, "latch", [n, CURATOR_HANDOFFS], 1800)
            r.update({"server": "zookeeper", "n": n, "level": "recipe"})
            rows.append(r)
    return rows


def fanout_curve(args, kinds):
    """bench-compare's fanout run (a warm-up first, then the server's CPU per write) at each N."""
    rows = []
    for n in ints(args.watchers):
        for kind in kinds:
            cfg = argparse.Namespace(
                quiet_wait_s=args.quiet_wait_s, tls=False, zk_heap="", rzk_bin=args.rzk_bin,
                warmup_s=min(5.0, args.duration_s), duration_s=args.duration_s, sessions=8,
                in_flight=16, data_bytes=100, keys=1000, watchers=n)
            r = compare_bench.measured_run(cfg, kind, "fanout", 0)
            r.update(n=n, command=r["command"].replace(args.rzk_bin, "rzk"))
            rows.append(r)
    return rows


def curator_args(args):
    """What scripts/bench-curator.py's runners read of their arguments."""
    return argparse.Namespace(quiet_wait_s=args.quiet_wait_s, zk_heap="", client_heap="3g",
                              rzk_bin=args.rzk_bin)


def ints(csv):
    return [int(x) for x in csv.split(",") if x]


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default=",".join(ALL))
    ap.add_argument("--servers", default="zookeeper,rzk")
    # rzk-throughput: rzk with `--schedule throughput`, for the sessions curve's trade-off;
    # by default --servers and, with rzk among them, rzk-throughput.
    ap.add_argument("--sessions-servers")
    ap.add_argument("--sessions", default="1,10,100,1000,5000,10000,19000")
    ap.add_argument("--znodes", type=int, default=1_000_000)
    # handoff-event's participants are threads with blocking sockets, two descriptors each.
    ap.add_argument("--participants", default="5,100,1000,5000")
    ap.add_argument("--recipe-participants", default="5,100,1000,10000")
    ap.add_argument("--curator-participants", default="5,100,1000,5000")
    ap.add_argument("--watchers", default="1,10,100,1000,10000")
    ap.add_argument("--duration-s", type=float, default=10.0)
    ap.add_argument("--quiet-wait-s", type=float, default=60,
                    help="wait at most this long for other work on the machine to end")
    ap.add_argument("--rzk-bin", default=servers.release_rzk_binary())
    ap.add_argument("--out-dir", default=os.path.join(servers.REPO, "docs", "charts"))
    ap.add_argument("--json-out")
    ap.add_argument("--plot-from", help="draw the charts of an earlier --json-out, and stop")
    ap.add_argument("--update", help="an earlier --json-out: measure --only again, keep the rest")
    args = ap.parse_args()
    for m in args.only.split(","):
        if m not in ALL:
            ap.error("unknown curve %r (of %s)" % (m, ", ".join(ALL)))
    return args


def main():
    args = parse_args()
    # Imported here: a run that only measures needs no matplotlib until it draws.
    from scripts import bench_curves_plot
    if args.plot_from:
        with open(args.plot_from) as f:
            result = json.load(f)
    else:
        os.environ["RZK_BIN"] = args.rzk_bin  # the servers' rzk is the load tool's
        kinds = args.servers.split(",")
        run = {"git": git_head(), "started": time.strftime("%Y-%m-%d %H:%M"),
               "command": " ".join(["scripts/bench-curves"] + measuring_args(sys.argv[1:]))}
        result = dict(run)
        if args.update:
            with open(args.update) as f:
                result = json.load(f)
            args.json_out = args.json_out or args.update
        for curve in args.only.split(","):
            log("curve: %s", curve)
            result[curve] = CURVES[curve](args, kinds)
            result.setdefault("runs", {})[curve] = run
            if args.json_out:  # a long run keeps what it has measured so far
                with open(args.json_out, "w") as f:
                    json.dump(result, f, indent=1)
    for path in bench_curves_plot.draw(result, args.out_dir):
        print(path)
    failed = [r for curve in ALL for r in result.get(curve, []) if r.get("error")]
    for r in failed:
        log("FAILED: %s", json.dumps(r))
    if failed:
        sys.exit("%d measurements failed (above); the charts leave them out" % len(failed))


CURVES = {"sessions": sessions_curve, "znodes": znodes_curve, "handoff": handoff_curve,
          "fanout": fanout_curve}


def measuring_args(argv):
    """`argv` without the options that name files: what decides the figures, and no path of
    the machine that ran it."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a.split("=")[0] in ("--json-out", "--update", "--out-dir", "--rzk-bin"):
            skip = "=" not in a
        else:
            out.append(a)
    return out


def git_head():
    p = subprocess.run(["git", "-C", servers.REPO, "rev-parse", "--short", "HEAD"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return p.stdout.strip() or None


if __name__ == "__main__":
    main()
