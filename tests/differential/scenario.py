"""The scripted scenario run against both servers: a list of steps (connection, op, args).

Connections are named by short strings. Ops are the names in `zkwire.OPS`, plus:
  connect       args: timeout (ms), read_only (True/False/None = omit the byte),
                      session_of (reuse the session of that connection: id and password),
                      passwd ("wrong" = flip the bytes of the reused password),
                      last_zxid (int, or "ahead" = far beyond anything the server has seen),
                      displaces (a connection the server must close because of this reconnect)
  expect_closed the server must close this connection (EOF) with no frame before it
Any op may carry `_close=True`: after its reply the server must close the connection;
`_reply_timeout=seconds` to wait less than the default for the reply; `_pinned={kind: frames}`
to check the step against a fixed outcome per server kind instead of comparing the servers.
Arguments may be `LAST_ZXID`: replaced at run time by the highest zxid seen so far.

After every step the runner pings every other live connection and records the notifications
that arrived before the ping reply, so a missing, extra or late event shows up at that step.

Sessions are always ended with an explicit closeSession (never left to expire) so that no
expiry transaction lands at a timing-dependent point.
"""

from tests.support.zkwire import OPEN_ACL, PERM_ALL, PERM_READ, PERM_ADMIN, PERM_WRITE, \
    PERM_CREATE, PERSISTENT, EPHEMERAL, PERSISTENT_SEQ, EPHEMERAL_SEQ, CONTAINER, TTL, TTL_SEQ, \
    digest_id

LAST_ZXID = "$LAST_ZXID"

WT_CHILD, WT_DATA, WT_ANY = 1, 2, 3
MODE_PERSISTENT, MODE_RECURSIVE = 0, 1

U1 = digest_id("u1", "pw1")
U1_ACL = [(PERM_ALL, "digest", U1)]
HOUR_MS = 3600 * 1000


def s(conn, op, **args):
    return (conn, op, args)


def create(conn, path, data=b"", acl=OPEN_ACL, flags=PERSISTENT, op="create", **kw):
    return s(conn, op, path=path, data=data, acl=acl, flags=flags, **kw)


def create2(conn, path, data=b"", acl=OPEN_ACL, flags=PERSISTENT, **kw):
    return create(conn, path, data, acl, flags, op="create2", **kw)


def m_create(path, data=b"", flags=PERSISTENT, acl=OPEN_ACL, op="create"):
    return (op, dict(path=path, data=data, acl=acl, flags=flags))


def connect(conn, timeout=30000, read_only=False, **kw):
    return s(conn, "connect", timeout=timeout, read_only=read_only, **kw)


def close(conn):
    return s(conn, "closeSession", _close=True)


def reconnect_and_close(conn, dead):
    """A connection the server dropped leaves its session alive: resume it, then close it."""
    return [connect(conn, session_of=dead), close(conn)]


SCENARIO = []
add = SCENARIO.append
extend = SCENARIO.extend

# --- handshake: timeout clamping, readOnly byte present or absent ---------------------------
add(connect("a"))
add(s("a", "ping"))  # the first zxid seen: every other zxid is shown relative to it
add(connect("t1", timeout=1))                       # -> 4000 (2 x tickTime)
add(s("t1", "ping"))
add(close("t1"))
add(connect("t2", timeout=10 ** 9, read_only=None))  # -> 40000, 36-byte response
add(s("t2", "whoAmI"))
add(close("t2"))
add(connect("ro", read_only=True))                  # a read-write server still answers false
add(create("ro", "/ro", b"from a readOnly client"))
add(s("ro", "delete", path="/ro", version=-1))
add(close("ro"))
add(connect("z", last_zxid="ahead"))                # client ahead of the server: closed, no bytes
add(connect("b"))
add(connect("c"))

