"""Interop suite driving the real kazoo client (Debian python3-kazoo 2.8) against a server.

    /usr/bin/python3 -m tests.interop.kazoo_suite [--server zookeeper|rzk] [-k NAME]

Runs against Apache ZooKeeper 3.8 by default; exits non-zero if any test fails.
Use /usr/bin/python3: kazoo is installed for the system interpreter only.
"""

import logging
import queue
import signal
import subprocess
import sys
import threading
import time

from tests.interop import kazoo_watches_acls
from tests.interop.common import Suite, Failure, check, check_eq, expect_raises, wait_until
from tests.interop.kazoo_clients import WAIT, Clients, expect_quiet, get_q, join_all

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    BadVersionError, LockTimeout, NoChildrenForEphemeralsError, NodeExistsError, NoNodeError,
    NotEmptyError,
)
from kazoo.protocol.states import ZnodeStat
from kazoo.security import OPEN_ACL_UNSAFE

suite = Suite("kazoo", overall_timeout_s=150)
# kazoo warns on every dropped connection, which some tests cause on purpose; keep errors only
logging.getLogger("kazoo").setLevel(logging.ERROR)


# --------------------------------------------------------------------------------------------
# Basic CRUD and Stat fields

@suite.test
def fresh_server_tree(srv):
    """Runs first, on an untouched server: the initial tree and the root's stat."""
    with Clients(srv) as cs:
        zk = cs.new()
        check_eq(zk.get_children("/"), ["zookeeper"], "children of / on a fresh server")
        check_eq(sorted(zk.get_children("/zookeeper")), ["config", "quota"],
                 "children of /zookeeper")
        data, st = zk.get("/")
        check_eq(data, b"", "root data")
        check_eq((st.czxid, st.mzxid, st.ctime, st.mtime, st.version, st.aversion,
                  st.ephemeralOwner, st.dataLength, st.numChildren),
                 (0, 0, 0, 0, 0, 0, 0, 0, 1), "root stat fields")
        # /zookeeper is not counted as a create, so 2*creates - numChildren is -1
        check_eq(st.cversion, -1, "root cversion on a fresh server")
        check_eq(list(zk.get_acls("/")[0]), OPEN_ACL_UNSAFE, "root ACL")
        data, cst = zk.get("/zookeeper/config")
        check_eq((data, cst.aversion), (b"", -1), "standalone /zookeeper/config data, aversion")


