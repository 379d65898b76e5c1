"""SASL DIGEST-MD5 with the ZooKeeper 3.8 Java client, Curator 5.4, kazoo 2.8 (pure-sasl) and
the rzk CLI, against a server that requires it: a JAAS `Server` section of DIGEST-MD5 users,
`authProvider.1=...SASLAuthenticationProvider` and `sessionRequireClientSASLAuth=true` in
zoo.cfg. ZooKeeper reads the JAAS file through java.security.auth.login.config; rzk server
finds the same property in SERVER_JVMFLAGS, as zkEnv.sh passes it. Written against ZooKeeper
3.8 first.

    /usr/bin/python3 -m tests.interop.sasl_suite --server rzk

Each client logs in as bob and is served as sasl:bob (a creator-only node's ACL names it);
one without SASL is answered -124 and closed; a wrong password ends the Java client in
AuthFailed, kazoo unanswered (it cannot map -124), and the rzk CLI with exit status 2 within
a second.
"""

import os
import subprocess
import tempfile
import time

from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss, NoAuthError
from kazoo.security import make_acl

from tests.interop.common import Suite, check, check_eq, java_report
from tests.support import servers

PROVIDER = "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"
REQUIRE_SASL = {"authProvider.1": PROVIDER, "sessionRequireClientSASLAuth": "true"}
SERVER_JAAS = """Server {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    user_bob="bob-secret"
    user_eve="eve-secret";
};
"""
# How long an unanswered request is given to be answered after all.
UNANSWERED_S = 2
# How soon a refused rzk command must exit: one exchange, not a round of retries.
REFUSAL_MAX_S = 1.0

suite = Suite("sasl", server_options={"extra_cfg": REQUIRE_SASL, "jaas": SERVER_JAAS})


def client_jaas(user, password):
    """A JAAS file with a DIGEST-MD5 `Client` section, as the Java clients and rzk read it."""
    fd, path = tempfile.mkstemp(prefix="jaas-", suffix=".conf")
    with os.fdopen(fd, "w") as f:
        f.write('Client {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n'
                '  username="%s"\n  password="%s";\n};\n' % (user, password))
    return path


def java(srv, mode, jaas, node):
    return java_report("SaslClient", [srv.hosts, mode, jaas, node], 60)


@suite.test
def java_client_logs_in_and_is_served_as_its_user(srv):
    got = java(srv, "zookeeper", client_jaas("bob", "bob-secret"), "/sasl-java")
    check_eq(got.get("request"), "ok sasl", "request")
    check_eq(got.get("acl"), "sasl:bob:31", "the creator-only ACL")
    check("sasl:bob" in got.get("whoami", ""), "whoami: %r", got.get("whoami"))
    check_eq(got.get("states"), "SyncConnected,SaslAuthenticated", "watcher states")


@suite.test
def java_client_with_a_wrong_password_ends_in_auth_failed(srv):
    got = java(srv, "zookeeper", client_jaas("bob", "wrong"), "/sasl-java-wrong")
    check(got.get("request", "").startswith("KeeperException"), "request: %r", got.get("request"))
    check("AuthFailed" in got.get("states", ""), "states: %r", got.get("states"))


@suite.test
def java_client_without_sasl_is_refused(srv):
    got = java(srv, "zookeeper", "none", "/sasl-java-none")
    check_eq(got.get("request"), "KeeperException SESSIONCLOSEDREQUIRESASLAUTH", "request")


@suite.test
def curator_logs_in_and_is_served_as_its_user(srv):
    got = java(srv, "curator", client_jaas("bob", "bob-secret"), "/sasl-curator")
    check_eq(got.get("request"), "ok sasl", "request")
    check_eq(got.get("acl"), "sasl:bob:31", "the creator-only ACL")


def kazoo(srv, user, password):
    options = {"mechanism": "DIGEST-MD5", "username": user, "password": password}
    zk = KazooClient(hosts=srv.hosts, timeout=10, sasl_options=options)
    states = []
    zk.add_listener(states.append)
    return zk, states


@suite.test
def kazoo_logs_in_and_keeps_another_user_out(srv):
    bob, _ = kazoo(srv, "bob", "bob-secret")
    eve, _ = kazoo(srv, "eve", "eve-secret")
    bob.start(timeout=10)
    eve.start(timeout=10)
    try:
        bob.create("/sasl-kazoo", b"bob's", acl=[make_acl("sasl", "bob", all=True)])
        check_eq(bob.get("/sasl-kazoo")[0], b"bob's", "bob reads his node")
        try:
            eve.get("/sasl-kazoo")
            raise AssertionError("eve read bob's node")
        except NoAuthError:
            pass
    finally:
        for zk in (bob, eve):
            zk.stop()
            zk.close()


@suite.test
def kazoo_with_a_wrong_password_is_never_served(srv):
    # kazoo 2.8 reports CONNECTED before its SASL exchange, and has no exception for the -124
    # that refuses it (kazoo#810): its connection loop dies, the session is reported LOST, and
    # the request fails with ConnectionLoss.
    zk, states = kazoo(srv, "bob", "wrong")
    try:
        zk.start(timeout=10)
        result = zk.get_async("/")
        result.wait(UNANSWERED_S)
        outcome = result.exception if result.ready() else "unanswered"
        print("    request: %r, states: %r" % (outcome, states))
        check(result.ready() and isinstance(result.exception, ConnectionLoss),
              "the request's outcome: %r", outcome)
        check_eq(states, ["CONNECTED", "LOST"], "states")
    finally:
        zk.stop()
        zk.close()


def rzk(srv, jaas, *args):
    cmd = [servers.rzk_binary(), "--connect", srv.hosts, "--jaas", jaas] + list(args)
    t0 = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=30)
    return p, time.monotonic() - t0


@suite.test
def rzk_cli_logs_in_from_the_same_jaas_file(srv):
    jaas = client_jaas("bob", "bob-secret")
    p, _ = rzk(srv, jaas, "create", "--acl", "sasl:bob:cdrwa", "/sasl-cli", "cli")
    check_eq(p.returncode, 0, "create's exit status (stderr %r)" % p.stderr)
    p, _ = rzk(srv, jaas, "get", "/sasl-cli")
    check_eq(p.stdout.strip(), "cli", "get")
    p, _ = rzk(srv, jaas, "acl", "get", "/sasl-cli")
    check_eq(p.stdout.splitlines()[0], "sasl:bob:cdrwa", "acl get")
    p, _ = rzk(srv, client_jaas("eve", "eve-secret"), "get", "/sasl-cli")
    check_eq(p.returncode, 2, "eve's get exit status")
    check("not authorized" in p.stderr, "eve's error: %r", p.stderr)


@suite.test
def rzk_cli_with_a_wrong_password_exits_2_at_once(srv):
    p, took = rzk(srv, client_jaas("bob", "wrong"), "ls", "/")
    check_eq(p.returncode, 2, "exit status (stderr %r)" % p.stderr)
    check("SASL DIGEST-MD5 authentication failed" in p.stderr, "stderr: %r", p.stderr)
    check(took < REFUSAL_MAX_S, "refused after %.2fs", took)


if __name__ == "__main__":
    suite.main()