# --- the initial tree ------------------------------------------------------------------------
add(s("a", "exists", path="/", watch=False))
add(s("a", "getChildren", path="/zookeeper", watch=False))
add(s("a", "exists", path="/zookeeper", watch=False))
add(s("a", "getData", path="/zookeeper/config", watch=False))
add(s("a", "getACL", path="/zookeeper/config"))
add(s("a", "getData", path="/zookeeper/quota", watch=False))
add(s("a", "setData", path="/zookeeper/config", data=b"x", version=-1))  # READ-only ACL
add(s("a", "delete", path="/zookeeper", version=-1))
add(s("a", "delete", path="/zookeeper/quota", version=-1))
add(s("a", "delete", path="/", version=-1))
add(s("a", "getAllChildrenNumber", path="/"))

# --- create: modes, and errors in ZooKeeper's precedence ---------------------------------------
add(create("a", "/d", b"root data"))
add(create("a", "/d/x", b"", acl=[]))                        # empty ACL -> -114
add(create("a", "/d/x", b"", flags=7))                       # bad flags -> -8
add(create("a", "/d/x", b"", acl=[], flags=7))               # both: flags first -> -8
add(create("a", "noslash"))                                  # -> -8
add(create("a", "/missing/x/"))                              # trailing slash, missing parent -> -101
add(create("a", "/d/"))                                      # trailing slash, parent exists -> -8
add(create("a", "/d//x"))                                    # parent "/d/" missing -> -101
add(create("a", "/d/."))                                     # -> -8
add(create("a", "/d/x\x00y"))                                # NUL -> -8
add(create("a", "/d/\U0001F600"))                            # astral character -> -8
add(create("a", "/d/x", b"x data"))
add(create("a", "/d/x", b"again"))                           # -> -110
add(create("a", "/d/x", b"again", acl=[]))                   # ACL before existence -> -114
add(create("a", "/d/\u00fcn\u00ef", b"utf8"))
add(s("a", "exists", path="/d/\u00fcn\u00ef", watch=False))
add(create("a", "/d/nulldata", None))                        # null data stays null
add(s("a", "getData", path="/d/nulldata", watch=False))
add(create("a", "/d/e", b"eph", flags=EPHEMERAL))
add(create("a", "/d/e/child"))                               # -> -108
add(create("a", "/d/e/child", flags=EPHEMERAL))              # -> -108
add(s("a", "exists", path="/d/e", watch=False))              # ephemeralOwner = a's session
add(create2("a", "/d/c2", b"create2"))
add(create2("a", "/d/c2", b"create2"))                       # create2 NodeExists
add(create("a", "/d/acl-bad", acl=[(PERM_ALL, "digest", "nocolon")]))      # -> -114
add(create("a", "/d/acl-bad", acl=[(PERM_ALL, "ip", "not-an-ip")]))       # -> -114
add(create("a", "/d/acl-bad", acl=[(PERM_ALL, "world", "someone")]))      # -> -114
add(create("a", "/d/acl-bad", acl=[(PERM_ALL, "nosuchscheme", "x")]))     # -> -114
add(create("a", "/d/acl-bad", acl=[(PERM_ALL, "auth", "")]))              # no auth ids -> -114
add(s("a", "exists", path="/d", watch=False))

# containers and TTL nodes (extended types are on)
add(create("a", "/d/cont", b"container", flags=CONTAINER, op="createContainer"))
add(create("a", "/d/cont/kid"))          # a child, left in place so the container is never reaped
add(s("a", "exists", path="/d/cont", watch=False))
add(create("a", "/d/cont2", flags=CONTAINER))                # flags 4 through create(1): OK
add(create("a", "/d/cont3", flags=PERSISTENT, op="createContainer"))  # flags 0: OK too
add(create("a", "/d/ttl", b"ttl", flags=TTL, op="createTTL", ttl=HOUR_MS))
add(create("a", "/d/ttl-s-", b"", flags=TTL_SEQ, op="createTTL", ttl=HOUR_MS))
add(create("a", "/d/ttl0", flags=TTL, op="createTTL", ttl=0))            # -> -8
add(create("a", "/d/ttlneg", flags=TTL, op="createTTL", ttl=-5))         # -> -8
add(create("a", "/d/ttlbig", flags=TTL, op="createTTL", ttl=1 << 40))    # -> -8
add(create("a", "/d/ttlp", flags=PERSISTENT, op="createTTL", ttl=1000))  # not a TTL mode -> -8
add(create("a", "/d/ttlc", flags=TTL))                       # TTL mode via create(1) -> -8
add(create("a", "/d/ttlc", flags=TTL, op="create2"))
add(s("a", "exists", path="/d/ttl", watch=False))
add(s("a", "getData", path="/d/ttl", watch=False))