@suite.test
def crud_and_stat(srv):
    with Clients(srv) as cs:
        zk = cs.new()
        now_ms = time.time() * 1000
        check_eq(zk.create("/crud", b"v1"), "/crud", "create returns path")
        data, st = zk.get("/crud")
        check_eq(data, b"v1", "data")
        check(isinstance(st, ZnodeStat), "stat type %r", type(st))
        check_eq((st.version, st.cversion, st.aversion, st.ephemeralOwner, st.dataLength,
                  st.numChildren), (0, 0, 0, 0, 2, 0),
                 "(version, cversion, aversion, ephemeralOwner, dataLength, numChildren)")
        check(st.czxid > 0 and st.czxid == st.mzxid == st.pzxid,
              "fresh node must have czxid == mzxid == pzxid > 0: %r", st)
        check(st.ctime == st.mtime, "fresh node ctime %d != mtime %d", st.ctime, st.mtime)
        check(abs(st.ctime - now_ms) < 60000, "ctime %d is not milliseconds near now %d",
              st.ctime, now_ms)

        st2 = zk.set("/crud", b"v22", version=0)
        check_eq((st2.version, st2.dataLength, st2.czxid, st2.ctime),
                 (1, 3, st.czxid, st.ctime), "(version, dataLength, czxid, ctime) after set")
        check(st2.mzxid > st.mzxid, "mzxid must grow on set: %d -> %d", st.mzxid, st2.mzxid)
        check(st2.mtime >= st.mtime, "mtime went backwards")
        check_eq(st2.pzxid, st.pzxid, "pzxid unchanged by set")
        expect_raises(BadVersionError, zk.set, "/crud", b"x", version=0)
        check_eq(zk.exists("/crud"), st2, "exists() stat equals set() stat")
        check_eq(zk.get("/crud"), (b"v22", st2), "get after set")
        check(zk.exists("/crud/missing") is None, "exists on missing node must be None")
        expect_raises(NoNodeError, zk.get, "/crud/missing")
        expect_raises(NoNodeError, zk.set, "/crud/missing", b"")
        expect_raises(NodeExistsError, zk.create, "/crud", b"")
        expect_raises(NoNodeError, zk.create, "/crud/no/parent", b"")

        last = None
        for name in ("c2", "c1", "c3"):
            last = zk.create("/crud/" + name, b"")
        _, c3 = zk.get(last)
        data, pst = zk.get("/crud")
        check_eq(sorted(zk.get_children("/crud")), ["c1", "c2", "c3"], "children")
        check_eq((pst.numChildren, pst.cversion, pst.version, pst.mzxid),
                 (3, 3, 1, st2.mzxid), "parent (numChildren, cversion, version, mzxid)")
        check_eq(pst.pzxid, c3.czxid, "parent pzxid is the zxid of the last child create")
        kids, kst = zk.get_children("/crud", include_data=True)
        check_eq((sorted(kids), kst), (["c1", "c2", "c3"], pst), "getChildren2 result")

        expect_raises(NotEmptyError, zk.delete, "/crud")
        expect_raises(BadVersionError, zk.delete, "/crud/c1", version=5)
        zk.delete("/crud/c1", version=0)
        expect_raises(NoNodeError, zk.delete, "/crud/c1")
        pst2 = zk.exists("/crud")
        check_eq((pst2.numChildren, pst2.cversion), (2, 4), "parent after child delete")
        check(pst2.pzxid > pst.pzxid, "pzxid must move on child delete")

        # create2 (include_data) returns the stat of the new node
        path, cst = zk.create("/crud/c4", b"abc", include_data=True)
        check_eq((path, cst.dataLength, cst.version), ("/crud/c4", 3, 0), "create2 result")
        check(cst.czxid > pst2.pzxid, "create2 stat czxid")

        # binary payloads: every byte value, 100 KiB; and empty data
        blob = bytes(range(256)) * 400
        zk.create("/crud/blob", blob)
        d, bst = zk.get("/crud/blob")
        check(d == blob, "100 KiB binary payload did not round-trip (got %d bytes)", len(d))
        check_eq(bst.dataLength, len(blob), "dataLength of blob")
        zk.create("/crud/empty")
        check_eq(zk.get("/crud/empty")[0], b"", "empty data")
        zk.set("/crud/empty", b"")
        check_eq(zk.exists("/crud/empty").version, 1, "setting empty data still bumps version")

        # makepath, recursive delete, root and /zookeeper
        zk.create("/crud/deep/a/b/c", b"leaf", makepath=True)
        check_eq(zk.get("/crud/deep/a/b/c")[0], b"leaf", "makepath leaf")
        zk.delete("/crud", recursive=True)
        check(zk.exists("/crud") is None, "recursive delete")
        check("zookeeper" in zk.get_children("/"), "/zookeeper must be listed under /")
        check(zk.exists("/") is not None, "root exists")
        zk.sync("/")


@suite.test
def zxid_monotonic_and_pipelining(srv):
    """Many outstanding async requests on one connection: all answered, in order, zxids rising."""
    with Clients(srv) as cs:
        zk = cs.new()
        zk.create("/pipe")
        n = 300
        asyncs = [zk.create_async("/pipe/n%04d" % i, b"%d" % i) for i in range(n)]
        paths = [a.get(timeout=WAIT) for a in asyncs]
        check_eq(paths, ["/pipe/n%04d" % i for i in range(n)], "async create results")
        gets = [zk.get_async("/pipe/n%04d" % i) for i in range(n)]
        results = [g.get(timeout=WAIT) for g in gets]
        czxids = [st.czxid for _, st in results]
        check(all(a < b for a, b in zip(czxids, czxids[1:])),
              "czxids of pipelined creates must strictly increase")
        check_eq([d for d, _ in results], [b"%d" % i for i in range(n)], "pipelined get data")
        check_eq(len(zk.get_children("/pipe")), n, "child count")
        check_eq(zk.exists("/pipe").numChildren, n, "numChildren")
        zk.delete("/pipe", recursive=True)


