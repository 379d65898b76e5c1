"""Debian's Prometheus 2.42 scrapes rzk's metrics endpoint while a load runs.

    /usr/bin/python3 -m tests.interop.prometheus_suite --server rzk

rzk serves /metrics as configured the ZooKeeper way (zoo.cfg's `metricsProvider.*` keys, read
through `--config`). A Prometheus server scrapes it every second; its HTTP query API must then
return the znode count the server reports, a request rate that matches the load the suite
generated, and the reads in the read-latency histogram. Debian's ZooKeeper 3.8 ships without its Prometheus exporter (the
zookeeper-prometheus-metrics jar and the Prometheus simpleclient are not packaged), so the names
are checked against what that exporter publishes: the keys of ZooKeeper's own `mntr`, which it
exports under the same names without the `zk_` prefix. rzk only: `--server zookeeper` fails.
"""

import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

from kazoo.client import KazooClient

from tests.interop.common import Failure, Suite, check, check_eq, wait_until
from tests.support import servers
from tests.support.net import free_port

METRICS_PORT = free_port()
METRICS_CFG = {
    "metricsProvider.className":
        "org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider",
    "metricsProvider.httpPort": str(METRICS_PORT),
    "metricsProvider.httpHost": "127.0.0.1",
}
# The load: znodes created, then reads for this long.
ZNODES = 300
READ_LOAD_S = 6
# Prometheus scrapes this often, and a rate is taken over this window.
SCRAPE_INTERVAL_S = 1
RATE_WINDOW_S = 4

suite = Suite("prometheus", overall_timeout_s=150, server_options={"extra_cfg": METRICS_CFG})


def metric_names(text):
    """The metric names of an exposition text: `# TYPE` lines name each once (a counter
    without its `_total`, a histogram without `_bucket`/`_sum`/`_count`), with its type."""
    names = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            names[name] = kind
    return names


def published_by_zookeeper(name, kind, mntr_keys):
    """Whether ZooKeeper's exporter serves `name`: a gauge is an `mntr` key, a summary (rzk
    serves it as a histogram) an `mntr` key's `avg_` row."""
    if kind == "histogram":
        return "avg_" + name in mntr_keys
    return name in mntr_keys


class Prometheus:
    """A Prometheus server on a free loopback port scraping `target` (host:port)."""

    def __init__(self, target):
        self.dir = tempfile.mkdtemp(prefix="prometheus-")
        self.port = free_port()
        cfg = os.path.join(self.dir, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global:\n  scrape_interval: %ds\n  evaluation_interval: %ds\n"
                    "scrape_configs:\n  - job_name: rzk\n    static_configs:\n"
                    "      - targets: ['%s']\n" % (SCRAPE_INTERVAL_S, SCRAPE_INTERVAL_S, target))
        self.log = open(os.path.join(self.dir, "prometheus.log"), "w")
        self.proc = subprocess.Popen(
            ["prometheus", "--config.file", cfg, "--storage.tsdb.path",
             os.path.join(self.dir, "data"), "--web.listen-address", "127.0.0.1:%d" % self.port],
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        wait_until(self.ready, 30, "Prometheus to be ready", interval_s=0.2)

    def ready(self):
        check(self.proc.poll() is None, "prometheus exited with %s (log in %s)",
              self.proc.returncode, self.dir)
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/-/ready" % self.port, timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def query(self, expr, at=None):
        """The instant vector of `expr` (at unix time `at`, else now) as {job: value}."""
        params = {"query": expr}
        if at is not None:
            params["time"] = "%.3f" % at
        url = "http://127.0.0.1:%d/api/v1/query?%s" % (self.port, urllib.parse.urlencode(params))
        with urllib.request.urlopen(url, timeout=5) as r:
            body = json.load(r)
        check_eq(body.get("status"), "success", "query %s" % expr)
        return {s["metric"].get("job"): float(s["value"][1]) for s in body["data"]["result"]}

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def mntr(srv):
    return dict(line.split("\t", 1) for line in srv.four_letter("mntr").splitlines() if "\t" in line)


@suite.test
def prometheus_scrapes_znode_count_and_request_rate(srv):
    if srv.kind != "rzk":
        raise Failure("this suite checks rzk's endpoint; Debian's ZooKeeper has no exporter")
    prom = Prometheus("127.0.0.1:%d" % METRICS_PORT)
    zk = KazooClient(hosts=srv.hosts, timeout=10)
    zk.start(timeout=10)
    try:
        wait_until(lambda: prom.query("up").get("rzk") == 1.0, 20, "the first good scrape")
        zk.ensure_path("/load")
        for i in range(ZNODES):
            zk.create("/load/n-%d" % i, b"x")
        start, reads = time.time(), 0
        while time.time() - start < READ_LOAD_S:
            zk.get("/load/n-%d" % (reads % ZNODES))
            reads += 1
        end = time.time()
        want = int(mntr(srv)["zk_znode_count"])
        wait_until(lambda: prom.query("znode_count").get("rzk") == want, 15,
                   "Prometheus to report znode_count %d" % want)
        wait_until(lambda: prom.query("readlatency_count").get("rzk", 0) >= reads, 15,
                   "Prometheus to count the %d reads in readlatency_count" % reads)
        p50 = prom.query("histogram_quantile(0.5, rate(readlatency_bucket[%ds]))"
                         % RATE_WINDOW_S, end - 1).get("rzk")
        print("    read latency p50 by Prometheus %s ms" % p50)
        check(p50 is not None and 0 < p50 < 1000, "read latency p50 %s ms", p50)
        # The rate over a window inside the read phase, against the rate the client measured.
        at = end - 1
        got = prom.query("rate(packets_received[%ds])" % RATE_WINDOW_S, at).get("rzk")
        client_rate = reads / (end - start)
        print("    reads/s by the client %.0f, rate(packets_received) by Prometheus %s"
              % (client_rate, got))
        check(got is not None and 0.5 * client_rate <= got <= 1.5 * client_rate,
              "rate(packets_received) %s is not within half of the client's %.0f/s",
              got, client_rate)
    finally:
        zk.stop()
        zk.close()
        prom.stop()


@suite.test
def zookeeper_names_mean_the_same(srv):
    """Every metric rzk publishes under a ZooKeeper name is one ZooKeeper 3.8 publishes: a key
    of its `mntr`, which its exporter serves without the `zk_` prefix (a summary such as
    `readlatency` shows in `mntr` as `zk_avg_readlatency`, `zk_cnt_readlatency`, ...)."""
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % METRICS_PORT, timeout=5) as r:
        ours = metric_names(r.read().decode())
    zk = servers.start_zookeeper()
    try:
        theirs = {k[len("zk_"):] for k in mntr(zk)}
    finally:
        zk.stop()
    named_like_zookeeper = {n: k for n, k in ours.items() if not n.startswith("rzk_")}
    check(named_like_zookeeper, "no metric under a ZooKeeper name in %s", sorted(ours))
    check("histogram" in named_like_zookeeper.values(), "no latency histogram in %s", ours)
    unknown = [n for n, k in named_like_zookeeper.items()
               if not published_by_zookeeper(n, k, theirs)]
    check_eq(sorted(unknown), [], "names ZooKeeper's mntr does not have")


if __name__ == "__main__":
    suite.main()