# sequential names: the counter counts every child create of the parent
add(create("a", "/d/s"))
add(create("a", "/d/s/n-", b"1", flags=PERSISTENT_SEQ))
add(create("a", "/d/s/plain"))
add(s("a", "delete", path="/d/s/plain", version=-1))
add(create("a", "/d/s/n-", b"2", flags=PERSISTENT_SEQ))
add(create("a", "/d/s/e-", b"3", flags=EPHEMERAL_SEQ))
add(create2("a", "/d/s/", b"4", flags=PERSISTENT_SEQ))           # name is just the suffix
add(create("a", "/d/s/n-", b"dup", flags=PERSISTENT_SEQ, acl=[]))  # failed: counter unchanged
add(create("a", "/d/s/n-", b"5", flags=PERSISTENT_SEQ))
add(s("a", "getChildren2", path="/d/s", watch=False))
add(s("a", "delete", path="/d/s/n-0000000000", version=-1))
add(s("a", "getChildren2", path="/d/s", watch=False))
add(s("a", "getAllChildrenNumber", path="/d"))
add(s("a", "getAllChildrenNumber", path="/d/s/e-0000000003"))
add(s("a", "getAllChildrenNumber", path="/nope"))

# --- data, versions, stat evolution -----------------------------------------------------------
add(s("a", "getData", path="/d/x", watch=False))
add(s("a", "setData", path="/d/x", data=b"v1", version=0))
add(s("a", "setData", path="/d/x", data=b"v2", version=0))       # -> -103
add(s("a", "setData", path="/d/x", data=b"v2", version=-1))
add(s("a", "setData", path="/d/x", data=b"", version=2))
add(s("a", "setData", path="/d/missing", data=b"", version=-1))  # -> -101
add(s("a", "getData", path="/d/x", watch=False))
add(s("a", "delete", path="/d/x", version=5))                    # -> -103
add(s("a", "delete", path="/d/s", version=-1))                   # -> -111
add(s("a", "delete", path="/d/missing", version=-1))             # -> -101
add(s("a", "exists", path="/d", watch=False))                     # setData on a child: no cversion
add(s("a", "getChildren", path="/d/x", watch=False))
add(s("a", "getChildren", path="/d/missing", watch=False))
add(s("a", "sync", path="/d"))
add(s("a", "sync", path="/d/missing"))

# --- one-shot watches --------------------------------------------------------------------------
add(s("b", "exists", path="/d/w", watch=True))                   # NoNode, but the watch is set
add(s("b", "getData", path="/d/w2", watch=True))                 # NoNode, no watch
add(create("a", "/d/w", b"w0"))                                  # -> b: NodeCreated /d/w
add(create("a", "/d/w2", b"w0"))                                 # -> nothing
add(s("b", "getData", path="/d/w", watch=True))
add(s("a", "setData", path="/d/w", data=b"w1", version=-1))     # -> b: NodeDataChanged
add(s("a", "setData", path="/d/w", data=b"w2", version=-1))     # one-shot: nothing
add(s("a", "getData", path="/d/w", watch=True))
add(s("a", "setData", path="/d/w", data=b"w3", version=-1))     # own event before own reply
add(s("b", "getChildren", path="/d/w", watch=True))
add(s("c", "getChildren2", path="/d/w", watch=True))
add(create("a", "/d/w/c1"))                                      # -> b, c: NodeChildrenChanged
add(s("a", "setData", path="/d/w/c1", data=b"no parent event", version=-1))
add(s("a", "getChildren2", path="/d/w", watch=False))
# one event per connection per trigger
add(s("b", "exists", path="/d/w", watch=True))
add(s("b", "getData", path="/d/w", watch=True))
add(s("b", "getChildren", path="/d/w", watch=True))
add(s("c", "getData", path="/d/w/c1", watch=True))
add(s("c", "getChildren", path="/d/w/c1", watch=True))
add(s("a", "delete", path="/d/w/c1", version=-1))                # c: 1 NodeDeleted; b: 1 NCC
add(s("a", "getChildren2", path="/d/w", watch=False))            # cversion 2, pzxid moved
add(s("b", "getData", path="/d/w", watch=True))                  # b: data+exists+child on /d/w
add(s("c", "exists", path="/d/w", watch=True))
add(s("a", "delete", path="/d/w", version=-1))                   # b: 1 NodeDeleted, c: 1
add(s("a", "exists", path="/d", watch=False))
# watches set by a failed read on a missing path; failed writes fire nothing
add(s("b", "exists", path="/d/x", watch=True))
add(s("a", "setData", path="/d/x", data=b"", version=99))       # BadVersion: no event
add(s("a", "delete", path="/d/x", version=99))
add(s("a", "delete", path="/d/x", version=-1))                   # -> b: NodeDeleted

