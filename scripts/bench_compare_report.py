"""The report of scripts/bench-compare.py: medians over the rounds, ratios rzk / ZooKeeper
against the targets of docs/BENCHMARKS.md, and the tables, as plain text or markdown.

Every table is (title, header, rows). build_tables also records in the results the medians and
resources it computes (`res["medians"]`, `res["resources"]`), which --json-out writes and the
throughput guard reads.
"""

from tests.support.stats import median

KINDS = ["zookeeper", "rzk"]
# The election handoff as the benchmark targets define it: `rzk bench --workload handoff-event`, from the
# leader's delete to its successor's event, back to back and after this many ms idle.
HANDOFF_GAP_MS = {"handoff-event": 0, "handoff-event-idle": 20}
# Reported beside the others but held to no target (see ALL_WORKLOADS in bench-compare.py).
NOT_ISSUE_WORKLOADS = {"fanout-persistent"}
TARGETS = {  # docs/BENCHMARKS.md, rzk / ZooKeeper
    "throughput": (">=", 2.0),
    "cpu_per_op": ("<=", 0.2),
    "p99": ("<=", 0.5),
    "rss_per_znode": ("<=", 0.25),
    "startup": ("<=", 0.05),
    "handoff_floor": ("<=", 1.5),  # handoff p50 / (fdatasync p50 + round trip p50)
}


def med(rows, key):
    return median(r.get(key) for r in rows)


def ratio(a, b):
    return a / b if a is not None and b else None


def shared_core_ceiling(m):
    """The throughput ratio that the CPU an op costs allows when each server's run is bound by
    the cores it shares with the load generator: (ZK server + client CPU per op) / (rzk server
    + client CPU per op). The same load generator drives both servers, so its own cost weighs
    on both sides and caps the ratio below that of the servers' CPU alone."""
    cpu = [None if m["server_cpu_us_per_op"][i] is None or m["client_cpu_us_per_op"][i] is None
           else m["server_cpu_us_per_op"][i] + m["client_cpu_us_per_op"][i] for i in (0, 1)]
    return ratio(cpu[0], cpu[1])


def verdict(name, r):
    if r is None or name not in TARGETS:
        return ""
    op, t = TARGETS[name]
    ok = r >= t if op == ">=" else r <= t
    return "%s (target %s %g)" % ("met" if ok else "MISSED", op, t)


def fmt(v, digits=0):
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    if digits == 0:
        return "{:,.0f}".format(v)
    return "{:,.{}f}".format(v, digits)


def fmt_ratio(r):
    return "-" if r is None else ("%.3f" % r if r < 1 else "%.2f" % r)


def handoff_row(w, m):
    return [w + (" (%d ms idle before each delete)" % HANDOFF_GAP_MS[w]
                 if HANDOFF_GAP_MS[w] else " (back to back)"),
            "%s / %s" % (fmt(m["p50_us"][0]), fmt(m["p99_us"][0])),
            "%s / %s" % (fmt(m["p50_us"][1]), fmt(m["p99_us"][1])),
            fmt_ratio(ratio(m["p50_us"][1], m["p50_us"][0])),
            "%s / %s" % (fmt(m["floor_us"][0]), fmt(m["floor_us"][1])),
            fmt_ratio(m["x_floor"][0]), fmt_ratio(m["x_floor"][1]),
            fmt(m["server_cpu_us_per_op"][0], 1), fmt(m["server_cpu_us_per_op"][1], 1),
            "%s / %s" % (fmt(m["errors"][0]), fmt(m["errors"][1]))]


