"""rzk server against Apache ZooKeeper 3.8, side by side in one run (the targets of docs/BENCHMARKS.md).

    /usr/bin/python3 -m scripts.bench-compare [--rounds 2] [--duration-s 10] [--workloads LIST]
                                              [--skip-1m] [--markdown] [--json-out FILE] [--tls]

Both servers run on loopback with equal durability (ZooKeeper: forceSync=yes, its default;
rzk: `rzk server --data-dir`, group commit with fdatasync), on the same disk (temporary
directories under $TMPDIR), ONE AT A TIME: the machine has two cores and the load generator
shares them with the server. The load generator is `rzk bench` ($RZK_BIN, else
target/release/rzk), the same binary for both servers.

For every workload and round the order is ZooKeeper, then rzk; each run gets a fresh server, a
short warm-up run (not measured: JIT, caches, the keys the workload needs), then the measured run.
Per run: throughput and p50/p99/p999 from the tool; server CPU per op (utime+stime of the server
process from /proc/<pid>/stat, before and after, divided by ops; for ZooKeeper the java process);
the load generator's CPU per op; peak RSS (VmHWM). Medians over the rounds are compared.

Separately, per round and server: 1M znodes through `rzk bench --workload populate` (throughput,
RSS growth per znode, for ZooKeeper also after `jcmd <pid> GC.run` and the live heap), then
recovery: SIGKILL and relaunch on the same data, timed from launch to the first session with a
read answered. Start-up time is the same measurement on an empty data directory. "The floor":
fdatasync latency on the data directory's disk and a loopback TCP round trip, measured in Python.

The election handoff as the benchmark targets define it (`handoff-event`, and `handoff-event-idle` with 20 ms
idle before each delete) has its own table: p50 and p99 from the leader's delete to its
successor's event, against ZooKeeper and against the floor (fdatasync + round trip, measured
just before each handoff run, after the same idle gap for the idle workload), with the target
p50 <= 1.5x the floor.

With --tls both servers also serve a secure client port needing a client certificate, from the
same zoo.cfg keys (ZooKeeper on its Netty factory, which TLS requires), with certificates made at
start; the load goes through the secure ports (`rzk bench --tls-ca/--tls-cert/--tls-key`), so
only the pipelined workloads run (get and set are the targets' TLS pair).

Progress goes to stderr; the result tables (plain text, or markdown with --markdown) to stdout.
"""

import argparse
import atexit
import datetime
import hashlib
import json
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

from tests.support import certs, servers, zkwire
from tests.support.net import free_port
from tests.support.floor import fdatasync_floor, handoff_floor, loopback_floor
from tests.support.machine import (children_cpu_s, cpu_seconds, log, status_kib, system_cpu,
                                   wait_quiet)
from scripts.bench_compare_report import (HANDOFF_GAP_MS, KINDS, build_tables, fmt, fmt_ratio,
                                          ratio, render_markdown, render_plain)

REPO = servers.REPO
# fanout-persistent is not one of the targets' workloads: the same fan-out on persistent watches
# (addWatch), which need no re-arm, for users choosing between the two.
ALL_WORKLOADS = (["create", "set", "get", "mixed", "churn", "fanout", "fanout-persistent"]
                 + list(HANDOFF_GAP_MS))


# ---------------------------------------------------------------------------------------------
# A raw ZooKeeper-protocol probe: connect, getData("/"), closeSession. Used to time start-up and
# recovery as "launch to first session with a read answered", identically for both servers.

def read_probe(port, timeout_s=2.0, sock=None):
    """True once a new session is established and getData("/") is answered without error."""
    c = zkwire.Conn("127.0.0.1", port, timeout_s, sock)
    try:
        c.send_frame(zkwire.encode_connect(10000))
        resp = zkwire.decode_connect_response(c.recv_frame())
        if "sessionId" not in resp:
            raise zkwire.WireError("short connect response")
        if resp["timeOut"] <= 0:
            raise zkwire.WireError("session refused")
        c.send("getData", 1, {"path": "/", "watch": False})
        while True:
            r = zkwire.decode_frame(c.recv_frame(), "getData")
            if r["xid"] == 1:
                break
        ok = r["err"] == 0
        try:  # closeSession, so probes leave no sessions behind
            c.send("closeSession", 2)
            c.recv_frame()
        except zkwire.WireError:
            pass
        return ok
    finally:
        c.close()


