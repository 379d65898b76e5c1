"""TLS on the secure client port, with kazoo 2.8 (`use_ssl`) and the ZooKeeper 3.8 Java client
(`zookeeper.client.secure=true` with Netty). Both servers get the same zoo.cfg keys:
`secureClientPort`, ZooKeeper's `NettyServerCnxnFactory`, PEM key and trust stores,
`ssl.clientAuth=need` and the x509 provider (rzk reads them through `--config`). Written against
ZooKeeper 3.8 first.

    /usr/bin/python3 -m tests.interop.tls_suite --server rzk

Certificates are made at start with `openssl` (tests/support/certs.py) and removed at exit.
"""

import atexit
import os
import socket
import time

from kazoo.client import KazooClient
from kazoo.handlers.threading import KazooTimeoutError

from tests.interop.common import Suite, check, check_eq, java_report, wait_until
from tests.support import certs
from tests.support.net import free_port

CERTS = certs.Certs()
atexit.register(CERTS.remove)
SECURE_PORT = free_port()
# Short enough for the stalled-handshake test to see it, as ZooKeeper's Netty applies it too.
HANDSHAKE_TIMEOUT_MS = 2000
TLS_CFG = dict(certs.secure_port_cfg(CERTS, SECURE_PORT),
               **{"ssl.handshakeDetectionTimeoutMillis": HANDSHAKE_TIMEOUT_MS})
SECURE_HOSTS = "127.0.0.1:%d" % SECURE_PORT
# How long a refused client keeps trying before the test concludes it was refused.
REFUSED_S = 6

suite = Suite("tls", server_options={"extra_cfg": TLS_CFG})


def kazoo(identity="client", timeout=10):
    """A kazoo client on the secure port presenting `identity`'s certificate (or none)."""
    files = {}
    if identity is not None:
        files = {"certfile": CERTS.path(identity + ".crt"), "keyfile": CERTS.path(identity + ".key")}
    return KazooClient(hosts=SECURE_HOSTS, timeout=timeout, use_ssl=True, verify_certs=True,
                       ca=CERTS.path("ca.crt"), **files)


# Far shorter than the time between kazoo's pings with a 40 s session: an answer that comes
# only with the next ping came late.
ANSWER_S = 5


@suite.test
def kazoo_crud_and_watches_over_tls(srv):
    zk = kazoo(timeout=40)
    zk.start(timeout=15)
    try:
        zk.create("/tls-kazoo", b"one")
        events = []
        data, stat = zk.get("/tls-kazoo", watch=events.append)
        check_eq((data, stat.version), (b"one", 0), "read")
        zk.create("/tls-kazoo/kid", b"x" * 200000)
        check_eq(zk.get("/tls-kazoo/kid")[0], b"x" * 200000, "a reply of many TLS records")
        # The notification and the reply leave together: kazoo waits on the socket between
        # frames, so each must end a TLS record for kazoo to see the second one.
        zk.set_async("/tls-kazoo", b"two", version=0).get(timeout=ANSWER_S)
        wait_until(lambda: events, 10, "the data watch")
        check_eq(events[0].type, "CHANGED", "event")
        zk.delete("/tls-kazoo", recursive=True)
        check(zk.exists("/tls-kazoo") is None, "deleted")
    finally:
        zk.stop()
        zk.close()


def refused(client):
    try:
        client.start(timeout=REFUSED_S)
    except KazooTimeoutError:
        return True
    finally:
        client.stop()
        client.close()
    return False


@suite.test
def kazoo_with_an_untrusted_certificate_is_refused(srv):
    check(refused(kazoo("rogue-client")), "a certificate of another CA was accepted")


@suite.test
def kazoo_without_a_certificate_is_refused(srv):
    check(refused(kazoo(None)), "a client without a certificate was accepted under need")


def java_client(keystore, node):
    """What tests/interop/java/TlsClient.java observed on the secure port."""
    return java_report("TlsClient", [SECURE_HOSTS, CERTS.path("ca.crt"), keystore, node], 90)


@suite.test
def java_client_crud_watches_and_x509_identity(srv):
    got = java_client(CERTS.path("client.pem"), "/tls-java")
    want = {
        "connected": "yes", "read": "one", "watch": "NodeDataChanged", "reread": "two",
        "deleted": "true", "whoami x509": certs.CLIENT_DN,
        "creator acl": "x509:" + certs.CLIENT_DN,
    }
    check_eq(got, want, "what the Java client observed")


@suite.test
def java_client_with_an_untrusted_certificate_is_refused(srv):
    got = java_client(CERTS.path("rogue-client.pem"), "/tls-java-rogue")
    check_eq(got, {"connected": "no"}, "what the Java client observed")


def closed_by_server(sock, within_s):
    """Whether the server closes `sock` within `within_s` seconds (reading what it sends)."""
    sock.settimeout(0.5)
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            if not sock.recv(4096):
                return True
        except socket.timeout:
            continue
        except OSError:
            return True
    return False


@suite.test
def garbage_and_stalled_handshakes_are_closed_and_the_plain_port_serves(srv):
    plain = KazooClient(hosts=srv.hosts, timeout=10)
    plain.start(timeout=15)
    try:
        garbage = socket.create_connection(("127.0.0.1", SECURE_PORT))
        garbage.sendall(b"\x16\x03\x01\xff\xff" + os.urandom(64) + b"GET / HTTP/1.0\r\n\r\n")
        stalled = [socket.create_connection(("127.0.0.1", SECURE_PORT)) for _ in range(20)]
        # Half a ClientHello, then silence: slowloris.
        for s in stalled[:10]:
            s.sendall(b"\x16\x03\x01\x00\x80\x01")
        plain.create("/tls-plain", b"served", ephemeral=True)
        check_eq(plain.get("/tls-plain")[0], b"served", "the plain port while handshakes stall")
        bound_s = HANDSHAKE_TIMEOUT_MS / 1000 + 10
        check(closed_by_server(garbage, bound_s), "garbage handshake left open")
        for i, s in enumerate(stalled):
            check(closed_by_server(s, bound_s), "stalled handshake %d left open" % i)
        for s in stalled + [garbage]:
            s.close()
        zk = kazoo()
        zk.start(timeout=15)
        zk.stop()
        zk.close()
    finally:
        plain.stop()
        plain.close()


if __name__ == "__main__":
    suite.main()
