"""Interop suite driving the ZooKeeper C client (Debian `zookeeper-bin` / `libzookeeper-mt2` 3.8).

    /usr/bin/python3 -m tests.interop.cclient_suite [--server zookeeper|rzk] [-k NAME]

Most tests drive `cli_mt`, the C client's own shell, through a pipe: one command per line on
stdin, answers read from its merged stdout/stderr (run under `stdbuf -oL -eL`, so every line is
written whole). cli_mt is asynchronous: a command's answer is printed later by the library's
completion thread, so after each command we wait, with a bound, for the exact lines of its
answer and check them one by one. Watch notifications ("Watcher ..."), new-session notices and
the library's own log lines may come at any time; they are set aside as they arrive and checked
separately, in order. Every line is numbered as it arrives, which lets a test check that a watch
notification came before the reply of the write that fired it, as ZooKeeper sends them.

`exists`/`wexists` are synchronous in cli_mt and print nothing on success, so they are followed
by `myid` (also synchronous, it answers from the client's memory) to know they have returned.

Two tests go through a small in-process TCP proxy that records the bytes both ways: it checks
the ConnectRequest/ConnectResponse frames (the C client reads exactly 4+37 bytes of
ConnectResponse: it assumes a 16-byte password followed by the read-only byte) and it cuts
connections to make the client reconnect to its session (SetWatches, auth replay) or find it
expired. The last test runs the C client's `load_gen` for a few create/set/get/delete cycles.

Runs against Apache ZooKeeper 3.8 by default; exits non-zero if any test fails.
Use /usr/bin/python3: kazoo (used only to set up ACLs and to take over a session) is installed
for the system interpreter only.
"""

import logging
import os
import re
import shutil
import struct
import subprocess
import tempfile
import threading
import time

from tests.interop.cclient_driver import (
    ZNOAUTH, ZNOCHILDRENFOREPHEMERALS, ZNODEEXISTS, ZNONODE, ZNOTEMPTY, ZOK, ZRECONFIGDISABLED,
    Clis, check_fresh_stat, first_frame, parse_connect_request, parse_connect_response)
from tests.interop.common import Suite, Failure, check, check_eq, wait_until
from tests.support.net import Proxy

from kazoo.security import make_digest_acl

LOAD_GEN = "/usr/lib/zookeeper/bin/load_gen"
suite = Suite("cclient", overall_timeout_s=150)
logging.getLogger("kazoo").setLevel(logging.CRITICAL)


# --------------------------------------------------------------------------------------------
# Tests

@suite.test
def connect_myid_and_help(srv):
    """Runs first, on an untouched server. The 3.8 command list; connect; myid; the tree."""
    with Clis(srv) as cs:
        a = cs.new()
        sid = a.connected()
        check_eq(a.myid(), sid, "myid equals the session id of the connect notice")
        a.send("help")
        _, m = a.expect(r"    create \[\+\[e\|s\|c\|t=ttl\]\] <path>", "help (3.8 CLI)")
        while True:
            _, text = a.take("help")
            if text.startswith("    i.e. 'aget /foo'"):
                break
        rc, kids, _ = a.ls("/")
        check_eq((rc, kids), (ZOK, ["zookeeper"]), "ls / on a fresh server")
        rc, kids, st = a.ls("/zookeeper", two=True)
        check_eq((rc, sorted(kids)), (ZOK, ["config", "quota"]), "ls2 /zookeeper")
        check(st is not None and st["ephemeralOwner"] == 0, "ls2 stat %r", st)
        rc, value, st, _ = a.get("/")
        check_eq((rc, value), (ZOK, ""), "get / (rc, value)")
        check_eq((st["czxid"], st["mzxid"], st["version"], st["aversion"], st["ephemeralOwner"]),
                 (0, 0, 0, 0, 0), "root stat")
        # `config` is getConfig (opcode 22) with a watch: standalone /zookeeper/config is empty
        rc, value, st, _ = a.get("/zookeeper/config", command="config")
        check_eq((rc, value), (ZOK, ""), "config (rc, value)")
        check_eq((st["czxid"], st["version"], st["aversion"]), (0, 0, -1),
                 "/zookeeper/config (czxid, version, aversion)")
        # reconfig (opcode 16) is disabled on a standalone server (reconfigEnabled=false)
        rc, value, st, _ = a.get("-remove 3", command="reconfig -remove 3")
        check_eq((rc, value, st), (ZRECONFIGDISABLED, None, None), "reconfig on standalone")

        # a second client gets another session; its -r (read-only allowed) connect to a
        # read-write server still ends CONNECTED, not READONLY
        proxy = Proxy(srv.port)
        try:
            b = cs.new(hosts=proxy.hosts, args=["-r"], name="cli-r")
            sid_b = b.connected()
            check(sid_b != sid, "two clients got the same session id %x", sid)
            (c2s, s2c), = proxy.snapshot()
            req = parse_connect_request(first_frame(c2s, "-r ConnectRequest"))
            check_eq(req["readOnly"], 1, "readOnly byte of cli_mt -r's ConnectRequest")
            resp = parse_connect_response(first_frame(s2c, "-r ConnectResponse"))
            check_eq((resp["sessionId"], resp["readOnly"]), (sid_b, 0),
                     "ConnectResponse to a read-only-allowed client (sessionId, readOnly)")
            a.no_events("on client a")
            b.quit()
        finally:
            proxy.close()
        a.quit()


