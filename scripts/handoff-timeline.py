"""Where an election handoff's time goes inside the server, step by step, from the scheduler.

    /usr/bin/python3 -m scripts.handoff-timeline [--participants 5] [--gap-ms 20]
                                                 [--duration-s 4] [--rzk-bin target/release/rzk]

Starts a durable rzk server (as scripts/bench-compare.py does), records the scheduler with
`perf sched record` while `rzk bench --workload handoff-event` hands off against it, and splits
every handoff (the leader's delete to the event its successor receives) by the wake-ups that
carry it from thread to thread, read from `perf sched timehist -w`:

  delete to a server thread running   the leader's send wakes one of the server's tokio
                                      workers; on a virtual machine whose idle vCPU has halted,
                                      most of this is the wake-up itself
  ... to the log thread woken         the worker reads, decodes and applies the delete, and
                                      hands the transaction to rzk-log
  ... to the cache flush issued       rzk-log writes the record and fdatasync writes it back;
                                      the flush that follows is dispatched by a kblockd
                                      kworker (on virtio-blk), so its wake-up marks that moment
  ... to the event sent               the flush, then the successor's event written
  event to the successor running      the successor's thread woken

Only handoffs whose every step was seen are counted. Steps a machine does not show (a disk
that flushes without a kworker) are left out, with their time in the step after them. Needs
root (or perf_event_paranoid <= 0) and perf; the overhead of recording stretches every step a
little, so the steps are for comparison with each other, not with `rzk bench`'s own figures.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

from tests.support import servers
from tests.support.stats import pct

WAKE = re.compile(r"\s*([\d.]+) \[(\d+)\]\s+(\S+)\s.*awakened: (\S+)")
# A switch-out line: time, cpu, task, then wait / sch delay / run time in ms.
RUN = re.compile(r"\s*([\d.]+) \[(\d+)\]\s+(\S+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$")
STEPS = ["delete to a server thread running", "... to the log thread woken",
         "... to the cache flush issued", "... to the event sent",
         "event to the successor running", "delete to the event sent"]


def pid_of(task):
    """`name[tid/pid]` -> pid (the tid when the task is its process's main thread)."""
    m = re.search(r"\[(\d+)(?:/(\d+))?\]$", task)
    return int(m.group(2) or m.group(1)) if m else None


def switch_in_after(runs, task, t):
    """When `task` next started running after `t`: its first switch-out after `t`, less the
    time it ran."""
    for (end, _cpu, who, _wait, _delay, ran) in runs.get(task, ()):
        start = end - ran / 1000.0
        if start >= t - 1e-6:
            return start
    return None


def running_since(runs, task, t):
    """When the spell in which `task` was running at `t` began."""
    for (end, _cpu, who, _wait, _delay, ran) in runs.get(task, ()):
        if end >= t - 1e-6:
            start = end - ran / 1000.0
            return start if start <= t + 1e-6 else None
    return None


def timelines(lines, server_pid, gap_s):
    wakes, runs = [], {}
    for ln in lines:
        m = WAKE.match(ln)
        if m:
            wakes.append((float(m.group(1)), int(m.group(2)), m.group(3), m.group(4)))
            continue
        m = RUN.match(ln)
        if m:
            runs.setdefault(m.group(3), []).append(
                (float(m.group(1)), int(m.group(2)), m.group(3), float(m.group(4)),
                 float(m.group(5)), float(m.group(6))))
    out, last_busy = [], 0.0
    for i, (t0, _cpu, who, whom) in enumerate(wakes):
        # The election's own traffic: a participant sending, or the server answering one (the
        # bench's main thread waking the leader to delete is not: it ends the gap).
        busy = who.startswith("participant-") or (
            pid_of(who) == server_pid and whom.startswith("participant-"))
        # A delete after the idle gap: a participant waking a server thread, with nothing from
        # the election for most of the gap before it.
        if (who.startswith("participant-") and pid_of(whom) == server_pid
                and t0 - last_busy > gap_s * 0.5):
            step = {"delete": t0}
            srv_in = None
            for (t, _c, a, b) in wakes[i + 1:]:
                if t - t0 > 0.005:
                    break
                if "log" not in step and pid_of(a) == server_pid and b.startswith("rzk-log"):
                    step["log"] = t
                    # The server thread that took the delete (not always the one the send
                    # woke), from when it began to run. One that seems to have run since
                    # before the send, through the idle gap, is a switch the recording lost:
                    # that handoff is not counted.
                    since = running_since(runs, a, t)
                    srv_in = since if since is not None and since >= t0 else None
                elif ("log" in step and "flush" not in step and "event" not in step
                      and a.startswith("rzk-log") and b.startswith("kworker")):
                    step["flush"] = t
                elif ("log" in step and a.startswith("rzk-log")
                      and b.startswith("participant-")):
                    step["event"] = t
                    step["successor_in"] = switch_in_after(runs, b, t)
                    break
            if srv_in is not None and "log" in step and "event" in step:
                step["server_in"] = srv_in
                out.append(step)
        if busy:
            last_busy = t0
    return out


def split(step):
    us = lambda a, b: (step[b] - step[a]) * 1e6 if a in step and b in step else None  # noqa
    flush_at = "flush" if "flush" in step else "log"
    return [us("delete", "server_in"), us("server_in", "log"),
            us("log", "flush") if "flush" in step else None, us(flush_at, "event"),
            us("event", "successor_in"), us("delete", "event")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--participants", type=int, default=5)
    ap.add_argument("--gap-ms", type=int, default=20)
    ap.add_argument("--duration-s", type=float, default=4.0)
    ap.add_argument("--rzk-bin", default=servers.release_rzk_binary())
    ap.add_argument("--timehist", metavar="FILE",
                    help="split the handoffs of an existing `perf sched timehist -w` output "
                         "instead of recording (with --server-pid)")
    ap.add_argument("--server-pid", type=int, help="the rzk server's pid in --timehist")
    ap.add_argument("--keep", metavar="FILE",
                    help="also write the recording's `perf sched timehist -w` output here, and "
                         "print the server's pid (for --timehist later)")
    args = ap.parse_args()
    if args.gap_ms <= 0:
        sys.exit("--gap-ms must be positive: a handoff is found by the idle gap before it")
    if args.timehist:
        if args.server_pid is None:
            sys.exit("--timehist needs --server-pid")
        with open(args.timehist) as f:
            report(timelines(f.read().splitlines(), args.server_pid, args.gap_ms / 1000.0))
        return
    os.environ["RZK_BIN"] = args.rzk_bin
    srv = servers.start_for_benchmark("rzk")
    with tempfile.TemporaryDirectory(prefix="rzk-timeline-") as tmp:
        try:
            steps, bench, bench_line = record(args, srv, os.path.join(tmp, "sched.data"))
        finally:
            srv.stop()
    print("    %s" % " ".join(["rzk"] + bench[1:2] + bench[4:]))
    print("    under perf sched record: %s" % (bench_line[0] if bench_line else "(no summary)"))
    print()
    report(steps)


def record(args, srv, data):
    """`rzk bench --workload handoff-event` against `srv` under `perf sched record` into
    `data`; the handoffs split, the bench's command and its summary line."""
    bench = [args.rzk_bin, "bench", "--connect", srv.hosts, "--workload", "handoff-event",
             "--participants", str(args.participants), "--gap-ms", str(args.gap_ms),
             "--duration-s", str(args.duration_s)]
    p = subprocess.run(["perf", "sched", "record", "-o", data, "--"] + bench,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=args.duration_s + 120)
    if p.returncode != 0:
        sys.exit("perf sched record failed (exit %d): %s" % (p.returncode, p.stderr[-800:]))
    bench_line = [ln for ln in p.stdout.splitlines() if ln.startswith("handoff-event")]
    th = subprocess.run(["perf", "sched", "timehist", "-w", "-i", data],
                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                        timeout=600)
    steps = timelines(th.stdout.splitlines(), srv.proc.pid, args.gap_ms / 1000.0)
    if args.keep:
        with open(args.keep, "w") as f:
            f.write(th.stdout)
        print("timehist in %s, server pid %d" % (args.keep, srv.proc.pid))
    return steps, bench, bench_line


def report(steps):
    print("%d handoffs with every step seen" % len(steps))
    print()
    print("| step | p25 us | p50 us | p75 us |")
    print("|---|---|---|---|")
    cols = list(zip(*[split(s) for s in steps])) if steps else [[] for _ in STEPS]
    for name, col in zip(STEPS, cols):
        seen = [x for x in col if x is not None]
        vals = [pct(seen, q) if seen else None for q in (0.25, 0.5, 0.75)]
        print("| %s | %s |" % (name, " | ".join("-" if v is None else "%.0f" % v
                                                 for v in vals)))


if __name__ == "__main__":
    main()