def time_to_first_read(srv, t0, timeout_s):
    """Seconds from t0 (the launch) to the first answered getData of a new session.

    Connection attempts every 2 ms while the port refuses. An accepted connection is handed to a
    thread and given 20 ms before the next one is opened, without giving up on it: Apache
    ZooKeeper binds its port before it serves, and a session requested in that window is never
    answered (its client must time out and retry), so a sequential prober would measure its
    own timeout. The first answer from any attempt counts."""
    deadline = t0 + timeout_s
    done = threading.Event()
    answered = []
    hung = []

    def attempt(sock):
        try:
            if read_probe(srv.port, 10.0, sock):
                answered.append(time.monotonic())
                done.set()
        except (OSError, zkwire.WireError):
            pass

    while not done.is_set():
        if srv.proc.poll() is not None:
            raise RuntimeError("%s exited with %s during start-up; log in %s"
                               % (srv.kind, srv.proc.returncode, srv.workdir))
        if time.monotonic() > deadline:
            raise TimeoutError("%s: no read answered within %.0fs" % (srv.kind, timeout_s))
        try:
            sock = socket.create_connection(("127.0.0.1", srv.port), timeout=1.0)
        except OSError:
            time.sleep(0.002)
            continue
        threading.Thread(target=attempt, args=(sock,), daemon=True).start()
        if not done.wait(0.02):
            hung.append(1)
    srv.unanswered_probes = len(hung)
    return min(answered) - t0


def mib(kib):
    return kib / 1024.0


# ---------------------------------------------------------------------------------------------
# Servers and the load tool

def start_server(kind, args, wait=True):
    if not args.tls:
        return servers.start_for_benchmark(kind, args.zk_heap, wait=wait)
    port = free_port()
    srv = servers.start_for_benchmark(kind, args.zk_heap, wait=wait,
                                      extra_cfg=certs.secure_port_cfg(args.certs, port))
    srv.secure_hosts = "127.0.0.1:%d" % port
    return srv


def load_hosts(srv):
    """Where the load goes: the secure port with --tls, else the plain one."""
    return getattr(srv, "secure_hosts", None) or srv.hosts


def tls_flags(args):
    """`rzk bench`'s TLS flags with --tls: the test CA and the client certificate it signed."""
    if not args.tls:
        return []
    c = args.certs
    return ["--tls-ca", c.path("ca.crt"), "--tls-cert", c.path("client.crt"),
            "--tls-key", c.path("client.key")]


def bench_args(workload, args):
    if workload in HANDOFF_GAP_MS:
        return ["--participants", str(args.participants), "--gap-ms",
                str(HANDOFF_GAP_MS[workload])]
    if workload == "populate":
        return ["--znodes", str(args.znodes), "--sessions", str(args.sessions),
                "--in-flight", str(args.in_flight)]
    a = ["--sessions", str(args.sessions), "--in-flight", str(args.in_flight),
         "--data-bytes", str(args.data_bytes), "--keys", str(args.keys)]
    if workload.startswith("fanout"):
        a += ["--watchers", str(args.watchers)]
    return a


def run_bench(args, hosts, workload, duration_s, timeout_s):
    cmd = [args.rzk_bin, "bench", "--connect", hosts] + tls_flags(args) + ["--workload",
           "handoff-event" if workload in HANDOFF_GAP_MS else workload]
    cmd += bench_args(workload, args)
    if workload != "populate":
        cmd += ["--duration-s", "%g" % duration_s]
    cmd += ["--json"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout_s)
    if p.returncode != 0:
        raise RuntimeError("%s failed (%d):\n%s%s" % (" ".join(cmd), p.returncode,
                                                      p.stdout[-2000:], p.stderr[-2000:]))
    for line in reversed(p.stdout.splitlines()):
        if line.strip().startswith("{"):
            return json.loads(line), cmd
    raise RuntimeError("%s printed no JSON:\n%s" % (" ".join(cmd), p.stdout[-2000:]))


def adjacent_floor_us(gap_ms):
    """The floor just before a handoff run, idle or back to back as it runs: the floor drifts
    over a long run by more than the margin the target leaves (see docs/BENCHMARKS.md), so each
    handoff is held against its own."""
    fs, rt = handoff_floor(200 if gap_ms else 1000, 200 if gap_ms else 5000, gap_ms)
    return fs["p50_us"] + rt["p50_us"]