# --------------------------------------------------------------------------------------------
# Ephemeral and sequential nodes, sessions

@suite.test
def ephemeral_and_sequential(srv):
    with Clients(srv) as cs:
        a, b = cs.new(), cs.new()
        a.create("/eph")
        p = a.create("/eph/e1", b"x", ephemeral=True)
        st = b.exists(p)
        check(st is not None, "ephemeral visible to other session")
        check_eq(st.ephemeralOwner, a.client_id[0], "ephemeralOwner is creator's session id")
        check(st.ephemeralOwner != 0, "ephemeralOwner must be non-zero")
        expect_raises(NoChildrenForEphemeralsError, a.create, "/eph/e1/child", b"")

        names = [a.create("/eph/seq/n-", b"", sequence=True, makepath=True) for _ in range(3)]
        check_eq(names, ["/eph/seq/n-0000000000", "/eph/seq/n-0000000001",
                         "/eph/seq/n-0000000002"], "sequential names")
        a.delete("/eph/seq/n-0000000001")
        check_eq(a.exists("/eph/seq").cversion, 4, "cversion counts creates and deletes")
        # ...but the sequence counter counts only creates of children (ZooKeeper stores the
        # number of creates and reports cversion as 2*creates - numChildren)
        check_eq(a.create("/eph/seq/n-", sequence=True), "/eph/seq/n-0000000003",
                 "sequence after a delete")
        check_eq(a.exists("/eph/seq").cversion, 5, "cversion after 4 creates, 1 delete")
        e = b.create("/eph/seq/e-", b"", ephemeral=True, sequence=True)
        check_eq(e, "/eph/seq/e-0000000004", "ephemeral sequential name")
        check_eq(a.exists(e).ephemeralOwner, b.client_id[0], "owner of ephemeral sequential")
        check_eq(a.create("/eph/seq2/", sequence=True, makepath=True), "/eph/seq2/0000000000",
                 "sequential with empty prefix")

        # closing a session removes its ephemerals at once; others' stay
        seen = queue.Queue()
        a.exists(e, watch=lambda ev: seen.put((ev.type, ev.path)))
        b.stop()
        check_eq(get_q(seen, "NodeDeleted for closed session's ephemeral"), ("DELETED", e),
                 "watch event for ephemeral of closed session")
        check(a.exists(e) is None, "ephemeral of closed session gone")
        check(a.exists("/eph/e1") is not None, "own ephemeral must survive other's close")
        a.delete("/eph", recursive=True)


class LogCapture(logging.Handler):
    def __init__(self):
        super().__init__(level=1)
        self.messages = []

    def emit(self, record):
        try:
            self.messages.append(record.getMessage())
        except Exception:
            pass


def negotiated_timeout_ms(srv, requested_s):
    """Connects with a requested session timeout; returns what the server granted (kazoo logs it)."""
    log = logging.getLogger("kazoo-negotiation-%s" % requested_s)
    log.setLevel(1)
    log.propagate = False
    cap = LogCapture()
    log.addHandler(cap)
    c = KazooClient(hosts=srv.hosts, timeout=requested_s, logger=log)
    c.start(timeout=15)
    try:
        for m in cap.messages:
            if "negotiated session timeout:" in m:
                return int(m.split("negotiated session timeout:")[1].split()[0])
        raise Failure("kazoo did not log the negotiated timeout")
    finally:
        c.stop()
        c.close()


@suite.test
def session_timeout_negotiation(srv):
    # servers.py runs both servers with tickTime 2000ms: bounds are 2 and 20 ticks
    check_eq(negotiated_timeout_ms(srv, 1.0), 4000, "timeout below min is raised to 2*tick")
    check_eq(negotiated_timeout_ms(srv, 10.0), 10000, "timeout within bounds is granted")
    check_eq(negotiated_timeout_ms(srv, 100.0), 40000, "timeout above max is cut to 20*tick")


EXPIRY_CHILD = r"""
import sys, time
from kazoo.client import KazooClient
c = KazooClient(hosts=sys.argv[1], timeout=4.0)
c.start(timeout=15)
c.create("/expiry/e", b"doomed", ephemeral=True)
print("READY %d" % c.client_id[0], flush=True)
time.sleep(120)
"""


