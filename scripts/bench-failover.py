"""Session failover on an Apache ZooKeeper 3.8 ensemble: rzk-client against the Java client 3.8,
the client Curator wraps (docs/BENCHMARKS.md, Failover).

    /usr/bin/python3 -m scripts.bench-failover [--sessions 100] [--rounds 3] [--nodes 3]
        [--session-ms 10000] [--victim follower|leader] [--rzk-bin target/release/rzk]
        [--json-out F]

Starts one ensemble of --nodes QuorumPeerMain JVMs on loopback (tickTime 200, as the Rust
ensemble tests use). In each round, each client in turn (the Java client first in odd rounds,
rzk-client first in even ones) opens --sessions sessions on the whole connect string and then
SIGKILLs one member itself, a follower (no election) or the ZAB leader. The probe is
tests/interop/java/FailoverBench.java or `rzk bench --workload session-failover`. Each session
that was on the killed member is timed from the kill to the answer of its first read after it
reconnected. The member is then restarted, and the next measurement waits until it has
rejoined. The table gives p50, p99 and max over those sessions, and rzk-client's ratio to the
Java client in the same round (below 1 is faster).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from tests.support import java
from tests.support.net import free_port
from tests.support.servers import four_letter

READY_TIMEOUT_S = 90.0


class Ensemble:
    """`n` QuorumPeerMain JVMs on 127.0.0.1 in a temporary directory."""

    def __init__(self, n, tick_ms):
        self.dir = tempfile.mkdtemp(prefix="rzk-bench-failover-")
        ports = [free_port() for _ in range(3 * n)]
        self.client_ports = [ports[3 * i] for i in range(n)]
        servers = "".join("server.%d=127.0.0.1:%d:%d\n" % (i + 1, ports[3 * i + 1], ports[3 * i + 2])
                          for i in range(n))
        self.procs = [None] * n
        self.cfgs = []
        for i in range(n):
            d = os.path.join(self.dir, "n%d" % (i + 1))
            os.makedirs(os.path.join(d, "data"))
            with open(os.path.join(d, "data", "myid"), "w") as f:
                f.write("%d\n" % (i + 1))
            cfg = os.path.join(d, "zoo.cfg")
            with open(cfg, "w") as f:
                f.write("tickTime=%d\ninitLimit=20\nsyncLimit=10\ndataDir=%s\nclientPort=%d\n"
                        "clientPortAddress=127.0.0.1\nmaxClientCnxns=0\nadmin.enableServer=false\n"
                        "4lw.commands.whitelist=*\nmaxSessionTimeout=60000\n%s"
                        % (tick_ms, os.path.join(d, "data"), self.client_ports[i], servers))
            self.cfgs.append(cfg)
            self.start(i)
        self.wait_all()

    def hosts(self):
        return ",".join("127.0.0.1:%d" % p for p in self.client_ports)

    def start(self, i):
        log = open(os.path.join(os.path.dirname(self.cfgs[i]), "server.log"), "a")
        cmd = java.command("org.apache.zookeeper.server.quorum.QuorumPeerMain", [self.cfgs[i]],
                           heap="256m", props=[("zookeeper.admin.enableServer", "false")])
        self.procs[i] = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)

    def mode(self, i):
        try:
            out = four_letter(self.client_ports[i], "srvr", timeout_s=1)
        except OSError:
            return None
        for m in ("leader", "follower"):
            if "Mode: " + m in out:
                return m
        return None

    def wait_all(self):
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not all(self.mode(i) for i in range(len(self.procs))):
            if time.monotonic() > deadline:
                raise TimeoutError("the ensemble did not form in %.0f s (logs in %s)"
                                   % (READY_TIMEOUT_S, self.dir))
            time.sleep(0.1)

    def victim(self, role):
        return next(i for i in range(len(self.procs)) if self.mode(i) == role)

    def restart_dead(self):
        for i, p in enumerate(self.procs):
            if p.poll() is not None:
                self.start(i)
        self.wait_all()

    def stop(self):
        for p in self.procs:
            if p and p.poll() is None:
                p.kill()
                p.wait()


def probe(args, client, ens, victim):
    pid = ens.procs[victim].pid
    if client == "java":
        logf = os.path.join(java.BUILD, "failover-bench-client.log")
        cmd = java.harness_command("FailoverBench", [ens.hosts(), args.sessions, args.session_ms, pid],
                                   "512m", logf)
    else:
        cmd = [args.rzk_bin, "bench", "--connect", ens.hosts(), "--workload", "session-failover",
               "--sessions", str(args.sessions), "--session-timeout-ms", str(args.session_ms),
               "--kill-pid", str(pid), "--json"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=300)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        raise RuntimeError("%s probe failed (exit %d): %s" % (client, p.returncode, p.stderr[-800:]))
    r = json.loads(lines[-1])
    if client == "java":
        return {"moved": r["moved"], "p50_ms": r["served_ms_p50"], "p99_ms": r["served_ms_p99"],
                "max_ms": r["served_ms_max"]}
    if not r.get("rounds"):
        raise RuntimeError("rzk probe reported no moved session: %s" % lines[-1])
    # One round per moved session; with fewer than 1,000, p99.9 is the slowest.
    return {"moved": r["rounds"], "p50_ms": r["p50_us"] / 1000.0, "p99_ms": r["p99_us"] / 1000.0,
            "max_ms": r["p999_us"] / 1000.0}

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sessions", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--nodes", type=int, default=3)
    ap.add_argument("--session-ms", type=int, default=10000)
    ap.add_argument("--victim", choices=("follower", "leader"), default="follower")
    ap.add_argument("--rzk-bin", default=os.path.join(java.REPO, "target", "release", "rzk"))
    ap.add_argument("--json-out")
    args = ap.parse_args()
    java.compile_harness("FailoverBench", timeout_s=300)
    ens = Ensemble(args.nodes, tick_ms=200)
    results = []
    try:
        for rnd in range(1, args.rounds + 1):
            order = ("java", "rzk") if rnd % 2 else ("rzk", "java")
            row = {"round": rnd}
            for client in order:
                victim = ens.victim(args.victim)
                r = probe(args, client, ens, victim)
                r["victim"] = "node %d (%s)" % (victim + 1, args.victim)
                row[client] = r
                print(json.dumps({"round": rnd, "client": client, **r}), flush=True)
                ens.restart_dead()
                time.sleep(2)  # the rejoined member syncs; the old sessions' closes settle
            row["p50_ratio"] = row["rzk"]["p50_ms"] / row["java"]["p50_ms"]
            row["p99_ratio"] = row["rzk"]["p99_ms"] / row["java"]["p99_ms"]
            results.append(row)
    finally:
        ens.stop()
    print("\n| round | victim | Java client p50 / p99 / max (ms), moved | rzk-client p50 / p99 / max (ms), moved | p50 ratio | p99 ratio |")
    print("|---|---|---|---|---|---|")
    for row in results:
        j, z = row["java"], row["rzk"]
        print("| %d | %s | %.0f / %.0f / %.0f, %d | %.0f / %.0f / %.0f, %d | %.2f | %.2f |"
              % (row["round"], args.victim, j["p50_ms"], j["p99_ms"], j["max_ms"], j["moved"],
                 z["p50_ms"], z["p99_ms"], z["max_ms"], z["moved"], row["p50_ratio"],
                 row["p99_ratio"]))
    med = lambda k: statistics.median(r[k] for r in results)
    print("\nmedian ratio over %d rounds: p50 %.2f, p99 %.2f (%d sessions, %d nodes, T = %d ms)"
          % (len(results), med("p50_ratio"), med("p99_ratio"), args.sessions, args.nodes,
             args.session_ms))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
