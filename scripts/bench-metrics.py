"""What rzk's metrics cost: throughput with the Prometheus endpoint off, and on with a scrape
every second, side by side in one run (the target: at most 5% less with it on).

    /usr/bin/python3 -m scripts.bench-metrics [--rounds 3] [--duration-s 5] [--workloads get,set]
                                              [--baseline-bin PATH] [--markdown]

The server records request latency, fsyncs and batches whether or not the endpoint is on
(`mntr` and `srvr` show them too, as ZooKeeper's do), so "off" already pays for the recording;
`--baseline-bin` adds a third column, another rzk binary with the endpoint off, e.g. one built
from a commit before the recording, to measure the recording itself. Every run gets a fresh
durable server (`--data-dir`, group commit with fdatasync), a warm-up, then the measured run of
`rzk bench` (the same load as scripts/bench-compare.py); the configurations take turns within
each round. Progress goes to stderr, the table to stdout.
"""

import argparse
import importlib
import os
import shutil
import statistics
import tempfile
import threading
import urllib.request

from tests.support import servers
from tests.support.machine import log, wait_quiet
from tests.support.net import free_port

# The load tool and its arguments are bench-compare's, so the figures compare with its tables.
bench_compare = importlib.import_module("scripts.bench-compare")

TARGET_RATIO = 0.95
SCRAPE_INTERVAL_S = 1.0


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration-s", type=float, default=5.0)
    ap.add_argument("--warmup-s", type=float, default=1.0)
    ap.add_argument("--workloads", default="get,set")
    ap.add_argument("--sessions", type=int, default=8)
    ap.add_argument("--in-flight", type=int, default=16)
    ap.add_argument("--data-bytes", type=int, default=100)
    ap.add_argument("--keys", type=int, default=1000)
    ap.add_argument("--rzk-bin", default=servers.release_rzk_binary())
    ap.add_argument("--baseline-bin", help="another rzk binary to run with the endpoint off")
    ap.add_argument("--quiet-wait-s", type=float, default=120,
                    help="before each run, wait up to this long for the machine to be idle")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    # Private copies: target/release/rzk may be rebuilt during the run.
    tmp = tempfile.mkdtemp(prefix="bench-metrics-bin-")
    for attr in ("rzk_bin", "baseline_bin"):
        path = getattr(args, attr)
        if path:
            copy = os.path.join(tmp, attr)
            shutil.copy2(os.path.abspath(path), copy)
            setattr(args, attr, copy)
    return args


class Scraper:
    """GETs http://127.0.0.1:<port>/metrics every second until stopped."""

    def __init__(self, port):
        self.url = "http://127.0.0.1:%d/metrics" % port
        self.scrapes = 0
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stopped.wait(SCRAPE_INTERVAL_S):
            with urllib.request.urlopen(self.url, timeout=5) as r:
                r.read()
            self.scrapes += 1

    def stop(self):
        self.stopped.set()
        self.thread.join()


def measured(args, binary, workload, metrics):
    """Ops/s of one run of `workload` against a fresh server run from `binary`."""
    wait_quiet(args.quiet_wait_s)
    os.environ["RZK_BIN"] = binary  # servers.start_rzk runs this binary
    port = free_port() if metrics else None
    extra = ["--metrics-port", str(port), "--metrics-bind", "127.0.0.1"] if metrics else []
    srv = servers.start_for_benchmark("rzk", rzk_args=extra)
    scraper = None
    try:
        bench_compare.run_bench(args, srv.hosts, workload, args.warmup_s, args.warmup_s + 120)
        scraper = Scraper(port) if metrics else None
        r, _ = bench_compare.run_bench(args, srv.hosts, workload, args.duration_s,
                                       args.duration_s + 120)
    finally:
        if scraper:
            scraper.stop()
        srv.stop()
    if scraper and scraper.scrapes < args.duration_s / SCRAPE_INTERVAL_S - 2:
        raise RuntimeError("only %d scrapes in %.0f s" % (scraper.scrapes, args.duration_s))
    return r["ops_per_s"]


def main():
    args = parse_args()
    # The load tool (args.rzk_bin, which run_bench runs) is the same for every server.
    configs = [("off", args.rzk_bin, False), ("on", args.rzk_bin, True)]
    if args.baseline_bin:
        configs.append(("baseline", args.baseline_bin, False))
    workloads = [w for w in args.workloads.split(",") if w]
    results = {(w, c[0]): [] for w in workloads for c in configs}
    for rnd in range(args.rounds):
        for w in workloads:
            turn = configs[rnd % len(configs):] + configs[:rnd % len(configs)]
            for name, binary, metrics in turn:
                ops = measured(args, binary, w, metrics)
                results[(w, name)].append(ops)
                log("  round %d %-4s metrics %-8s %10.0f ops/s", rnd + 1, w, name, ops)
    head = ["workload", "metrics off, ops/s", "on, scraped every 1 s", "on / off",
            "target"]
    if args.baseline_bin:
        head += ["baseline binary, ops/s", "off / baseline"]
    rows = []
    for w in workloads:
        med = {c[0]: statistics.median(results[(w, c[0])]) for c in configs}
        ratio = med["on"] / med["off"]
        row = [w, "%.0f" % med["off"], "%.0f" % med["on"], "%.3f" % ratio,
               ">= %.2f: %s" % (TARGET_RATIO, "met" if ratio >= TARGET_RATIO else "MISSED")]
        if args.baseline_bin:
            row += ["%.0f" % med["baseline"], "%.3f" % (med["off"] / med["baseline"])]
        rows.append(row)
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        for r in [head] + rows:
            print("  ".join("%-22s" % c for c in r))


if __name__ == "__main__":
    main()
