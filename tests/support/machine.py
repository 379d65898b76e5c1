"""What the benchmark scripts read of the machine and its processes (from /proc), their
progress log, and the wait for other people's work on the machine to end."""

import os
import resource
import sys
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")


def log(msg, *args):
    """A progress line on stderr, with the time of day."""
    sys.stderr.write("[%s] %s\n" % (time.strftime("%H:%M:%S"), msg % args if args else msg))
    sys.stderr.flush()


def cpu_seconds(pid):
    """utime + stime of process `pid`, in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        s = f.read()
    fields = s[s.rindex(")") + 2:].split()  # fields[0] is field 3 (state)
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime (14) + stime (15)


def status_kib(pid, key):
    """A kB field of /proc/<pid>/status, e.g. VmHWM (peak RSS)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise KeyError(key)


def system_cpu():
    """(busy, total) CPU seconds of the whole machine, from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7]  # user nice system irq softirq steal
    return busy / CLK_TCK, sum(v) / CLK_TCK


def children_cpu_s():
    """CPU seconds of this process's waited-for children (the load tools it ran)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def wait_quiet(max_wait_s, threshold=0.15, recheck_s=4.0):
    """Waits (at most max_wait_s) until the machine is nearly idle for a second, checking again
    `recheck_s` after each busy second: other people's builds on a shared machine would
    otherwise be measured as the servers' slowness. Returns the busy fraction last seen, or
    None when max_wait_s <= 0."""
    if max_wait_s <= 0:
        return None
    t_end = time.monotonic() + max_wait_s
    waited = False
    while True:
        b0, t0 = system_cpu()
        time.sleep(1.0)
        b1, t1 = system_cpu()
        busy = (b1 - b0) / max(1e-9, t1 - t0)
        if busy < threshold:
            return busy
        if time.monotonic() > t_end:
            log("  machine still %.0f%% busy after %.0f s of waiting; measuring anyway",
                busy * 100, max_wait_s)
            return busy
        if not waited:
            log("  machine %.0f%% busy (someone else's work); waiting for it to go quiet",
                busy * 100)
            waited = True
        time.sleep(recheck_s)