def measured_run(args, kind, workload, rnd):
    wait_quiet(args.quiet_wait_s)
    floor_us = (adjacent_floor_us(HANDOFF_GAP_MS[workload]) if workload in HANDOFF_GAP_MS
                else None)
    srv = start_server(kind, args)
    try:
        pid = srv.proc.pid
        if args.warmup_s > 0:
            run_bench(args, load_hosts(srv), workload, args.warmup_s, args.warmup_s + 180)
        c0, k0, (b0, t0) = cpu_seconds(pid), children_cpu_s(), system_cpu()
        r, cmd = run_bench(args, load_hosts(srv), workload, args.duration_s,
                           args.duration_s + 180)
        c1, k1, (b1, t1) = cpu_seconds(pid), children_cpu_s(), system_cpu()
        ops = max(1, int(r["ops"]))
        # CPU used by anything but the server and the load tool (other people's builds).
        other = max(0.0, (b1 - b0) - (c1 - c0) - (k1 - k0))
        r.update({
            "server": kind, "round": rnd, "command": " ".join(cmd),
            "other_cpu_frac": other / max(1e-9, t1 - t0),
            "server_cpu_s": c1 - c0,
            "server_cpu_us_per_op": (c1 - c0) * 1e6 / ops,
            "client_cpu_us_per_op": (k1 - k0) * 1e6 / ops,
            "peak_rss_mib": mib(status_kib(pid, "VmHWM")),
            "rss_mib": mib(status_kib(pid, "VmRSS")),
        })
        if floor_us:
            r.update({"floor_us": floor_us, "x_floor": r["p50_us"] / floor_us})
        log("  %-9s %-7s round %d: %9.0f ops/s  p50 %6s us  p99 %6s us  p999 %6s us  "
            "cpu %6.1f us/op  peak RSS %6.0f MiB  errors %s  other CPU %.0f%%", kind, workload,
            rnd, r["ops_per_s"], r["p50_us"], r["p99_us"], r["p999_us"],
            r["server_cpu_us_per_op"], r["peak_rss_mib"], r.get("errors"),
            r["other_cpu_frac"] * 100)
        return r
    finally:
        srv.stop()


def node_count(srv):
    try:
        m = re.search(r"Node count: (\d+)", srv.four_letter("srvr"))
        return int(m.group(1)) if m else None
    except OSError:
        return None