# --- ACLs and auth -----------------------------------------------------------------------------
add(create("a", "/d/acl", b"secret", acl=U1_ACL))
add(s("a", "getData", path="/d/acl", watch=False))               # -> -102
add(s("a", "getACL", path="/d/acl"))                             # -> -102
add(s("a", "exists", path="/d/acl", watch=False))                # exists needs no permission
add(s("a", "getChildren", path="/d/acl", watch=False))           # -> -102
add(create("a", "/d/acl/kid"))                                   # -> -102 (CREATE on parent)
add(s("b", "auth", scheme="digest", auth=b"u1:pw1"))
add(s("b", "whoAmI"))
add(s("b", "getData", path="/d/acl", watch=False))
add(s("b", "getACL", path="/d/acl"))
add(create("b", "/d/acl/kid", acl=[(PERM_ALL, "auth", "")]))     # auth -> b's digest id
add(s("b", "getACL", path="/d/acl/kid"))
add(create("a", "/d/acl2", b"half", acl=[(PERM_READ, "world", "anyone"),
                                          (PERM_ALL, "digest", U1)]))
add(s("a", "getACL", path="/d/acl2"))                            # READ, no ADMIN: digest masked
add(s("a", "setACL", path="/d/acl2", acl=OPEN_ACL, version=-1))  # -> -102
add(s("a", "setData", path="/d/acl2", data=b"", version=-1))     # -> -102
add(s("b", "setACL", path="/d/acl2", acl=[(PERM_READ | PERM_ADMIN, "world", "anyone"),
                                          (PERM_ALL, "digest", U1)], version=0))
add(s("b", "setACL", path="/d/acl2", acl=OPEN_ACL, version=0))   # aversion now 1 -> -103
add(s("b", "setACL", path="/d/acl2", acl=[], version=-1))        # -> -114
add(s("b", "setACL", path="/d/missing", acl=OPEN_ACL, version=-1))  # -> -101
add(s("a", "getACL", path="/d/acl2"))                            # now ADMIN: unmasked
add(s("b", "setACL", path="/d/acl2", acl=[(PERM_READ, "world", "anyone"),
                                          (PERM_CREATE | PERM_WRITE, "world", "anyone")],
      version=1))
add(s("a", "getACL", path="/d/acl2"))
add(create("a", "/d/acl2/k"))                                    # CREATE granted
add(s("a", "delete", path="/d/acl2/k", version=-1))              # DELETE missing -> -102
add(s("a", "exists", path="/d/acl2", watch=False))
add(connect("su"))
add(s("su", "auth", scheme="digest", auth=b"super:test"))
add(s("su", "whoAmI"))
add(s("su", "getData", path="/d/acl", watch=False))
add(s("su", "delete", path="/d/acl2/k", version=-1))
add(s("su", "setData", path="/zookeeper/config", data=b"", version=-1))
add(close("su"))
add(connect("af"))
add(s("af", "auth", scheme="nosuchscheme", auth=b"x", _close=True))  # -> -115, then close
extend(reconnect_and_close("af2", "af"))