@suite.test
def crud_and_errors(srv):
    with Clis(srv) as cs:
        a = cs.new()
        a.connected()
        now = time.time()
        rc, name, _, _ = a.create("/cc")
        check_eq((rc, name), (ZOK, "/cc"), "create /cc")
        rc, value, st, _ = a.get("/cc")          # also leaves a data watch on /cc
        check_eq((rc, value), (ZOK, "new"), "get /cc (cli_mt always creates with data 'new')")
        check_fresh_stat(st, "get /cc", now)
        rc, st2, set_seq = a.set("/cc", "hello world")
        check_eq(rc, ZOK, "set /cc rc")
        check_eq((st2["version"], st2["czxid"], st2["ctime"]), (1, st["czxid"], st["ctime"]),
                 "set stat (version, czxid, ctime)")
        check(st2["mzxid"] > st["mzxid"], "mzxid must grow on set: %r -> %r", st, st2)
        ev_seq = a.event("CHANGED_EVENT", "/cc")
        check(ev_seq < set_seq, "the NodeDataChanged notification must come before the reply of "
              "the setData that fired it (ZooKeeper order); it came %d lines after",
              ev_seq - set_seq)
        rc, value, st3, _ = a.get("/cc")
        check_eq((rc, value, st3["version"], st3["mzxid"]), (ZOK, "hello world", 1, st2["mzxid"]),
                 "get after set")
        # the watch fired once and was re-armed by this get only
        rc, _, _ = a.set("/cc", "x")
        a.event("CHANGED_EVENT", "/cc")
        rc, _, _ = a.set("/cc", "y")
        check_eq(a.sync("/cc"), ZOK, "sync /cc")
        a.no_events("after a set with no watch left on /cc")

        # errors, with the C client's numeric codes
        check_eq(a.create("/cc")[0], ZNODEEXISTS, "create of an existing node")
        check_eq(a.create("/cc/no/parent")[0], ZNONODE, "create without parent")
        rc, value, st, _ = a.get("/cc/missing")
        check_eq((rc, value, st), (ZNONODE, None, None), "get of a missing node")
        rc, st, _ = a.set("/cc/missing", "d")
        check_eq((rc, st), (ZNONODE, None), "set of a missing node")
        check_eq(a.delete("/cc/missing")[0], ZNONODE, "delete of a missing node")
        rc, kids, _ = a.ls("/cc/missing")
        check_eq((rc, kids), (ZNONODE, []), "ls of a missing node")
        rc, kids, st = a.ls("/cc/missing", two=True)
        check_eq((rc, kids, st), (ZNONODE, [], None), "ls2 of a missing node")
        check_eq(a.exists("/cc/missing"), ZNONODE, "exists of a missing node")
        check_eq(a.exists("/cc"), ZOK, "exists of /cc")
        check_eq(a.sync("/cc/missing"), ZOK, "sync of a missing path succeeds")
        check_eq(a.create("/cc/kid")[0], ZOK, "create /cc/kid")
        check_eq(a.delete("/cc")[0], ZNOTEMPTY, "delete of a node with children")
        check_eq(a.delete("/cc/kid")[0], ZOK, "delete /cc/kid")
        rc, del_seq = a.delete("/cc")
        check_eq(rc, ZOK, "delete /cc")
        # the exists watch left by `exists /cc` fires on the delete
        a.event("DELETED_EVENT", "/cc")
        check_eq(a.exists("/cc"), ZNONODE, "exists after delete")
        a.no_events("after deleting /cc")
        a.no_lines("at the end")
        a.quit()