def populate_run(args, kind, rnd):
    """1M znodes: throughput, RSS per znode (and after a full GC for ZooKeeper), recovery."""
    wait_quiet(args.quiet_wait_s)
    srv = start_server(kind, args)
    try:
        pid = srv.proc.pid
        time.sleep(1.0)  # let the JVM settle after start-up before the baseline RSS
        rss0 = status_kib(pid, "VmRSS")
        c0, k0, (b0, t0) = cpu_seconds(pid), children_cpu_s(), system_cpu()
        r, cmd = run_bench(args, load_hosts(srv), "populate", 0, args.populate_timeout_s)
        c1, k1, (b1, t1) = cpu_seconds(pid), children_cpu_s(), system_cpu()
        r["other_cpu_frac"] = max(0.0, (b1 - b0) - (c1 - c0) - (k1 - k0)) / max(1e-9, t1 - t0)
        rss1 = status_kib(pid, "VmRSS")
        n = int(args.znodes)
        ops = max(1, int(r["ops"]))
        r.update({
            "server": kind, "round": rnd, "command": " ".join(cmd),
            "server_cpu_us_per_op": (c1 - c0) * 1e6 / ops,
            "rss_before_mib": mib(rss0), "rss_after_mib": mib(rss1),
            "rss_per_znode_bytes": (rss1 - rss0) * 1024.0 / n,
            "peak_rss_mib": mib(status_kib(pid, "VmHWM")),
            "node_count": node_count(srv),
        })
        if kind == "zookeeper" and shutil.which("jcmd"):
            subprocess.run(["jcmd", str(pid), "GC.run"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=120)
            time.sleep(1.0)
            rss2 = status_kib(pid, "VmRSS")
            r["rss_after_gc_mib"] = mib(rss2)
            r["rss_per_znode_after_gc_bytes"] = (rss2 - rss0) * 1024.0 / n
            hi = subprocess.run(["jcmd", str(pid), "GC.heap_info"], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, timeout=60).stdout
            m = re.search(r"used (\d+)K", hi)
            if m:
                r["live_heap_mib"] = int(m.group(1)) / 1024.0
                r["live_heap_per_znode_bytes"] = int(m.group(1)) * 1024.0 / n
        log("  %-9s populate round %d: %d znodes at %.0f/s, p99 %s us, RSS %.0f -> %.0f MiB "
            "(%.0f B/znode%s)", kind, rnd, n, r["ops_per_s"], r["p99_us"], mib(rss0), mib(rss1),
            r["rss_per_znode_bytes"],
            ", %.0f after GC, live heap %.0f" % (r["rss_per_znode_after_gc_bytes"],
                                                r.get("live_heap_per_znode_bytes", float("nan")))
            if "rss_per_znode_after_gc_bytes" in r else "")
        # Recovery: crash (SIGKILL) and relaunch on the same data.
        t0 = srv.relaunch()
        r["recovery_s"] = time_to_first_read(srv, t0, args.populate_timeout_s)
        r["rss_after_recovery_mib"] = mib(status_kib(srv.proc.pid, "VmRSS"))
        r["node_count_after_recovery"] = node_count(srv)
        r["recovery_unanswered_probes"] = srv.unanswered_probes
        log("  %-9s recovery round %d: %.3f s to the first read; %s znodes; RSS %.0f MiB",
            kind, rnd, r["recovery_s"], r["node_count_after_recovery"],
            r["rss_after_recovery_mib"])
        return r
    finally:
        srv.stop()


def startup_run(args, kind):
    wait_quiet(args.quiet_wait_s)
    t0 = time.monotonic()
    srv = start_server(kind, args, wait=False)
    try:
        t = time_to_first_read(srv, t0, 60)
        return t, srv.unanswered_probes
    finally:
        srv.stop()


# ---------------------------------------------------------------------------------------------
# The run: the machine, the measurements in order, the report and the guard

def machine_info(args):
    def sh(cmd):
        try:
            return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, timeout=30).stdout.strip()
        except Exception as e:  # noqa: BLE001  (informational only)
            return "? (%s)" % e
    cpu = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kib = int(f.readline().split()[1])
    dev = sh(["df", "--output=source,fstype", tempfile.gettempdir()]).splitlines()[-1]
    return {
        "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "cpu": "%d x %s" % (os.cpu_count(), cpu),
        "mem_gib": round(mem_kib / 1024 / 1024, 1),
        "kernel": platform.release(),
        "disk": " ".join(dev.split()),
        "java": sh(["java", "-version"]).splitlines()[0],
        "rzk": "%s (sha256 %s)" % (sh([args.rzk_bin, "--version"]), args.rzk_sha256),
        "git": sh(["git", "-C", REPO, "rev-parse", "--short", "HEAD"]),
        "zk_heap": args.zk_heap or "JVM default (as Debian's zkServer.sh)",
        "transport": ("TLS, secure ports with client certificates (ZooKeeper: Netty)"
                      if args.tls else "plain TCP"),
    }