def build_tables(res, args):
    """Returns a list of (title, header, rows) tables."""
    tables = []
    w_rows, h_rows = workload_rows(res)
    if res.get("populate"):
        w_rows.append(populate_row(res["populate"], args))
    if w_rows:
        tables.append(("Server workloads, side by side (medians of %d rounds; ratio = rzk / "
                       "ZooKeeper)" % args.rounds,
                       ["workload", "ZK ops/s", "rzk ops/s", "ratio",
                        "ratio ceiling on the shared cores", "ZK p50/p99/p999 us",
                        "rzk p50/p99/p999 us", "p99 ratio", "ZK CPU us/op", "rzk CPU us/op",
                        "CPU ratio", "ZK client us/op", "rzk client us/op", "ZK peak RSS MiB",
                        "rzk peak RSS MiB", "errors ZK / rzk", "max other CPU"], w_rows))

    if h_rows:
        tables.append(("Election handoff as the targets define it, from the leader's delete to its "
                       "successor's event (`rzk bench --workload handoff-event`, %d participants "
                       "each watching its predecessor; medians of %d rounds)"
                       % (args.participants, args.rounds),
                       ["workload", "ZK p50 / p99 us", "rzk p50 / p99 us", "p50 ratio",
                        "floor before ZK / rzk runs, us (fdatasync + round trip, p50)",
                        "ZK x floor", "rzk x floor",
                        "ZK CPU us/handoff", "rzk CPU us/handoff", "errors ZK / rzk"], h_rows))

    t_rows = target_rows(res)
    r_rows, more_t_rows = resource_rows(res, args)
    t_rows += more_t_rows
    tables.append(("Server resources", ["measurement", "ZooKeeper", "rzk", "rzk / ZooKeeper"],
                   r_rows))
    tables.append(("Ratios against the targets", ["ratio (rzk / ZooKeeper)", "value",
                                                         "target"], t_rows))
    tables.append(floor_table(res["floor"]))
    return tables


def workload_rows(res):
    """A row per workload, the handoffs in a table of their own; records the medians in
    res["medians"]."""
    w_rows, h_rows = [], []
    for w in res["workloads"]:
        runs = res["runs"][w]
        zk = [r for r in runs if r["server"] == "zookeeper"]
        rz = [r for r in runs if r["server"] == "rzk"]
        m = {k: (med(zk, k), med(rz, k)) for k in
             ("ops_per_s", "p50_us", "p99_us", "p999_us", "server_cpu_us_per_op",
              "client_cpu_us_per_op", "peak_rss_mib", "errors", "floor_us", "x_floor")}
        res.setdefault("medians", {})[w] = m
        if w in HANDOFF_GAP_MS:
            h_rows.append(handoff_row(w, m))
            continue
        w_rows.append(workload_row(w, m, runs))
    return w_rows, h_rows


def workload_row(w, m, runs):
    return [w,
            fmt(m["ops_per_s"][0]), fmt(m["ops_per_s"][1]),
            fmt_ratio(ratio(m["ops_per_s"][1], m["ops_per_s"][0])),
            fmt_ratio(shared_core_ceiling(m)),
            "%s / %s / %s" % (fmt(m["p50_us"][0]), fmt(m["p99_us"][0]),
                              fmt(m["p999_us"][0])),
            "%s / %s / %s" % (fmt(m["p50_us"][1]), fmt(m["p99_us"][1]),
                              fmt(m["p999_us"][1])),
            fmt_ratio(ratio(m["p99_us"][1], m["p99_us"][0])),
            fmt(m["server_cpu_us_per_op"][0], 1), fmt(m["server_cpu_us_per_op"][1], 1),
            fmt_ratio(ratio(m["server_cpu_us_per_op"][1],
                            m["server_cpu_us_per_op"][0])),
            fmt(m["client_cpu_us_per_op"][0], 1), fmt(m["client_cpu_us_per_op"][1], 1),
            fmt(m["peak_rss_mib"][0]), fmt(m["peak_rss_mib"][1]),
            "%s / %s" % (fmt(m["errors"][0]), fmt(m["errors"][1])),
            "%.0f%%" % (100 * max(r.get("other_cpu_frac", 0) for r in runs))]