@suite.test
def ephemeral_sequential_container_ttl(srv):
    with Clis(srv) as cs:
        a = cs.new()
        sid = a.connected()
        check_eq(a.create("/es")[0], ZOK, "create /es")
        names = [a.create("/es/n-", "s")[1] for _ in range(3)]
        check_eq(names, ["/es/n-0000000000", "/es/n-0000000001", "/es/n-0000000002"],
                 "sequential names")
        rc, name, _, _ = a.create("/es/e", "e")
        check_eq((rc, name), (ZOK, "/es/e"), "ephemeral create")
        rc, value, st, _ = a.get("/es/e")
        check_eq((rc, st["ephemeralOwner"]), (ZOK, sid), "ephemeralOwner is the session id")
        check_eq(a.create("/es/e/kid")[0], ZNOCHILDRENFOREPHEMERALS, "child of an ephemeral")
        rc, name, _, _ = a.create("/es/es-", "es")
        check_eq((rc, name), (ZOK, "/es/es-0000000004"), "ephemeral sequential (counter counts "
                 "every child create of /es)")
        # create2 (opcode 15) returns the new node's stat
        rc, name, st, _ = a.create("/es/c2-", "s", create2=True)
        check_eq((rc, name), (ZOK, "/es/c2-0000000005"), "create2 sequential")
        check_fresh_stat(st, "create2 stat")
        rc, name, st, _ = a.create("/es/c2e", "e", create2=True)
        check_eq((rc, name, st["ephemeralOwner"]), (ZOK, "/es/c2e", sid), "create2 ephemeral")
        rc, name, st, _ = a.create("/es/c2e", create2=True)
        check_eq((rc, name, st), (ZNODEEXISTS, None, None), "create2 of an existing node")
        # container (opcode 19) and TTL (opcode 21) nodes: their stat shows ephemeralOwner 0
        rc, name, _, _ = a.create("/es/ctr", "c")
        check_eq((rc, name), (ZOK, "/es/ctr"), "container create")
        rc, name, _, _ = a.create("/es/ttl", "t=60000")
        check_eq((rc, name), (ZOK, "/es/ttl"), "TTL create")
        rc, name, st, _ = a.create("/es/ttls-", "st=60000", create2=True)
        check_eq((rc, name), (ZOK, "/es/ttls-0000000009"), "sequential TTL create2")
        check_fresh_stat(st, "sequential TTL create2 stat")
        for p in ("/es/ctr", "/es/ttl"):
            rc, value, st, _ = a.get(p)
            check_eq((rc, value, st["ephemeralOwner"]), (ZOK, "new", 0), "get %s" % p)
        rc, kids, st = a.ls("/es", two=True)
        check_eq(sorted(kids), sorted(["n-0000000000", "n-0000000001", "n-0000000002", "e",
                                       "es-0000000004", "c2-0000000005", "c2e", "ctr", "ttl",
                                       "ttls-0000000009"]), "children of /es")
        # quitting closes the session (closeSession, opcode -11): its ephemerals go at once
        b = cs.new(name="cli-b")
        b.connected()
        check_eq(b.exists("/es/e"), ZOK, "b sees a's ephemeral")
        a.quit()
        b.event("DELETED_EVENT", "/es/e")
        rc, kids, _ = b.ls("/es")
        check_eq(sorted(kids), sorted(["n-0000000000", "n-0000000001", "n-0000000002",
                                       "c2-0000000005", "ctr", "ttl", "ttls-0000000009"]),
                 "children of /es after a's session closed")
        for k in kids:
            check_eq(b.delete("/es/" + k)[0], ZOK, "delete /es/%s" % k)
        check_eq(b.delete("/es")[0], ZOK, "delete /es")
        b.quit()