# --- multi and multiRead -----------------------------------------------------------------------
add(s("b", "getData", path="/d/c2", watch=True))
add(s("a", "multi", ops=[
    m_create("/d/m1", b"m1"),
    m_create("/d/m2", b"m2", op="create2"),
    m_create("/d/m3", b"m3", flags=EPHEMERAL_SEQ),
    ("setData", dict(path="/d/m1", data=b"m1b", version=0)),
    ("check", dict(path="/d/m1", version=1)),
    ("setData", dict(path="/d/c2", data=b"via multi", version=-1)),   # -> b: NodeDataChanged
    ("delete", dict(path="/d/m2", version=-1)),
]))
add(s("a", "getData", path="/d/m1", watch=False))
add(s("a", "getChildren2", path="/d", watch=False))
add(s("b", "exists", path="/d/m4", watch=True))
add(s("a", "multi", ops=[                                        # fails at the 3rd op
    m_create("/d/m4"),
    ("check", dict(path="/d/m1", version=1)),
    m_create("/d/m1"),
    ("setData", dict(path="/d/m1", data=b"never", version=-1)),
]))
add(s("a", "multi", ops=[                                        # fails at the 1st op
    ("delete", dict(path="/d/nope", version=-1)),
    m_create("/d/m4"),
]))
add(s("a", "multi", ops=[("check", dict(path="/d/m1", version=0))]))   # BadVersion
add(s("a", "multi", ops=[("check", dict(path="/d/nope", version=-1))]))  # NoNode
add(s("a", "multi", ops=[]))                                     # empty multi
add(s("a", "exists", path="/d/m4", watch=False))                 # nothing was created
add(s("a", "multi", ops=[
    m_create("/d/mc", op="createContainer", flags=CONTAINER),
    ("createTTL", dict(path="/d/mt", data=b"", acl=OPEN_ACL, flags=TTL, ttl=HOUR_MS)),
    m_create("/d/mc/k"),
]))
add(s("a", "multi", ops=[m_create("/d/m5", acl=[]), m_create("/d/m6")]))  # InvalidACL in multi
add(s("a", "multi", ops=[m_create("/d/m7"),                      # read op in a write multi:
                         ("getData", dict(path="/d", watch=False))]))  # -5, zxid used, no close
add(s("a", "exists", path="/d/m7", watch=False))
add(s("a", "multi", ops=[m_create("/d/m5"), m_create("/d/m5/e", flags=EPHEMERAL),
                         m_create("/d/m5/e/x")]))                # -108 inside multi
add(s("a", "multiRead", ops=[
    ("getData", dict(path="/d/m1", watch=False)),
    ("getChildren", dict(path="/d/nope", watch=False)),
    ("getChildren", dict(path="/d/s", watch=False)),
    ("getData", dict(path="/d/acl", watch=False)),               # -> -102 for a
]))
add(s("a", "multiRead", ops=[]))

# --- getEphemerals, whoAmI -------------------------------------------------------------------
add(s("a", "getEphemerals", prefix="/"))
add(s("a", "getEphemerals", prefix="/d/s"))
add(s("a", "getEphemerals", prefix=""))
add(s("a", "getEphemerals", prefix="/nothing"))
add(s("b", "getEphemerals", prefix="/"))
add(s("a", "whoAmI"))