def populate_row(populate, args):
    zk = [r for r in populate if r["server"] == "zookeeper"]
    rz = [r for r in populate if r["server"] == "rzk"]
    g = lambda rows, k: med(rows, k)  # noqa: E731
    return ["populate %s" % fmt(args.znodes),
            fmt(g(zk, "ops_per_s")), fmt(g(rz, "ops_per_s")),
            fmt_ratio(ratio(g(rz, "ops_per_s"), g(zk, "ops_per_s"))), "-",
            "%s / %s / %s" % (fmt(g(zk, "p50_us")), fmt(g(zk, "p99_us")),
                              fmt(g(zk, "p999_us"))),
            "%s / %s / %s" % (fmt(g(rz, "p50_us")), fmt(g(rz, "p99_us")),
                              fmt(g(rz, "p999_us"))),
            fmt_ratio(ratio(g(rz, "p99_us"), g(zk, "p99_us"))),
            fmt(g(zk, "server_cpu_us_per_op"), 1), fmt(g(rz, "server_cpu_us_per_op"), 1),
            fmt_ratio(ratio(g(rz, "server_cpu_us_per_op"),
                            g(zk, "server_cpu_us_per_op"))),
            "-", "-",
            fmt(g(zk, "peak_rss_mib")), fmt(g(rz, "peak_rss_mib")),
            "%s / %s" % (fmt(g(zk, "errors")), fmt(g(rz, "errors"))),
            "%.0f%%" % (100 * max(r.get("other_cpu_frac", 0)
                                  for r in populate))]


def target_rows(res):
    """The ratios of every workload against the targets."""
    t_rows = []
    for w in res["workloads"] + (["populate"] if res.get("populate") else []):
        if w in HANDOFF_GAP_MS:
            r = res["medians"][w]["x_floor"][1]
            t_rows.append(["%s: p50 x the floor" % w, fmt_ratio(r), verdict("handoff_floor", r)])
            continue
        if w == "populate":
            zk = [r for r in res["populate"] if r["server"] == "zookeeper"]
            rz = [r for r in res["populate"] if r["server"] == "rzk"]
            m = {k: (med(zk, k), med(rz, k)) for k in
                 ("ops_per_s", "p99_us", "server_cpu_us_per_op")}
        else:
            m = res["medians"][w]
        for name, key in (("throughput", "ops_per_s"), ("cpu_per_op", "server_cpu_us_per_op"),
                          ("p99", "p99_us")):
            r = ratio(m[key][1], m[key][0])
            held = verdict(name, r) if w not in NOT_ISSUE_WORKLOADS else "(not a target workload)"
            t_rows.append(["%s: %s" % (w, name), fmt_ratio(r), held])
    return t_rows