@suite.test
def watches_between_two_c_clients(srv):
    with Clis(srv) as cs:
        a, b = cs.new(name="cli-a"), cs.new(name="cli-b")
        a.connected()
        b.connected()
        check_eq(b.create("/w")[0], ZOK, "create /w")
        check_eq(b.create("/w/d")[0], ZOK, "create /w/d")
        check_eq(a.get("/w/d")[0], ZOK, "a: get /w/d (data watch)")
        check_eq(a.ls("/w")[0], ZOK, "a: ls /w (child watch)")
        check_eq(a.exists("/w/new"), ZNONODE, "a: exists /w/new (watch on a missing node)")
        check_eq(a.exists("/w/x", verb="wexists"), ZNONODE, "a: wexists /w/x")

        check_eq(b.set("/w/d", "v2")[0], ZOK, "b: set /w/d")
        a.event("CHANGED_EVENT", "/w/d")
        check_eq(b.create("/w/new")[0], ZOK, "b: create /w/new")
        a.event("CREATED_EVENT", "/w/new")
        a.event("CHILD_EVENT", "/w")
        check_eq(b.create("/w/x", "e")[0], ZOK, "b: create /w/x")
        a.event("CREATED_EVENT", "/w/x")
        # every one-shot watch fired; more changes must not notify a
        check_eq(b.set("/w/d", "v3")[0], ZOK, "b: set /w/d again")
        check_eq(b.create("/w/more")[0], ZOK, "b: create /w/more")
        a.no_events("after the one-shot watches fired")
        check_eq(b.pending_events(), [], "b has no watches, so no notifications")

        # re-arm on a: get + ls, then b deletes the node: NodeDeleted and NodeChildrenChanged
        check_eq(a.get("/w/d")[1], "v3", "a: get /w/d")
        check_eq(a.ls("/w")[0], ZOK, "a: ls /w")
        check_eq(a.ls("/w/d")[0], ZOK, "a: ls /w/d (child watch on a leaf)")
        check_eq(b.delete("/w/d")[0], ZOK, "b: delete /w/d")
        a.event("DELETED_EVENT", "/w/d")   # data and child watch of /w/d: one notification
        a.event("CHILD_EVENT", "/w")
        a.no_events("after the delete")
        b.quit()    # its ephemeral /w/x goes
        check_eq(a.exists("/w/x"), ZNONODE, "ephemeral of b gone after b quit")
        for k in ("new", "more"):
            check_eq(a.delete("/w/" + k)[0], ZOK, "delete /w/%s" % k)
        check_eq(a.delete("/w")[0], ZOK, "delete /w")
        a.quit()