@suite.test
def session_expiry_removes_ephemerals(srv):
    """A client dies without closing its session: its ephemeral stays until the session times out."""
    with Clients(srv) as cs:
        a = cs.new()
        a.create("/expiry")
        child = subprocess.Popen([sys.executable, "-c", EXPIRY_CHILD, srv.hosts],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            lines = queue.Queue()
            threading.Thread(target=lambda: lines.put(child.stdout.readline()), daemon=True).start()
            line = get_q(lines, "child kazoo process to create its ephemeral", timeout=20)
            check(line.startswith("READY "), "child said %r", line)
            sid = int(line.split()[1])
            seen = queue.Queue()
            st = a.exists("/expiry/e", watch=lambda ev: seen.put((ev.type, time.monotonic())))
            check(st is not None and st.ephemeralOwner == sid, "ephemeral owned by child: %r", st)
            child.send_signal(signal.SIGKILL)
            child.wait(10)
            t_kill = time.monotonic()
            time.sleep(1.0)
            check(a.exists("/expiry/e") is not None,
                  "ephemeral vanished within 1s of the TCP connection dropping; it must live "
                  "until the 4s session timeout")
            kind, t_gone = get_q(seen, "session expiry to delete the ephemeral", timeout=15)
            check_eq(kind, "DELETED", "event type")
            waited = t_gone - t_kill
            check(2.0 <= waited <= 12.0, "ephemeral removed %.1fs after client death, want "
                  "roughly the 4s session timeout", waited)
            check(a.exists("/expiry/e") is None, "ephemeral gone after expiry")
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        a.delete("/expiry", recursive=True)


@suite.test
def session_reconnect_and_bad_password(srv):
    """Drop the TCP connection under a live client: it reattaches to the same session (ephemerals
    kept). A client presenting that session id with a wrong password gets an expired session.
    (kazoo 2.8 drops its watches client-side on disconnect and never sends SetWatches; the
    Curator suite covers SetWatches/SetWatches2 with the Java client.)"""
    with Clients(srv) as cs:
        a = cs.new()
        states = queue.Queue()
        a.add_listener(lambda s: states.put(s))
        a.create("/resume", b"", ephemeral=True)
        sid, passwd = a.client_id
        a._connection._socket.shutdown(2)          # simulate a network cut
        check_eq(get_q(states, "SUSPENDED after connection drop"), KazooState.SUSPENDED, "state")
        check_eq(get_q(states, "CONNECTED after reconnect"), KazooState.CONNECTED, "state")
        check_eq(a.client_id[0], sid, "session id after reconnect")
        st = a.exists("/resume")
        check(st is not None and st.ephemeralOwner == sid, "ephemeral survives reconnect")

        bad = KazooClient(hosts=srv.hosts, timeout=10.0,
                          client_id=(sid, bytes((x ^ 0xFF) for x in passwd)))
        bad.start(timeout=15)
        cs.all.append(bad)
        # kazoo treats the refusal as an expired session and silently starts a fresh one
        check(bad.client_id[0] != sid, "wrong password must not attach to the session")
        check(bad.exists("/resume") is not None, "fresh session works")
        check(a.exists("/resume") is not None, "owner's ephemeral unaffected")
        a.delete("/resume")


# --------------------------------------------------------------------------------------------
# Recipes: Lock and Election

@suite.test
def lock_mutual_exclusion(srv):
    n, iters = 5, 4
    with Clients(srv) as cs:
        clients = [cs.new() for _ in range(n)]
        clients[0].create("/lockcount", b"0")
        locks = [c.Lock("/lock", "w%d" % i) for i, c in enumerate(clients)]
        mu = threading.Lock()
        state = {"holders": 0, "max": 0, "entries": 0}
        errors = []

        def worker(i):
            try:
                for _ in range(iters):
                    if not locks[i].acquire(timeout=20):
                        errors.append("w%d: acquire returned False" % i)
                        return
                    try:
                        with mu:
                            state["holders"] += 1
                            state["max"] = max(state["max"], state["holders"])
                        # unprotected read-modify-write: loses updates unless the lock excludes
                        data, _ = clients[i].get("/lockcount")
                        time.sleep(0.01)
                        clients[i].set("/lockcount", b"%d" % (int(data) + 1))
                        with mu:
                            state["holders"] -= 1
                            state["entries"] += 1
                    finally:
                        locks[i].release()
            except Exception as e:
                errors.append("w%d: %s: %s" % (i, type(e).__name__, e))

        threads = [threading.Thread(target=worker, args=(i,), name="w%d" % i, daemon=True)
                   for i in range(n)]
        for t in threads:
            t.start()
        join_all(threads, 40, "lock workers")
        check(not errors, "worker errors: %s", errors)
        check_eq(state["max"], 1, "max simultaneous lock holders")
        check_eq(state["entries"], n * iters, "critical sections entered")
        check_eq(clients[0].get("/lockcount")[0], b"%d" % (n * iters), "counter in znode")
        check_eq(clients[0].get_children("/lock"), [], "lock nodes left behind")

        # deterministic queueing: holder, a waiter, non-blocking and timed attempts
        check(locks[0].acquire(timeout=5), "w0 acquire")
        got1 = threading.Event()
        t1 = threading.Thread(target=lambda: locks[1].acquire(timeout=20) and got1.set(),
                              daemon=True)
        t1.start()
        wait_until(lambda: len(locks[0].contenders()) == 2, WAIT, "w1 to queue")
        check_eq(locks[0].contenders(), ["w0", "w1"], "contenders in order")
        check(locks[2].acquire(blocking=False) is False, "non-blocking acquire must fail")
        expect_raises(LockTimeout, locks[2].acquire, timeout=0.3)
        check(not got1.is_set(), "w1 got the lock while w0 held it")
        # the holder's session closes: the waiter takes over
        clients[0].stop()
        check(got1.wait(WAIT), "w1 did not get the lock after w0's session closed")
        check_eq(locks[1].contenders(), ["w1"], "contenders after handover")
        locks[1].release()
        t1.join(5)


@suite.test
def election(srv):
    n = 4
    with Clients(srv) as cs:
        clients = [cs.new() for _ in range(n + 1)]
        elections = [c.Election("/election", "c%d" % i) for i, c in enumerate(clients)]
        mu = threading.Lock()
        current = {"leader": None}
        leaders = queue.Queue()
        release = [threading.Event() for _ in range(n + 1)]
        problems = []

        def lead(i):
            with mu:
                if current["leader"] is not None:
                    problems.append("c%d became leader while c%s led" % (i, current["leader"]))
                current["leader"] = i
            leaders.put(i)
            if not release[i].wait(30):
                problems.append("c%d never released" % i)
            with mu:
                current["leader"] = None

        def run(i):
            try:
                elections[i].run(lead, i)
            except Exception as e:
                problems.append("c%d: %s: %s" % (i, type(e).__name__, e))

        threads = []
        for i in range(n + 1):      # start one at a time so the queue order is c0, c1, ...
            t = threading.Thread(target=run, args=(i,), name="c%d" % i, daemon=True)
            t.start()
            threads.append(t)
            wait_until(lambda: len(elections[0].contenders()) == i + 1, WAIT,
                       "c%d to join the election" % i)
        check_eq(get_q(leaders, "first leader"), 0, "first leader")
        check_eq(elections[1].contenders(), ["c%d" % i for i in range(n + 1)], "contenders")

        # c4 withdraws before its turn: its run() returns, its function never runs
        elections[n].cancel()
        threads[n].join(WAIT)
        check(not threads[n].is_alive(), "cancelled contender's run() did not return")
        wait_until(lambda: len(elections[0].contenders()) == n, WAIT, "c4 to leave")

        for expected in range(n):
            if expected:
                check_eq(get_q(leaders, "c%d to take over" % expected), expected, "next leader")
            expect_quiet(leaders, "second leader while c%d leads" % expected)
            check_eq(elections[0].contenders()[0], "c%d" % expected, "contenders() head")
            release[expected].set()
        join_all(threads, WAIT, "election contenders")
        check(not problems, "election problems: %s", problems)
        expect_quiet(leaders, "extra leader (cancelled contender?)")
        check_eq(clients[0].get_children("/election"), [], "election nodes left behind")


# Watches, transactions, ACLs, four-letter words and chroot: after the tests above.
suite.include(kazoo_watches_acls.TESTS)


if __name__ == "__main__":
    suite.main()
