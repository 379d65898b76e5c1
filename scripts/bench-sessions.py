"""Many sessions on one server: rzk against Apache ZooKeeper 3.8, one at a time, in one run
(docs/BENCHMARKS.md, Sessions).

    /usr/bin/python3 -m scripts.bench-sessions [--servers rzk,zookeeper] [--sessions 19000]
        [--victims 10000] [--hold-s 20] [--throughput 1000,10000,19000] [--json-out FILE]
    /usr/bin/python3 -m scripts.bench-sessions --markdown-from FILE

The hold: --sessions sessions, each with an ephemeral node under one registry and a watch on it
(half persistent, half one-shot re-armed), pinging at a third of their timeout, a tenth reading
their node every second (`rzk bench --workload sessions`). They come from two load processes
(a process may hold 20,000 descriptors here, a server 19,000 connections): the survivors (30 s
sessions) and the victims (--victims of them, 10 s sessions), connecting at once, a storm; a
third process holds four observers with a persistent recursive watch on the registry. Measured:
connect errors and the time until every session is set up; the server's RSS per session
(VmRSS held less VmRSS before) and CPU over --hold-s; the reads' p99 over that window; then the
victims' process is SIGKILLed and the time from the kill to the observers' last deletion event,
less the victims' timeout, is the server's expiry-and-delivery lag; then as many sessions as the
victims had connect again and the server is SIGKILLed and relaunched on its log: the time until
it serves, and the ephemerals it recovered. For ZooKeeper the hold runs at --sessions and, if it
fails (a connect error, a session lost), at fewer, halving, to find where it holds.

The throughput: each size of --throughput sessions reads back to back, one read in flight each
(`--getters-pct 100 --get-interval-ms 0`), for --hold-s; reads per second and per server core
(reads / the server's CPU seconds), beside the 8-session pipelined figure (`--workload get
--sessions 8 --in-flight 16`), whose per-core rate the issue's target halves.

The load processes share the two cores with the server; their CPU is reported. Progress goes to
stderr, the tables (markdown) to stdout.
"""

import argparse
import json
import math
import os
import subprocess
import tempfile
import time

from tests.support import servers
from tests.support.machine import cpu_seconds, log, status_kib

PER_PROCESS_MAX = 10_000
SURVIVOR_TIMEOUT_MS = 30_000
VICTIM_TIMEOUT_MS = 10_000
OBSERVERS = 4
READY_LIMIT_S = 300


def start_server(kind):
    if kind == "zookeeper":
        # ZooKeeper's listen backlog defaults to the JVM's 50: given rzk's, a storm is fair.
        return servers.start_for_benchmark(kind, extra_cfg={"clientPortListenBacklog": 4096})
    if kind == "rzk-throughput":  # the other way rzk's threads take turns under overload
        return servers.start_for_benchmark("rzk", rzk_args=["--schedule", "throughput"])
    return servers.start_for_benchmark(kind)


class Load:
    """One `rzk bench --workload sessions` process."""

    def __init__(self, rzk, hosts, sessions, timeout_ms, hold_s, extra=()):
        self.samples = tempfile.mktemp(prefix="rzk-sessions-", suffix=".txt")
        self.cmd = [rzk, "bench", "--connect", hosts, "--workload", "sessions",
                    "--sessions", str(sessions), "--session-timeout-ms", str(timeout_ms),
                    "--duration-s", str(hold_s), "--connect-concurrency", str(max(sessions, 1)),
                    "--samples-out", self.samples, "--json"] + list(extra)
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        self.ready = None

    def wait_ready(self):
        """(connected, errors, seconds) from the process's `ready` line."""
        line = self.proc.stdout.readline()
        if not line.startswith("ready "):
            raise RuntimeError("%s: no ready line: %r %s" % (" ".join(self.cmd), line,
                                                             self.proc.stderr.read()[-2000:]))
        _, connected, errors, seconds = line.split()
        self.ready = (int(connected), int(errors), float(seconds))
        return self.ready

    def report(self, timeout_s):
        """The process's JSON report; None if it has not ended within `timeout_s`."""
        try:
            out, err = self.proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            return None
        for line in reversed(out.splitlines()):
            if line.startswith("{"):
                return json.loads(line)
        raise RuntimeError("%s printed no report: %s" % (" ".join(self.cmd), err[-2000:]))

    def gets(self, since_ms, until_ms):
        """The latencies (us) of the reads sent within the window."""
        out = []
        if os.path.exists(self.samples):
            with open(self.samples) as f:
                for line in f:
                    at, us = line.split()
                    if since_ms <= int(at) <= until_ms:
                        out.append(int(us))
            os.unlink(self.samples)
        return out

    def kill(self):
        self.proc.kill()
        self.proc.wait()
        self.proc.stdout.close()
        self.proc.stderr.close()


def percentile(sorted_values, q):
    if not sorted_values:
        return None
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def mntr(srv):
    out = {}
    for line in srv.four_letter("mntr").splitlines():
        if "\t" in line:
            k, v = line.split("\t", 1)
            out[k] = v
    return out