@suite.test
def digest_auth_and_acls(srv):
    with Clis(srv) as cs:
        k = cs.kazoo(auth_data=[("digest", "alice:secret")])
        k.create("/acl", b"")
        k.create("/acl/p", b"private", acl=[make_digest_acl("alice", "secret", all=True)])
        a = cs.new()
        a.connected()
        rc, value, st, _ = a.get("/acl/p")
        check_eq((rc, value, st), (ZNOAUTH, None, None), "get without auth")
        check_eq(a.set("/acl/p", "x")[0], ZNOAUTH, "set without auth")
        check_eq(a.ls("/acl/p")[0], ZNOAUTH, "ls without auth")
        check_eq(a.create("/acl/p/kid")[0], ZNOAUTH, "create under it without auth")
        check_eq(a.exists("/acl/p"), ZOK, "exists needs no permission")
        a.send("addauth digest alice:wrong")        # setAuth (opcode 100); no answer printed
        check_eq(a.get("/acl/p")[0], ZNOAUTH, "get with a wrong digest")
        a.send("addauth digest alice:secret")
        rc, value, st, _ = a.get("/acl/p")
        check_eq((rc, value), (ZOK, "private"), "get after addauth")
        check_eq(a.set("/acl/p", "mine")[0], ZOK, "set after addauth")
        a.event("CHANGED_EVENT", "/acl/p")      # the watch left by the successful get
        check_eq(a.create("/acl/p/kid")[0], ZOK, "create under it after addauth")
        check_eq(k.get("/acl/p")[0], b"mine", "kazoo sees the C client's write")
        a.no_events("during the auth test", quiet=0)
        a.no_lines("during the auth test", quiet=0)
        a.quit()

        # an unknown scheme: the server answers AuthFailed and closes the connection; the C
        # client reports AUTH_FAILED_STATE (cli_mt then shuts down)
        b = cs.new(name="cli-badauth")
        b.connected()
        b.send("addauth nosuchscheme whatever")
        b.session_state("AUTH_FAILED_STATE")
        b.expect("Authentication failure. Shutting down...", "auth failure notice")
        b.kill()     # see Cli.kill: cli.c cannot be ended cleanly after this
        k.delete("/acl", recursive=True)


@suite.test
def chroot_connect_string(srv):
    with Clis(srv) as cs:
        k = cs.kazoo()
        k.create("/chroot/app", b"", makepath=True)
        a = cs.new(hosts=srv.hosts + "/chroot/app")
        a.connected()
        check_eq(a.ls("/")[:2], (ZOK, []), "ls / under the chroot")
        check_eq(a.create("/s-", "s")[:2], (ZOK, "/s-0000000000"), "sequential under chroot")
        check_eq(a.ls("/")[:2], (ZOK, ["s-0000000000"]), "ls / (child watch) under chroot")
        check_eq(a.create("/t")[:2], (ZOK, "/t"), "create under chroot")
        a.event("CHILD_EVENT", "/")
        check_eq(sorted(k.get_children("/chroot/app")), ["s-0000000000", "t"], "real paths")
        a.quit()
        k.delete("/chroot", recursive=True)


@suite.test
def pipelined_64k_writes_od(srv):
    """cli.c's `od`: 200 setData of 65535 bytes, each followed by a getData with a watch, all
    pipelined on one connection (400 outstanding requests, ~26 MB)."""
    with Clis(srv) as cs:
        a = cs.new()
        a.connected()
        check_eq(a.create("/od")[0], ZOK, "create /od")
        a.send("od")
        a.expect("Overdosing...", "od")
        a.expect(r"od command response: rc = 0 Stat:", "od first set")
        st = a.stat("od first set")
        check_eq(st["version"], 1, "version after the first set")
        for i in range(200):
            a.expect(r"Data completion /od rc = 0", "od get #%d" % (i + 1), timeout=30)
        a.expect(r"Recvd 200 responses for 200 requests sent", "od summary")
        # each get re-arms the watch that the next set fires: 199 notifications
        n = len([e for e in a.pending_events() if e == ("CHANGED_EVENT", "CONNECTED_STATE", "/od")])
        check_eq(n, 199, "NodeDataChanged notifications for /od")
        check_eq(len(a.pending_events()), 199, "no other notifications")
        with a.cond:
            a.events.clear()
        rc, value, st, _ = a.get("/od")
        check_eq((rc, len(value.encode("latin-1")), st["version"]),
                 (ZOK, 65535, 201), "/od after od (rc, length, version)")
        check_eq(a.delete("/od")[0], ZOK, "delete /od")
        a.event("DELETED_EVENT", "/od")
        a.quit()


