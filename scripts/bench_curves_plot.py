"""The charts of scripts/bench-curves.py: one SVG per curve, drawn with Debian's matplotlib
(python3-matplotlib, which scripts/install-deps.sh installs), from the run's JSON."""

import os

import matplotlib

matplotlib.use("svg")  # no display here: the SVG backend alone, no GUI toolkit loaded
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)
from matplotlib.ticker import FuncFormatter, LogLocator  # noqa: E402

# One look per side in every chart: rzk (and rzk-recipes) solid, ZooKeeper (and Curator) dashed;
# rzk with `--schedule throughput` (the sessions curves only) dotted.
STYLE = {"rzk": {"color": "#1f77b4", "linestyle": "-", "marker": "o"},
         "rzk-throughput": {"color": "#2ca02c", "linestyle": ":", "marker": "^"},
         "zookeeper": {"color": "#d62728", "linestyle": "--", "marker": "s"}}
LABEL = {"rzk": "rzk", "rzk-throughput": "rzk --schedule throughput",
         "zookeeper": "Apache ZooKeeper 3.8"}
RECIPE_LABEL = {"rzk": "rzk-recipes LeaderLatch on rzk",
                "zookeeper": "Curator 5.4 LeaderLatch on ZooKeeper"}

plt.rcParams.update({
    "svg.fonttype": "none",  # text stays text: small files a browser renders in its own font
    "svg.hashsalt": "rzk-curves",  # stable element ids, so a redrawn chart diffs by its data
    "font.size": 9,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "figure.dpi": 100,
})


def draw(result, out_dir):
    """Draws every curve `result` holds into `out_dir`; returns the files written."""
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for key, fn in (("sessions", sessions_chart), ("znodes", memory_chart),
                    ("handoff", handoff_chart), ("fanout", fanout_chart)):
        if result.get(key):
            # A curve measured again by --update carries its own run's provenance.
            run = result.get("runs", {}).get(key, result)
            caption = "git %s, %s" % (run.get("git"), run.get("started"))
            path = os.path.join(out_dir, key + ".svg")
            fig = fn(result)
            for ax in fig.axes:
                plain_numbers(ax)
            fig.text(0.005, 0.005, caption, ha="left", va="bottom", fontsize=7, color="#666")
            fig.savefig(path, format="svg", metadata={"Date": None})
            plt.close(fig)
            written.append(path)
    return written


def by_server(rows, x_key, y_fn, **match):
    """{server: ([x], [y])}, rows sorted by x, skipping rows that failed or miss the value."""
    out = {}
    for r in sorted(rows, key=lambda r: (r.get("server"), r.get(x_key) or 0)):
        if r.get("error") or any(r.get(k) != v for k, v in match.items()):
            continue
        y = y_fn(r)
        if y is None or not isinstance(r.get(x_key), (int, float)):
            continue
        xs, ys = out.setdefault(r["server"], ([], []))
        xs.append(r[x_key])
        ys.append(y)
    return out


def plot(ax, series, labels=LABEL, suffix="", **style):
    for server in ("zookeeper", "rzk", "rzk-throughput"):
        if server in series:
            xs, ys = series[server]
            ax.plot(xs, ys, label=labels[server] + suffix, **dict(STYLE[server], **style))


def sessions_chart(result):
    rows = [r for r in result["sessions"] if r["sessions"] != "pipelined"]
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
    plot(a, by_server(rows, "sessions", lambda r: r["reads_per_s"] / 1000))
    a.set(xscale="log", xlabel="sessions, one read in flight each",
          ylabel="reads per second, thousands", title="Throughput against sessions")
    a.set_ylim(bottom=0)
    plot(b, by_server(rows, "sessions", lambda r: ms(r.get("p99_us"))), suffix=" p99")
    plot(b, by_server(rows, "sessions", lambda r: ms(r.get("p50_us"))), suffix=" p50",
         alpha=0.5, markersize=3)
    b.set(xscale="log", yscale="log", xlabel="sessions, one read in flight each",
          ylabel="read latency, ms", title="Read latency against sessions")
    for ax in (a, b):
        ax.legend()
    return fig