def split(n):
    """n sessions over as few processes as the descriptor limit allows."""
    k = max(1, math.ceil(n / PER_PROCESS_MAX))
    return [n // k + (1 if i < n % k else 0) for i in range(k)]


def hold(kind, rzk, total, victims, hold_s):
    srv = start_server(kind)
    pid = srv.proc.pid
    try:
        rest_kib = status_kib(pid, "VmRSS")
        observers = Load(rzk, srv.hosts, 0, SURVIVOR_TIMEOUT_MS, 3600,
                         ["--observers", str(OBSERVERS), "--expect-deleted", str(victims)])
        observers.wait_ready()
        # The survivors hold until the victims' sessions have expired, and no longer.
        long_s = 5 + hold_s + VICTIM_TIMEOUT_MS / 1000 + 30
        loads = [Load(rzk, srv.hosts, n, SURVIVOR_TIMEOUT_MS, long_s)
                 for n in split(total - victims)]
        victim = [Load(rzk, srv.hosts, n, VICTIM_TIMEOUT_MS, 3600) for n in split(victims)]
        readies = [l.wait_ready() for l in loads + victim]
        connected = sum(r[0] for r in readies)
        errors = sum(r[1] for r in readies)
        row = {"server": kind, "sessions": total, "connected": connected,
               "connect_errors": errors, "connect_s": max(r[2] for r in readies)}
        log("%s: %d of %d sessions set up in %.1f s (%d errors)", kind, connected, total,
            row["connect_s"], errors)
        time.sleep(5)
        cpu0, t0, since = cpu_seconds(pid), time.monotonic(), int(time.time() * 1000)
        load_cpu0 = sum(cpu_seconds(l.proc.pid) for l in loads + victim)
        time.sleep(hold_s)
        wall = time.monotonic() - t0
        row["server_cpu_pct"] = 100 * (cpu_seconds(pid) - cpu0) / wall
        row["load_cpu_pct"] = 100 * (sum(cpu_seconds(l.proc.pid) for l in loads + victim)
                                     - load_cpu0) / wall
        held_kib = status_kib(pid, "VmRSS")
        row["rss_mib"] = held_kib / 1024
        row["rss_per_session_b"] = (held_kib - rest_kib) * 1024 / max(connected, 1)
        until = int(time.time() * 1000)
        m = mntr(srv)
        row["ephemerals"] = int(m.get("zk_ephemerals_count", 0))
        # The victims die; their sessions expire; the observers see each node go.
        killed_ms = int(time.time() * 1000)
        for v in victim:
            v.kill()
        seen = observers.report(VICTIM_TIMEOUT_MS / 1000 + 240) or {
            "observed_all_unix_ms": None, "observed_deleted": None}
        if seen["observed_all_unix_ms"] is not None:
            row["expired_all_after_kill_ms"] = seen["observed_all_unix_ms"] - killed_ms
            row["expiry_burst_ms"] = seen["observed_all_unix_ms"] - seen["observed_first_unix_ms"]
        row["observed_deleted"] = seen["observed_deleted"]
        reports = [l.report(long_s + 60) for l in loads]
        lat = sorted(sum((l.gets(since, until) for l in loads), []))
        row["gets"] = len(lat)
        row["get_p50_us"], row["get_p99_us"] = percentile(lat, 0.5), percentile(lat, 0.99)
        row["lost"] = sum(r["lost"] for r in reports if r)
        row["get_errors"] = sum(r["get_errors"] for r in reports if r)
        row["reports_missing"] = sum(1 for r in reports if r is None)
        # As many sessions again, then the server crashes with all of them in its log.
        refill = [Load(rzk, srv.hosts, n, SURVIVOR_TIMEOUT_MS, 120) for n in split(total)]
        for r in refill:
            r.wait_ready()
        row["ephemerals_logged"] = int(mntr(srv).get("zk_ephemerals_count", 0))
        t_launch = srv.relaunch(hard=True)
        servers.wait_ready(srv.port, 120, srv.proc, srv.ours)
        row["recovery_s"] = time.monotonic() - t_launch
        row["ephemerals_recovered"] = int(mntr(srv).get("zk_ephemerals_count", 0))
        for r in refill:
            r.kill()
        return row
    finally:
        srv.stop()


def throughput(kind, rzk, n, hold_s):
    srv = start_server(kind)
    pid = srv.proc.pid
    try:
        rest_kib, held_kib = status_kib(pid, "VmRSS"), None
        if n == "pipelined":
            cmd = [rzk, "bench", "--connect", srv.hosts, "--workload", "get", "--sessions", "8",
                   "--in-flight", "16", "--duration-s", str(hold_s), "--json"]
            cpu0 = cpu_seconds(pid)
            out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True).stdout
            r = json.loads(out.strip().splitlines()[-1])
            reads, seconds = r["ops"], r["seconds"]
            p50, p99, errors = r["p50_us"], r["p99_us"], r["errors"]
        else:
            loads = [Load(rzk, srv.hosts, k, SURVIVOR_TIMEOUT_MS, hold_s,
                          ["--getters-pct", "100", "--get-interval-ms", "0"]) for k in split(n)]
            for l in loads:
                l.wait_ready()
            # Every session is set up (its ephemeral made, its watch armed) and reading.
            held_kib = status_kib(pid, "VmRSS")
            cpu0 = cpu_seconds(pid)
            ready = [l.ready for l in loads]
            reports = [l.report(hold_s + 120) for l in loads]
            errors = sum(r[1] for r in ready) + sum(r["lost"] + r["get_errors"] for r in reports)
            reads = sum(r["gets"] for r in reports)
            seconds = max(r["held_s"] for r in reports)
            lat = sorted(sum((l.gets(0, 1 << 62) for l in loads), []))
            p50, p99 = percentile(lat, 0.5), percentile(lat, 0.99)
        cpu = cpu_seconds(pid) - cpu0
        row = {"server": kind, "sessions": n, "errors": errors, "reads_per_s": reads / seconds,
               "reads_per_core_s": reads / cpu if cpu > 0 else None, "p50_us": p50, "p99_us": p99,
               "server_cores": cpu / seconds}
        if held_kib is not None:
            row.update({"rss_rest_mib": rest_kib / 1024, "rss_mib": held_kib / 1024,
                        "rss_per_session_b": (held_kib - rest_kib) * 1024 / n})
        return row
    finally:
        srv.stop()