@suite.test
def reconnect_resumes_session(srv):
    """Through a proxy that cuts the connection and refuses new ones for a while: the C client
    reconnects with its session id and password, keeps its ephemeral, re-sends its auth and its
    watches (SetWatches, opcode 101), and is told about changes it missed."""
    proxy = Proxy(srv.port)
    try:
        with Clis(srv) as cs:
            k = cs.kazoo(auth_data=[("digest", "bob:pw")])
            k.create("/rc", b"")
            k.create("/rc/w", b"w0")
            k.create("/rc/p", b"bobs", acl=[make_digest_acl("bob", "pw", all=True)])
            a = cs.new(hosts=proxy.hosts)
            sid = a.connected()
            check_eq(a.create("/rc/e", "e")[0], ZOK, "create ephemeral /rc/e")
            check_eq(a.get("/rc/w")[1], "w0", "get /rc/w (data watch)")
            check_eq(a.ls("/rc")[0], ZOK, "ls /rc (child watch)")
            check_eq(a.exists("/rc/new"), ZNONODE, "exists /rc/new (exist watch)")
            a.send("addauth digest bob:pw")
            check_eq(a.get("/rc/p")[1], "bobs", "get /rc/p with bob's auth")

            conns = proxy.snapshot()
            check_eq(len(conns), 1, "connections through the proxy")
            req = parse_connect_request(first_frame(conns[0][0], "first ConnectRequest"))
            check_eq((req["protocolVersion"], req["lastZxidSeen"], req["timeOut"],
                      req["sessionId"], req["passwd"], req["readOnly"]),
                     (0, 0, 30000, 0, bytes(16), 0), "first ConnectRequest of the C client")
            resp = parse_connect_response(first_frame(conns[0][1], "first ConnectResponse"))
            check_eq((resp["protocolVersion"], resp["timeOut"], resp["sessionId"],
                      resp["readOnly"]), (0, 30000, sid, 0),
                     "first ConnectResponse (protocolVersion, timeOut, sessionId, readOnly)")
            check(resp["passwd"] != bytes(16), "session password is all zero")

            proxy.cut_and_block()
            a.session_state("CONNECTING_STATE")
            # changes made while the C client is away
            k.set("/rc/w", b"w1")
            k.create("/rc/new", b"")
            time.sleep(1.0)        # let it retry against the blocked proxy
            proxy.unblock()
            a.session_state("CONNECTED_STATE", timeout=20)
            check_eq(a.sessions, [sid], "session ids announced (same session, no new one)")
            # the missed changes arrive as notifications of the re-sent watches
            a.event("CHANGED_EVENT", "/rc/w")
            a.event("CREATED_EVENT", "/rc/new")
            a.event("CHILD_EVENT", "/rc")
            check_eq(a.myid(), sid, "myid after reconnect")
            rc, value, st, _ = a.get("/rc/e")
            check_eq((rc, st["ephemeralOwner"]), (ZOK, sid), "ephemeral kept across reconnect")
            check_eq(a.get("/rc/p")[1], "bobs", "auth replayed on reconnect")
            a.no_events("after the catch-up notifications")

            conns = proxy.snapshot()
            check(len(conns) >= 2, "no reconnection seen by the proxy")
            last_req, last_resp = conns[-1]
            req2 = parse_connect_request(first_frame(last_req, "reconnect ConnectRequest"))
            check_eq((req2["sessionId"], req2["passwd"], req2["timeOut"]),
                     (sid, resp["passwd"], 30000), "reconnect ConnectRequest (sid, passwd, timeout)")
            check(req2["lastZxidSeen"] > 0, "reconnect lastZxidSeen is 0")
            resp2 = parse_connect_response(first_frame(last_resp, "reconnect ConnectResponse"))
            check_eq((resp2["protocolVersion"], resp2["timeOut"], resp2["sessionId"],
                      resp2["passwd"], resp2["readOnly"]),
                     (0, 30000, sid, resp["passwd"], 0), "reconnect ConnectResponse")
            a.quit()
            wait_until(lambda: k.exists("/rc/e") is None, 2.0, "ephemeral gone after quit")
            k.delete("/rc", recursive=True)
    finally:
        proxy.close()