# --- persistent and persistent-recursive watches ---------------------------------------------
add(s("c", "addWatch", path="/d/r", mode=MODE_RECURSIVE))       # before /d/r exists
add(create("a", "/d/r", b"r"))                                  # -> c: NodeCreated /d/r
add(create("a", "/d/r/a"))                                      # -> c: NodeCreated /d/r/a only
add(create("a", "/d/r/a/b", b"deep"))
add(s("a", "setData", path="/d/r/a/b", data=b"deeper", version=-1))
add(create("a", "/d/r/hidden", acl=U1_ACL))                     # c lacks READ: no event
add(s("b", "setData", path="/d/r/hidden", data=b"h", version=-1))
add(s("a", "delete", path="/d/r/a/b", version=-1))
add(s("c", "addWatch", path="/d/p", mode=MODE_PERSISTENT))      # missing: still added
add(create("a", "/d/p", b"p"))                                  # -> c: NodeCreated
add(create("a", "/d/p/k"))                                      # -> c: NodeChildrenChanged /d/p
add(create("a", "/d/p/k/g"))                                    # not recursive: nothing
add(s("a", "setData", path="/d/p", data=b"p1", version=-1))     # -> c: NodeDataChanged
add(s("a", "setData", path="/d/p", data=b"p2", version=-1))     # persists: again
# ZooKeeper 3.8 keeps one watch mode per (connection, path) (ZOOKEEPER-4466, fixed in 3.9):
# a standard watch on a path that has a persistent watch of the same connection downgrades it.
# The scenario avoids that combination; it mixes modes only on different paths.
add(s("c", "getData", path="/d/r/a", watch=True))               # standard under a recursive
add(s("a", "setData", path="/d/r/a", data=b"ra", version=-1))   # still one event for c
add(s("a", "setData", path="/d/r/a", data=b"rb", version=-1))   # recursive alone
add(s("c", "checkWatches", path="/d/p", type=WT_ANY))
add(s("c", "checkWatches", path="/d/r", type=WT_ANY))
add(s("c", "checkWatches", path="/d/r/a", type=WT_ANY))         # below a recursive: -121
add(s("c", "checkWatches", path="/d/none", type=WT_ANY))         # -> -121
add(s("c", "removeWatches", path="/d/none", type=WT_CHILD))      # -> -121
add(s("c", "removeWatches", path="/d/p", type=WT_ANY))
add(s("c", "removeWatches", path="/d/p", type=WT_ANY))           # -> -121
add(s("a", "setData", path="/d/p", data=b"p4", version=-1))     # nothing for c any more
add(s("b", "getData", path="/d/p", watch=True))
add(s("b", "getChildren", path="/d/p", watch=True))
add(s("b", "removeWatches", path="/d/p", type=WT_DATA))
add(s("b", "checkWatches", path="/d/p", type=WT_DATA))           # -> -121
add(s("b", "checkWatches", path="/d/p", type=WT_CHILD))
add(s("a", "setData", path="/d/p", data=b"p5", version=-1))     # b: no event (data removed)
add(create("a", "/d/p/k2"))                                     # b: NodeChildrenChanged
add(s("c", "addWatch", path="/d/r", mode=MODE_RECURSIVE))       # again: no change
add(s("a", "delete", path="/d/r/a", version=-1))                # -> c: NodeDeleted /d/r/a

# --- reconnect: the old connection is closed, watches are gone, setWatches restores them -----
add(create("b", "/d/sw", b"sw"))
add(create("b", "/d/sw/data", b"d"))
add(create("b", "/d/sw/eph", b"", flags=EPHEMERAL))
add(s("b", "exists", path="/d/sw/data", watch=True))
add(s("b", "getChildren", path="/d/sw", watch=True))
add(connect("b2", session_of="b", displaces="b"))               # same session, same password
add(s("b2", "getEphemerals", prefix="/"))                       # ephemerals survived
add(s("b2", "whoAmI"))                                          # auth does not carry over
add(s("a", "setData", path="/d/sw/data", data=b"d2", version=-1))  # old watches gone: nothing
add(create("a", "/d/sw/new"))
add(s("b2", "setWatches", relativeZxid=0,
      data=["/d/sw/data", "/d/sw/gone"], exist=["/d/sw/new", "/d/sw/absent"],
      child=["/d/sw", "/d/sw/gone2"]))                           # fire at once, in that order
add(s("b2", "setWatches", relativeZxid=LAST_ZXID,
      data=["/d/sw/data"], exist=["/d/sw/later"], child=["/d/sw"]))  # nothing changed: armed
