"""The floor under a durable write's round trip, measured from Python: fdatasync latency on a
disk and a loopback TCP round trip. The benchmarks hold the servers' latencies against it."""

import os
import socket
import tempfile
import threading
import time

from tests.support.stats import pct


def fdatasync_floor(directory, n=1000, idle_ms=0.0, modes=("preallocated", "append")):
    """100-byte writes each followed by fdatasync: into a preallocated file (as both servers'
    logs do) and appending to a growing file. With `idle_ms`, the machine sleeps that long
    before each sample: on a virtual machine an idle vCPU is slow to wake, and a handoff after
    an idle gap pays that too."""
    out = {}
    for mode in modes:
        path = os.path.join(directory, "fdatasync-probe")
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            if mode == "preallocated":
                os.write(fd, b"\0" * (n * 100 + 4096))
                os.fsync(fd)
                os.lseek(fd, 0, os.SEEK_SET)
            lat = []
            rec = b"r" * 100
            for _ in range(n):
                if idle_ms:
                    time.sleep(idle_ms / 1000.0)
                t = time.perf_counter_ns()
                os.write(fd, rec)
                os.fdatasync(fd)
                lat.append((time.perf_counter_ns() - t) / 1000.0)
        finally:
            os.close(fd)
            os.unlink(path)
        out[mode] = {"p50_us": pct(lat, 0.5), "p99_us": pct(lat, 0.99), "n": n}
    return out


def loopback_floor(n=10000, idle_ms=0.0):
    """Round trip of 100 bytes over a loopback TCP connection to a Python echo thread; with
    `idle_ms`, after that long asleep (see fdatasync_floor)."""
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(1)

    def echo():
        c, _ = ls.accept()
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with c:
            while True:
                d = c.recv(65536)
                if not d:
                    return
                c.sendall(d)

    t = threading.Thread(target=echo, daemon=True)
    t.start()
    s = socket.create_connection(ls.getsockname())
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    msg = b"e" * 100
    lat = []
    for i in range(n + 500):
        if idle_ms and i >= 500:
            time.sleep(idle_ms / 1000.0)
        t0 = time.perf_counter_ns()
        s.sendall(msg)
        got = 0
        while got < len(msg):
            got += len(s.recv(65536))
        if i >= 500:
            lat.append((time.perf_counter_ns() - t0) / 1000.0)
    s.close()
    t.join(5)
    ls.close()
    return {"p50_us": pct(lat, 0.5), "p99_us": pct(lat, 0.99), "n": n}


def handoff_floor(n_sync, n_rtt, idle_ms=0.0):
    """The floor a handoff is held against, measured now: (fdatasync into a preallocated file in
    a fresh directory under $TMPDIR, loopback round trip), each a dict with p50_us and p99_us."""
    with tempfile.TemporaryDirectory(prefix="rzk-floor-") as d:
        fs = fdatasync_floor(d, n_sync, idle_ms, ("preallocated",))["preallocated"]
    return fs, loopback_floor(n_rtt, idle_ms)