def memory_chart(result):
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
    for row in result["znodes"]:
        server = row["server"]
        base = row["samples"][0][1]
        xs = [n / 1000 for n, _ in row["samples"]]
        ys = [(kib - base) / 1024 for _, kib in row["samples"]]
        a.plot(xs, ys, label=LABEL[server], color=STYLE[server]["color"],
               linestyle=STYLE[server]["linestyle"])
        if row.get("after_gc"):
            n, kib = row["after_gc"]
            a.plot([n / 1000], [(kib - base) / 1024], marker="x", linestyle="none",
                   color=STYLE[server]["color"], label=LABEL[server] + " after a forced GC")
    a.set(xlabel="znodes, thousands (100-byte values)", ylabel="RSS growth, MiB",
          title="Memory against znodes")
    sessions = [r for r in result.get("sessions", []) if r.get("rss_mib") is not None]
    plot(b, by_server(sessions, "sessions", lambda r: r["rss_mib"] - r["rss_rest_mib"]))
    b.set(xlabel="sessions (each an ephemeral and a watch, reading)", ylabel="RSS growth, MiB",
          title="Memory against sessions")
    for ax in (a, b):
        ax.set_ylim(bottom=0)
        ax.legend()
    return fig


def handoff_chart(result):
    rows = result["handoff"]
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
    proto = [r for r in rows if r.get("level") == "protocol"]
    plot(a, by_server(proto, "n", lambda r: ms(r.get("p50_us"))), suffix=" p50")
    plot(a, by_server(proto, "n", lambda r: ms(r.get("p99_us"))), suffix=" p99", alpha=0.5,
         markersize=3)
    a.set(xscale="log", yscale="log", xlabel="participants", ylabel="handoff, ms",
          title="Election handoff (protocol, predecessor watch)")
    recipe = [r for r in rows if r.get("level") == "recipe"]
    plot(b, by_server(recipe, "n", recipe_p50), labels=RECIPE_LABEL, suffix=" p50")
    plot(b, by_server(recipe, "n", recipe_p99), labels=RECIPE_LABEL, suffix=" p99", alpha=0.5,
         markersize=3)
    b.set(xscale="log", yscale="log", xlabel="participants", ylabel="handoff, ms",
          title="LeaderLatch handoff, back to back")
    for ax in (a, b):
        ax.legend(fontsize=7)
    return fig


def recipe_p50(r):
    return r["handoff_ms_p50"] if "handoff_ms_p50" in r else ms(r.get("p50_us"))


def recipe_p99(r):
    return r["handoff_ms_p99"] if "handoff_ms_p99" in r else ms(r.get("p99_us"))


def fanout_chart(result):
    rows = result["fanout"]
    fig, (a, t, b) = plt.subplots(1, 3, figsize=(14, 4), layout="constrained")
    for ax, key in ((a, ""), (t, "after_ack_")):
        plot(ax, by_server(rows, "n", lambda r: ms(r.get(key + "p99_us"))), suffix=" p99")
        plot(ax, by_server(rows, "n", lambda r: ms(r.get(key + "p50_us"))), suffix=" p50",
             alpha=0.5, markersize=3)
        ax.set(xscale="log", yscale="log", xlabel="watchers of one node")
    a.set(ylabel="write sent to the last watcher notified, ms", title="Watch fan-out time")
    t.set(ylabel="write's reply to the last watcher notified, ms",
          title="Notification tail after the reply")
    plot(b, by_server(rows, "n", lambda r: r.get("server_cpu_us_per_op")))
    b.set(xscale="log", yscale="log", xlabel="watchers of one node",
          ylabel="server CPU per write and its notifications, us",
          title="Watch fan-out cost")
    for ax in (a, t, b):
        ax.legend()
    return fig


def ms(us):
    return None if us is None else us / 1000.0


# 1, 10, 100, 1,000 and 0.1 instead of 10^0 ... 10^3 and 10^-1 on the log axes.
PLAIN = FuncFormatter(lambda v, _: "{:,.0f}".format(v) if v >= 1 else "{:g}".format(v))


def plain_numbers(ax):
    for axis, scale in ((ax.xaxis, ax.get_xscale()), (ax.yaxis, ax.get_yscale())):
        if scale == "log":
            axis.set_major_formatter(PLAIN)
    if ax.get_yscale() == "log":
        # 1, 2, 5 in every decade: a latency axis often spans less than one.
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
