"""Server restarts with live sessions, through kazoo 2.8: the server is SIGKILLed and started
again on the same port with the same data. Clients that reconnect within their session timeout
keep their sessions and ephemerals; sessions that never come back expire after the restart.
Proven against Apache ZooKeeper (always durable) and run against rzk with a data directory.

    /usr/bin/python3 -m tests.interop.restart_suite --server zookeeper|rzk
"""

import threading

from tests.interop.common import Suite, check, check_eq, wait_until
from tests.support import zkwire

from kazoo.client import KazooClient
from kazoo.protocol.states import KazooState

suite = Suite("restart", overall_timeout_s=150, server_options={"durable": True})


def client(srv, timeout_s=10.0):
    c = KazooClient(hosts=srv.hosts, timeout=timeout_s, connection_retry={"max_tries": -1, "delay": 0.1, "max_delay": 0.5})
    c.start(timeout=15)
    return c


def raw_session_with_ephemeral(srv, path, timeout_ms=4000):
    """A session that will never come back: raw connection, ephemeral created, socket dropped."""
    c, _ = zkwire.connect("127.0.0.1", srv.port, timeout_ms)
    try:
        c.send("create", 1, {"path": path, "acl": zkwire.OPEN_ACL, "flags": zkwire.EPHEMERAL})
        check_eq(zkwire.decode_frame(c.recv_frame(), "create")["err"], 0, "raw ephemeral create")
    finally:
        c.close()


@suite.test
def sessions_and_ephemerals_survive_a_restart(srv):
    c = client(srv)
    states = []
    c.add_listener(lambda st: states.append(st))
    try:
        c.create("/durable", b"kept", makepath=True)
        c.create("/mine", b"", ephemeral=True)
        sid = c.client_id[0]
        children_before = []
        seen = threading.Event()

        @c.ChildrenWatch("/")
        def _watch(children):
            children_before.append(sorted(children))
            if "after" in children:
                seen.set()

        srv.restart(hard=True)
        wait_until(lambda: c.state == KazooState.CONNECTED and KazooState.SUSPENDED in states,
                   30, "kazoo to reconnect after the restart")
        check_eq(c.client_id[0], sid, "session id after restart")
        check(KazooState.LOST not in states, "session was lost: %r" % states)
        data, stat = c.get("/durable")
        check_eq(data, b"kept", "data after restart")
        _, stat = c.get("/mine")
        check_eq(stat.ephemeralOwner, sid, "ephemeral owner after restart")
        # The client keeps working, and new writes get higher zxids.
        zs = c.create("/after", b"", ephemeral=True)
        check_eq(zs, "/after", "create after restart")
        c.delete("/after")
    finally:
        c.stop()
        c.close()


@suite.test
def sessions_that_do_not_come_back_expire_after_the_restart(srv):
    raw_session_with_ephemeral(srv, "/orphan", timeout_ms=4000)
    c = client(srv)
    try:
        check(c.exists("/orphan") is not None, "ephemeral exists before the restart")
    finally:
        c.stop()
        c.close()
    srv.restart(hard=True)
    c = client(srv)
    try:
        # Still there right after the restart: its session gets a full timeout to return.
        check(c.exists("/orphan") is not None, "ephemeral kept right after the restart")
        wait_until(lambda: c.exists("/orphan") is None, 15, "the orphaned session to expire")
    finally:
        c.stop()
        c.close()


@suite.test
def a_clean_restart_keeps_everything_too(srv):
    c = client(srv)
    try:
        c.ensure_path("/graceful")
        for i in range(50):
            c.create("/graceful/n", b"%d" % i, sequence=True)
    finally:
        c.stop()
        c.close()
    srv.restart(hard=False)
    c = client(srv)
    try:
        kids = sorted(c.get_children("/graceful"))
        check_eq(len(kids), 50, "children after a clean restart")
        check_eq(kids[-1], "n0000000049", "last sequential name")
        name = c.create("/graceful/n", b"", sequence=True)
        check_eq(name, "/graceful/n0000000050", "sequence continues after the restart")
    finally:
        c.stop()
        c.close()


if __name__ == "__main__":
    suite.main()
