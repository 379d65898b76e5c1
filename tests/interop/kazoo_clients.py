"""Kazoo clients for the kazoo interop suite: a pool that always closes them, and bounded waits
on the queues their watch and recipe callbacks feed."""

import queue
import time

from tests.interop.common import Failure, check

from kazoo.client import KazooClient

WAIT = 10.0          # generous bound for anything that should happen "soon"
QUIET = 0.4          # how long we listen to be sure that something did NOT happen


class Clients:
    """Creates kazoo clients for one test and always closes them."""

    def __init__(self, srv):
        self.srv = srv
        self.all = []

    def new(self, timeout=10.0, **kw):
        c = KazooClient(hosts=self.srv.hosts, timeout=timeout, **kw)
        c.start(timeout=15)
        self.all.append(c)
        return c

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for c in self.all:
            try:
                c.stop()
                c.close()
            except Exception:
                pass


def get_q(q, what, timeout=WAIT):
    try:
        return q.get(timeout=timeout)
    except queue.Empty:
        raise Failure("timed out after %.1fs waiting for %s" % (timeout, what))


def expect_quiet(q, what):
    try:
        item = q.get(timeout=QUIET)
    except queue.Empty:
        return
    raise Failure("unexpected %s: %r" % (what, item))


def join_all(threads, timeout_s, what):
    deadline = time.monotonic() + timeout_s
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    alive = [t.name for t in threads if t.is_alive()]
    check(not alive, "%s: threads still running after %.0fs: %s", what, timeout_s, alive)