def parse_args():
    """The options, with --rzk-bin replaced by a private copy; returns (args, workloads)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--duration-s", type=float, default=10.0)
    ap.add_argument("--warmup-s", type=float, default=5.0)
    ap.add_argument("--workloads", default=",".join(ALL_WORKLOADS),
                    help="comma-separated, from %s" % ",".join(ALL_WORKLOADS))
    ap.add_argument("--sessions", type=int, default=8)
    ap.add_argument("--in-flight", type=int, default=16)
    ap.add_argument("--data-bytes", type=int, default=100)
    ap.add_argument("--keys", type=int, default=1000)
    ap.add_argument("--watchers", type=int, default=100)
    ap.add_argument("--participants", type=int, default=5,
                    help="sessions in the election of the handoff-event workloads")
    ap.add_argument("--znodes", type=int, default=1000000)
    ap.add_argument("--populate-timeout-s", type=float, default=900)
    ap.add_argument("--startup-trials", type=int, default=5)
    ap.add_argument("--quiet-wait-s", type=float, default=300,
                    help="before each run, wait up to this long for the machine to be idle")
    ap.add_argument("--skip-1m", action="store_true",
                    help="quick mode: no populate / RSS per znode / recovery")
    ap.add_argument("--zk-heap", default="",
                    help="ZooKeeper -Xmx (default: none, the JVM default, as Debian runs it)")
    ap.add_argument("--rzk-bin", default=servers.release_rzk_binary())
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--json-out", help="write every raw measurement here")
    ap.add_argument("--guard-throughput-ratio", type=float, metavar="R",
                    help="a coarse regression guard: exit 1 if rzk's throughput on any workload "
                         "is below R times ZooKeeper's in this run")
    ap.add_argument("--tls", action="store_true",
                    help="load both servers through a secure client port needing a client "
                         "certificate (ZooKeeper with Netty); only the pipelined workloads "
                         "(create, set, get, mixed, churn, populate) run over TLS")
    args = ap.parse_args()
    args.certs = None
    if args.tls:
        args.certs = certs.Certs()
        atexit.register(args.certs.remove)
    # A private copy: other engineers may rebuild target/release/rzk during a long run.
    snap = os.path.join(tempfile.mkdtemp(prefix="bench-rzk-bin-"), "rzk")
    shutil.copy2(os.path.abspath(args.rzk_bin), snap)
    with open(snap, "rb") as f:
        args.rzk_sha256 = hashlib.sha256(f.read()).hexdigest()[:16]
    args.rzk_bin = snap
    os.environ["RZK_BIN"] = args.rzk_bin  # servers.start_rzk runs this binary
    workloads = [w for w in args.workloads.split(",") if w]
    for w in workloads:
        if w not in ALL_WORKLOADS:
            ap.error("unknown workload %r" % w)
    h = subprocess.run([args.rzk_bin, "bench", "--help"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    if h.returncode != 0:
        sys.exit("%s has no `bench` subcommand" % args.rzk_bin)
    return args, workloads


def measure(args, workloads, info):
    """The floor, start-up, every workload's rounds and the 1M-znode runs; returns the results."""
    res = {"info": info, "args": vars(args), "workloads": workloads, "runs": {}, "populate": [],
           "startup": None}

    log("the floor")
    wait_quiet(args.quiet_wait_s)
    res["floor"] = {"dir": tempfile.gettempdir(),
                    "fdatasync": fdatasync_floor(tempfile.gettempdir()),
                    "loopback": loopback_floor()}
    log("  %s", res["floor"])

    log("start-up, %d trials per server, alternating", args.startup_trials)
    res["startup"] = {k: [] for k in KINDS}
    for i in range(args.startup_trials):
        for k in KINDS:
            t, hung = startup_run(args, k)
            res["startup"][k].append(t)
            res.setdefault("startup_unanswered_probes", {}).setdefault(k, []).append(hung)
            log("  %-9s start-up %d: %.1f ms (%d connections accepted but not answered within "
                "20 ms)", k, i, t * 1000, hung)

    for w in workloads:
        res["runs"][w] = []
        for rnd in range(args.rounds):
            for k in KINDS:
                res["runs"][w].append(measured_run(args, k, w, rnd))

    if not args.skip_1m:
        for rnd in range(args.rounds):
            for k in KINDS:
                res["populate"].append(populate_run(args, k, rnd))
    return res


def throughput_guard(args, workloads, res):
    """Exits 1 if rzk's throughput on a workload is below --guard-throughput-ratio x ZooKeeper's."""
    below = []
    # A handoff's rate is its latency's inverse, and idle it is the gap's: not a throughput.
    for w in [w for w in workloads if w not in HANDOFF_GAP_MS]:
        zk_ops, rzk_ops = res["medians"][w]["ops_per_s"]
        r = ratio(rzk_ops, zk_ops)
        if r is None or r < args.guard_throughput_ratio:
            below.append("%s: rzk %s ops/s against ZooKeeper's %s (ratio %s)"
                         % (w, fmt(rzk_ops), fmt(zk_ops), fmt_ratio(r)))
    if below:
        sys.exit("throughput guard (ratio >= %g) failed:\n  %s"
                 % (args.guard_throughput_ratio, "\n  ".join(below)))
    log("throughput guard: every workload but the handoffs at >= %g x ZooKeeper",
        args.guard_throughput_ratio)


def main():
    args, workloads = parse_args()
    info = machine_info(args)
    log("machine: %s", info)
    res = measure(args, workloads, info)
    tables = build_tables(res, args)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(res, f, indent=1, default=str)
    if args.markdown:
        print(render_markdown(tables, info, sys.argv[1:]))
    else:
        print(render_plain(tables, info))
    if args.guard_throughput_ratio is not None:
        throughput_guard(args, workloads, res)


if __name__ == "__main__":
    main()