@suite.test
def session_takeover_then_expired(srv):
    """cli_mt -m FILE writes its session id and password; kazoo attaches to that session with
    them and closes it while the C client is cut off; when the C client comes back, the server's
    ConnectResponse (session id 0) tells it the session has expired."""
    proxy = Proxy(srv.port)
    tmp = tempfile.mkdtemp(prefix="cclient-")
    try:
        with Clis(srv) as cs:
            idfile = os.path.join(tmp, "clientid")
            a = cs.new(hosts=proxy.hosts, args=["-m", idfile])
            sid = a.connected()
            check_eq(a.create("/takeover", "e")[0], ZOK, "create ephemeral /takeover")
            raw = wait_until(lambda: os.path.exists(idfile) and open(idfile, "rb").read(), 5,
                             "client id file")
            check_eq(len(raw), 24, "clientid_t size")
            fsid, passwd = struct.unpack("<q16s", raw)
            check_eq(fsid, sid, "session id in the client id file")

            proxy.cut_and_block()
            a.session_state("CONNECTING_STATE")
            k = cs.kazoo(client_id=(sid, passwd))
            check_eq(k.client_id[0], sid, "kazoo attached to the C client's session")
            check_eq(k.exists("/takeover").ephemeralOwner, sid, "ephemeral owner")
            k.stop()                 # closeSession: the C client's session is gone
            k.close()
            probe = cs.kazoo()
            check(probe.exists("/takeover") is None, "ephemeral survived closeSession")
            proxy.unblock()
            a.session_state("EXPIRED_SESSION_STATE", timeout=20)
            a.expect("Session expired. Shutting down...", "expiry notice")
            conns = proxy.snapshot()
            resp = parse_connect_response(first_frame(conns[-1][1], "ConnectResponse for an "
                                                      "expired session"))
            check_eq((resp["timeOut"], resp["sessionId"]), (0, 0),
                     "ConnectResponse for an expired session (timeOut, sessionId)")
            a.kill()     # see Cli.kill: cli.c cannot be ended cleanly after this
    finally:
        proxy.close()
        shutil.rmtree(tmp, ignore_errors=True)


@suite.test
def load_gen_cycles(srv):
    """The C client's load_gen: creates 500 children, sets, reads back and deletes them, in a
    loop of pipelined async calls; we let it run 3 full cycles, then its `clean` mode deletes
    the subtree with synchronous getChildren/delete."""
    lines = []
    cond = threading.Condition()
    p = subprocess.Popen([LOAD_GEN, srv.hosts, "/lg", "500"], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, start_new_session=True)

    def read():
        for raw in iter(p.stdout.readline, b""):
            with cond:
                lines.append(raw.decode("utf-8", "replace").rstrip("\n"))
                cond.notify_all()
    t = threading.Thread(target=read, daemon=True)
    t.start()
    try:
        def cycles():
            return sum(1 for l in lines if "Starting the delete cycle for path /lg" in l)
        deadline = time.monotonic() + 30
        with cond:
            while cycles() < 4 and p.poll() is None and time.monotonic() < deadline:
                cond.wait(0.2)
            done, status = cycles(), p.poll()
            errors = [l for l in lines if "ZOO_ERROR" in l or "Invalid read" in l]
            text = "\n    | ".join([""] + lines[-15:])
        check(status is None, "load_gen exited with status %s:%s", status, text)
        check(done >= 4, "load_gen finished %d cycles in 30s:%s", done, text)
        check(not errors, "load_gen errors: %r", errors[:5])
        check(any("negotiated timeout=10000" in l for l in lines),
              "load_gen did not log a negotiated timeout of 10000 ms:%s" % text)
    finally:
        if p.poll() is None:
            p.kill()
        p.wait()
        t.join(5)
    try:
        r = subprocess.run([LOAD_GEN, srv.hosts, "/lg", "clean"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=20)
    except subprocess.TimeoutExpired:
        raise Failure("load_gen clean did not finish in 20s")
    out = r.stdout.decode("utf-8", "replace")
    check_eq(r.returncode, 0, "load_gen clean exit status (output: %s)" % out[-1500:])
    check(re.search(r"Successfully deleted a subtree starting at /lg \(\d+ nodes\)", out),
          "load_gen clean did not report success: %s", out[-1500:])
    with Clis(srv) as cs:
        check(cs.kazoo().exists("/lg") is None, "/lg still exists after load_gen clean")


if __name__ == "__main__":
    suite.main()