add(s("a", "setData", path="/d/sw/data", data=b"d3", version=-1))  # -> b2: NodeDataChanged
add(create("a", "/d/sw/later"))                                  # -> b2: NodeCreated + NCC
add(s("b2", "setWatches2", relativeZxid=LAST_ZXID, data=[], exist=[], child=[],
      persistent=["/d/sw/data"], recursive=["/d/sw"]))
add(s("a", "setData", path="/d/sw/data", data=b"d4", version=-1))  # b2: one event
add(create("a", "/d/sw/later/x"))                                # b2: NodeCreated (recursive)
add(s("b2", "removeWatches", path="/d/sw", type=WT_ANY))
add(s("b2", "removeWatches", path="/d/sw/data", type=WT_ANY))
# A wrong password is refused (timeout 0, session 0, zero password, close). ZooKeeper also
# closes the session's current connection: it drops every connection of that session id
# before it checks the password, so anyone who knows a session id can knock its owner off.
# rzk refuses the impostor without touching the owner (docs/compat.md); each server's choice
# is pinned here, and the owner's connection is then displaced by the real reconnect below.
# The session itself lives on in both.
add(connect("bad", session_of="b2", passwd="wrong", displaces={"zookeeper": "b2", "*": None}))
add(connect("b3", session_of="b2", displaces={"zookeeper": None, "*": "b2"}))
add(s("b3", "getEphemerals", prefix="/"))

# --- unknown opcode --------------------------------------------------------------------------
add(connect("u"))
add(s("u", "raw", opcode=999, body=b"", _close=True))            # -> -6, zxid -1, close
extend(reconnect_and_close("u2", "u"))

# --- closing a session: its ephemerals go, their watchers hear NodeDeleted ----------------------
add(connect("e"))
add(create("e", "/d/eph"))
add(create("e", "/d/eph/1", b"", flags=EPHEMERAL))
add(create("e", "/d/eph/2", b"", flags=EPHEMERAL))
add(create("e", "/d/eph/q-", b"", flags=EPHEMERAL_SEQ))
add(s("a", "getData", path="/d/eph/1", watch=True))
add(s("c", "exists", path="/d/eph/2", watch=True))
add(s("b3", "getChildren", path="/d/eph", watch=True))
add(s("e", "getEphemerals", prefix="/d/eph"))
add(s("e", "exists", path="/d/eph/1", watch=False))
add(close("e"))                                                  # a, c: NodeDeleted; b3: NCC
add(s("a", "getChildren2", path="/d/eph", watch=False))          # all three gone
add(connect("e2", session_of="e"))                               # closed session: timeout 0
add(s("a", "exists", path="/d", watch=False))

# --- a final look at the tree, then close every session -------------------------------------
add(s("a", "getChildren2", path="/d", watch=False))
add(s("a", "getAllChildrenNumber", path="/"))
add(s("a", "exists", path="/", watch=False))
add(s("a", "getEphemerals", prefix="/"))
add(close("c"))
add(s("b3", "getEphemerals", prefix="/"))
add(close("b3"))
add(s("a", "exists", path="/d/sw/eph", watch=False))             # b's ephemeral is gone
add(s("a", "getEphemerals", prefix="/"))
add(close("a"))

# --- stand-alone check (opcode 13): the only step whose outcome is pinned per server ---------
# Apache ZooKeeper answers Unimplemented (-6, zxid -1) and closes since 3.8.5 / 3.9.3
# (ZOOKEEPER-2623). The installed 3.8.0 predates that: it logs a check txn (consuming a zxid),
# hits a NullPointerException while serialising the reply and never answers, leaving the
# connection open. That is a bug nobody should copy, so this step is not compared between the
# servers: each must produce the outcome pinned for its kind ("*" = any other server). It is
# last because 3.8.0's extra zxid would shift every later zxid.
add(connect("k"))
add(s("k", "check", path="/d", version=-1, _close=True, _reply_timeout=2.0, _pinned={
    "zookeeper": [{"timeout": "no reply"}],
    "*": [{"xid": 1, "zxid": -1, "err": "-6 Unimplemented"}, {"closed": "yes"}],
}))