def resource_rows(res, args):
    """Peak RSS, the 1M-znode and start-up measurements, and their rows of the targets' table;
    records the measurements in res["resources"]."""
    t_rows = []
    r_rows = []
    all_runs = [r for w in res["workloads"] for r in res["runs"][w]] + res.get("populate", [])
    pk = [max((r["peak_rss_mib"] for r in all_runs if r["server"] == k), default=None)
          for k in KINDS]
    r_rows.append(["peak RSS over the whole run, MiB", fmt(pk[0]), fmt(pk[1]),
                   fmt_ratio(ratio(pk[1], pk[0]))])
    res["resources"] = {"peak_rss_mib": pk}
    if res.get("populate"):
        zk = [r for r in res["populate"] if r["server"] == "zookeeper"]
        rz = [r for r in res["populate"] if r["server"] == "rzk"]
        rpz = (med(zk, "rss_per_znode_bytes"), med(rz, "rss_per_znode_bytes"))
        r_rows.append(["RSS growth per znode at %s znodes, bytes" % fmt(args.znodes),
                       fmt(rpz[0]), fmt(rpz[1]), fmt_ratio(ratio(rpz[1], rpz[0]))])
        gc = med(zk, "rss_per_znode_after_gc_bytes")
        if gc is not None:
            r_rows.append(["  ZooKeeper after jcmd GC.run (rzk: no GC)", fmt(gc), fmt(rpz[1]),
                           fmt_ratio(ratio(rpz[1], gc))])
        lh = med(zk, "live_heap_per_znode_bytes")
        if lh is not None:
            r_rows.append(["  ZooKeeper live heap per znode after GC", fmt(lh), fmt(rpz[1]),
                           fmt_ratio(ratio(rpz[1], lh))])
        rec = (med(zk, "recovery_s"), med(rz, "recovery_s"))
        r_rows.append(["recovery after SIGKILL with %s znodes, launch to first read, ms"
                       % fmt(args.znodes), fmt(rec[0] and rec[0] * 1000),
                       fmt(rec[1] and rec[1] * 1000), fmt_ratio(ratio(rec[1], rec[0]))])
        rar = (med(zk, "rss_after_recovery_mib"), med(rz, "rss_after_recovery_mib"))
        r_rows.append(["RSS right after recovery, MiB", fmt(rar[0]), fmt(rar[1]),
                       fmt_ratio(ratio(rar[1], rar[0]))])
        nc = (med(zk, "node_count_after_recovery"), med(rz, "node_count_after_recovery"))
        r_rows.append(["znodes after recovery (srvr Node count)", fmt(nc[0]), fmt(nc[1]), ""])
        res["resources"].update({"rss_per_znode": rpz, "rss_per_znode_zk_after_gc": gc,
                                 "live_heap_per_znode_zk": lh, "recovery_s": rec})
        rr = ratio(rpz[1], rpz[0])
        t_rows.append(["RSS per znode", fmt_ratio(rr), verdict("rss_per_znode", rr)])
        if gc:
            rr = ratio(rpz[1], gc)
            t_rows.append(["RSS per znode (ZooKeeper after full GC)", fmt_ratio(rr),
                           verdict("rss_per_znode", rr)])
    su = (res["startup"] and (median(res["startup"]["zookeeper"]),
                              median(res["startup"]["rzk"])))
    if su:
        r_rows.append(["start-up, launch to first read, ms (median of %d)"
                       % len(res["startup"]["rzk"]), fmt(su[0] * 1000, 1), fmt(su[1] * 1000, 1),
                       fmt_ratio(ratio(su[1], su[0]))])
        res["resources"]["startup_s"] = su
        rr = ratio(su[1], su[0])
        t_rows.append(["start-up", fmt_ratio(rr), verdict("startup", rr)])
    return r_rows, t_rows


def floor_table(fl):
    return ("The floor (each handoff run also measures its own, just before it)",
            ["measurement", "p50 us", "p99 us"], [
        ["fdatasync of a 100-byte write, preallocated file (as both logs), %s" % fl["dir"],
         fmt(fl["fdatasync"]["preallocated"]["p50_us"]),
         fmt(fl["fdatasync"]["preallocated"]["p99_us"])],
        ["fdatasync of a 100-byte append (file grows)",
         fmt(fl["fdatasync"]["append"]["p50_us"]), fmt(fl["fdatasync"]["append"]["p99_us"])],
        ["loopback TCP round trip, 100 bytes, Python echo",
         fmt(fl["loopback"]["p50_us"]), fmt(fl["loopback"]["p99_us"])],
        ["one durable write + one round trip",
         fmt(fl["fdatasync"]["preallocated"]["p50_us"] + fl["loopback"]["p50_us"]),
         fmt(fl["fdatasync"]["preallocated"]["p99_us"] + fl["loopback"]["p99_us"])],
    ])


def render_plain(tables, info):
    out = ["machine: %s" % ", ".join("%s=%s" % kv for kv in info.items())]
    for title, header, rows in tables:
        out.append("")
        out.append(title)
        widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)] if rows else []
        for row in [header] + rows:
            out.append("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip())
    return "\n".join(out)


def render_markdown(tables, info, argv):
    out = ["### Run of %s" % info["date"], "",
           "    /usr/bin/python3 -m scripts.bench-compare %s" % " ".join(argv), "",
           "| machine | |", "|---|---|"]
    out += ["| %s | %s |" % kv for kv in info.items()]
    for title, header, rows in tables:
        out += ["", "#### " + title, "", "| " + " | ".join(header) + " |",
                "|" + "---|" * len(header)]
        out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)

