"""Where a server's latency tail comes from: a timeline of stalls under `rzk bench` load.

    /usr/bin/python3 -m scripts.bench-stalls [--server rzk|zookeeper] [--workload populate]
                                             [--znodes 1000000] [--duration-s 10] [--top 15]

Starts the server (durable rzk or Apache ZooKeeper 3.8, as scripts/bench-compare.py does),
runs `rzk bench` against it, and meanwhile:
  * a probe session sends getData("/") back to back over its own connection and records when
    each answer took long (a stall: the server answered nobody in that time);
  * a second connection polls `mntr`/`srvr` for the znode count every 20 ms.
It prints the longest stalls with the znode count at the moment, and marks the counts at which
a Rust HashMap (hashbrown: 2^k buckets, 7/8 load) holding every znode would grow: a stall at
exactly those counts is the data tree's table being rehashed in one go. This is the cheap
"profile" the issue asks for when a p99 target is missed, without rebuilding anything.
"""

import argparse
import bisect
import json
import os
import re
import subprocess
import threading
import time

from tests.support import servers, zkwire
from tests.support.stats import pct


def growth_points(limit):
    """Element counts at which hashbrown grows: capacity = buckets * 7 / 8 for buckets >= 8."""
    pts, b = [], 8
    while b * 7 // 8 < limit:
        pts.append(b * 7 // 8)
        b *= 2
    return pts


def probe_loop(port, stop, samples):
    c, _ = zkwire.connect("127.0.0.1", port, 30000, io_timeout=30)
    xid = 0
    while not stop.is_set():
        xid += 1
        t0 = time.monotonic()
        c.send("getData", xid, {"path": "/", "watch": False})
        while True:
            r = zkwire.decode_frame(c.recv_frame(), "getData")
            if r["xid"] == xid:
                break
        samples.append((t0, time.monotonic() - t0))
    c.close()


def count_loop(srv, stop, counts):
    while not stop.is_set():
        try:
            t = time.monotonic()
            m = re.search(r"Node count: (\d+)", srv.four_letter("srvr"))
            if m:
                counts.append((t, int(m.group(1))))
        except OSError:
            pass
        time.sleep(0.02)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--server", default="rzk", choices=["rzk", "zookeeper"])
    ap.add_argument("--workload", default="populate")
    ap.add_argument("--znodes", type=int, default=1000000)
    ap.add_argument("--duration-s", type=float, default=10.0)
    ap.add_argument("--sessions", type=int, default=8)
    ap.add_argument("--in-flight", type=int, default=16)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--stall-ms", type=float, default=10.0)
    ap.add_argument("--rzk-server-arg", action="append", metavar="ARG",
                    help="an extra argument for rzk server (repeat for several), e.g. "
                         "--rzk-server-arg=--snap-count --rzk-server-arg=100000000")
    ap.add_argument("--zk-heap", default="")
    ap.add_argument("--rzk-bin", default=servers.release_rzk_binary())
    args = ap.parse_args()
    os.environ["RZK_BIN"] = os.path.abspath(args.rzk_bin)
    srv = servers.start_for_benchmark(args.server, args.zk_heap, args.rzk_server_arg or [])
    stop = threading.Event()
    samples, counts = [], []
    try:
        threads = [threading.Thread(target=probe_loop, args=(srv.port, stop, samples)),
                   threading.Thread(target=count_loop, args=(srv, stop, counts))]
        for t in threads:
            t.start()
        cmd = [args.rzk_bin, "bench", "--connect", srv.hosts, "--workload", args.workload,
               "--sessions", str(args.sessions), "--in-flight", str(args.in_flight), "--json"]
        cmd += (["--znodes", str(args.znodes)] if args.workload == "populate"
                else ["--duration-s", str(args.duration_s)])
        t0 = time.monotonic()
        out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, timeout=1800).stdout
        stop.set()
        for t in threads:
            t.join(60)
        res = json.loads([ln for ln in out.splitlines() if ln.startswith("{")][-1])
    finally:
        stop.set()
        log = open(os.path.join(srv.workdir, "server.log"), errors="replace").read()
        srv.stop()
    lat = sorted(x[1] for x in samples)
    print("%s %s: %s" % (args.server, args.workload, json.dumps(res)))
    print("probe: %d getData, p50 %.2f ms, p99 %.2f ms, max %.1f ms" % (
        len(lat), 1000 * pct(lat, 0.5), 1000 * pct(lat, 0.99), 1000 * lat[-1]))
    stalls = [x for x in samples if x[1] * 1000 >= args.stall_ms]
    ctimes = [c[0] for c in counts]
    pts = growth_points(args.znodes * 4)
    print("%d stalls >= %.0f ms, %.1f s in total; the longest:" % (
        len(stalls), args.stall_ms, sum(x[1] for x in stalls)))
    print("  %8s  %8s  %-20s  %s" % ("t (s)", "ms", "znodes then", "nearest HashMap growth"))
    for t, d in sorted(stalls, key=lambda x: -x[1])[:args.top]:
        i = bisect.bisect_right(ctimes, t) - 1
        j = bisect.bisect_right(ctimes, t + d)
        before = counts[i][1] if i >= 0 else None
        after = counts[j][1] if j < len(counts) else None
        g = min(pts, key=lambda p: abs(p - (before or 0))) if before is not None else None
        hit = (before is not None and after is not None and before <= g + 2000
               and after >= g - 2000)
        print("  %8.2f  %8.1f  %-20s  %s%s" % (
            t - t0, d * 1000, "%s -> %s" % (before, after), g, "  <== crossed" if hit else ""))
    snaps = len(re.findall(r"snapshot written|Snapshotting", log))
    print("snapshots logged by the server: %d" % snaps)


if __name__ == "__main__":
    main()
