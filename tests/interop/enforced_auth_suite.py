"""Enforced authentication with kazoo 2.8 and the ZooKeeper 3.8 Java client: the server runs with zoo.cfg's
`enforce.auth.enabled=true` and `enforce.auth.schemes=digest` (ZooKeeper reads them from its
zoo.cfg, rzk from `--config`). Written against ZooKeeper 3.8 first.

    /usr/bin/python3 -m tests.interop.enforced_auth_suite --server rzk

An unauthenticated client connects, but its first request is answered with error -124 and the
connection closed: kazoo, which has no exception for -124, reports the session LOST and never
completes the request. The Java client gets SESSIONCLOSEDREQUIRESASLAUTH (-124) for the
request, sees Disconnected and reconnects to the same session (the server closes the connection,
not the session). A client with digest auth_data is served.
"""

from kazoo.client import KazooClient

from tests.interop.common import Suite, check, check_eq, java_report, wait_until

ENFORCE_DIGEST = {"enforce.auth.enabled": "true", "enforce.auth.schemes": "digest"}
# How long an unanswered request is given to be answered after all.
UNANSWERED_S = 3

suite = Suite("enforced-auth", server_options={"extra_cfg": ENFORCE_DIGEST})


def client(srv, **kw):
    zk = KazooClient(hosts=srv.hosts, timeout=10, **kw)
    states = []
    zk.add_listener(states.append)
    zk.start(timeout=10)
    return zk, states


@suite.test
def unauthenticated_request_is_refused_and_the_session_reported_lost(srv):
    zk, states = client(srv)
    try:
        check_eq(states, ["CONNECTED"], "states once started")
        result = zk.get_async("/")
        wait_until(lambda: "LOST" in states, 10, "kazoo to report the session lost")
        result.wait(UNANSWERED_S)
        check(not result.ready(), "the refused request was answered: %r", result)
        check_eq(states, ["CONNECTED", "LOST"], "states after the refusal")
    finally:
        zk.stop()
        zk.close()


@suite.test
def digest_authenticated_client_is_served(srv):
    zk, states = client(srv, auth_data=[("digest", "user:secret")])
    try:
        zk.create("/enforced", b"served")
        check_eq(zk.get("/enforced")[0], b"served", "data")
        check_eq(states, ["CONNECTED"], "states")
    finally:
        zk.stop()
        zk.close()


def java_client(srv, auth):
    """What tests/interop/java/EnforcedAuthClient.java observed against `srv`."""
    return java_report("EnforcedAuthClient", [srv.hosts, auth], 60)


@suite.test
def java_client_unauthenticated_fails_auth(srv):
    got = java_client(srv, "none")
    check_eq(got.get("request"), "KeeperException SESSIONCLOSEDREQUIRESASLAUTH", "request")
    # ZooKeeper 3.8 closes the connection, not the session: the client reconnects to it.
    check_eq(got.get("states"), "SyncConnected,Disconnected,SyncConnected", "watcher states")
    check_eq(got.get("alive"), "true", "client alive after the refusal")


@suite.test
def java_client_with_digest_is_served(srv):
    got = java_client(srv, "digest")
    check_eq(got.get("request"), "ok served", "request")
    check_eq(got.get("states"), "SyncConnected", "watcher states")
    check_eq(got.get("alive"), "true", "client alive")


if __name__ == "__main__":
    suite.main()