HOLD_ROWS = [
    ("sessions set up", "connected", "{:,}"),
    ("connect errors", "connect_errors", "{}"),
    ("time to set them all up, s", "connect_s", "{:.1f}"),
    ("server CPU, % of a core", "server_cpu_pct", "{:.0f}"),
    ("server RSS, MiB", "rss_mib", "{:.0f}"),
    ("RSS per session, bytes", "rss_per_session_b", "{:,.0f}"),
    ("read p50, us", "get_p50_us", "{:,}"),
    ("read p99, us", "get_p99_us", "{:,}"),
    ("sessions lost", "lost", "{}"),
    ("victims' last deletion event after the kill, ms (timeout 10,000)",
     "expired_all_after_kill_ms", "{:,}"),
    ("deletion events the observers saw", "observed_deleted", "{:,}"),
    ("restart after SIGKILL until it serves, s", "recovery_s", "{:.2f}"),
    ("ephemerals recovered / logged", None, None),
]


def markdown(result):
    """The tables of docs/BENCHMARKS.md's Sessions section."""
    by = {r["server"]: r for r in result["hold"]}
    kinds = [k for k in ("rzk", "zookeeper") if k in by]
    out = ["| %s | %s |" % ("hold", " | ".join(kinds)),
           "|---|" + "---|" * len(kinds)]
    for label, key, fmt in HOLD_ROWS:
        if key is None:
            cells = ["%s / %s" % (format(by[k]["ephemerals_recovered"], ","),
                                  format(by[k]["ephemerals_logged"], ",")) for k in kinds]
        else:
            cells = [fmt.format(by[k][key]) if by[k].get(key) is not None else "-" for k in kinds]
        out.append("| %s | %s |" % (label, " | ".join(cells)))
    out += ["", "| sessions, one read in flight each | server | reads/s | reads per server"
            " core-second | p99, ms | errors |", "|---|---|---|---|---|---|"]
    for r in result["throughput"]:
        n = "8, 16 in flight each" if r["sessions"] == "pipelined" else format(r["sessions"], ",")
        per_core = r["reads_per_core_s"]
        out.append("| %s | %s | %s | %s | %.1f | %s |" % (
            n, r["server"], format(int(r["reads_per_s"]), ","),
            format(int(per_core), ",") if per_core else "-", (r["p99_us"] or 0) / 1000,
            r.get("errors", "-")))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--servers", default="rzk,zookeeper")
    ap.add_argument("--sessions", type=int, default=19_000)
    ap.add_argument("--victims", type=int, default=10_000)
    ap.add_argument("--hold-s", type=float, default=20.0)
    ap.add_argument("--throughput", default="1000,10000,19000")
    ap.add_argument("--rzk-bin", default=servers.release_rzk_binary())
    ap.add_argument("--json-out")
    ap.add_argument("--markdown-from", help="print the tables of an earlier --json-out, and stop")
    a = ap.parse_args()
    if a.markdown_from:
        with open(a.markdown_from) as f:
            print(markdown(json.load(f)))
        return
    # The servers' rzk is the load tool's (servers.py's default is the debug build's).
    os.environ["RZK_BIN"] = a.rzk_bin
    result = {"hold": [], "throughput": []}
    for kind in a.servers.split(","):
        total = a.sessions
        while total >= 1000:
            victims = min(total - 1, a.victims * total // a.sessions)
            row = hold(kind, a.rzk_bin, total, victims, a.hold_s)
            log("%s", json.dumps(row))
            result["hold"].append(row)
            held = row["connect_errors"] == 0 and row["lost"] == 0
            if held or kind == "rzk":
                break
            total //= 2
        sizes = ["pipelined"] + [int(x) for x in a.throughput.split(",") if x]
        for n in sizes:
            row = throughput(kind, a.rzk_bin, n, a.hold_s)
            log("%s", json.dumps(row))
            result["throughput"].append(row)
    print(markdown(result))
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
