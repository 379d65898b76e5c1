"""The kazoo suite's tests of watches, transactions (multi), ACLs, four-letter words and chroot.

kazoo_suite runs them, in the order of TESTS, after its own tests of nodes, sessions and
recipes; run them with `/usr/bin/python3 -m tests.interop.kazoo_suite [-k NAME]`.
"""

import queue

from tests.interop.common import check, check_eq, expect_raises
from tests.interop.kazoo_clients import Clients, expect_quiet, get_q

from kazoo.client import KazooClient
from kazoo.exceptions import (
    BadVersionError, InvalidACLError, NoAuthError, NodeExistsError, NotEmptyError,
    RolledBackError, RuntimeInconsistency,
)
from kazoo.protocol.states import ZnodeStat
from kazoo.security import (
    ACL, Id, OPEN_ACL_UNSAFE, READ_ACL_UNSAFE, make_acl, make_digest_acl,
    make_digest_acl_credential,
)


# --------------------------------------------------------------------------------------------
# Watches

def data_watch(srv):
    with Clients(srv) as cs:
        a, b = cs.new(), cs.new()
        seen = queue.Queue()

        def on_change(data, stat, event):
            seen.put((data, stat.version if stat else None, event.type if event else None))

        a.DataWatch("/dw", on_change)
        check_eq(get_q(seen, "initial call"), (None, None, None), "initial (missing node)")
        steps = [
            (lambda: b.create("/dw", b"1"), (b"1", 0, "CREATED")),
            (lambda: b.set("/dw", b"2"), (b"2", 1, "CHANGED")),
            (lambda: b.set("/dw", b"3"), (b"3", 2, "CHANGED")),
            (lambda: b.delete("/dw"), (None, None, "DELETED")),
            (lambda: b.create("/dw", b"again"), (b"again", 0, "CREATED")),
        ]
        for action, want in steps:
            action()
            check_eq(get_q(seen, "DataWatch to see %r" % (want,)), want, "DataWatch call")
        b.create("/other", b"")       # unrelated changes are not reported
        b.set("/other", b"x")
        expect_quiet(seen, "DataWatch call for unrelated node")
        b.delete("/dw")
        check_eq(get_q(seen, "final delete"), (None, None, "DELETED"), "DataWatch call")
        b.delete("/other")


def one_shot_watches(srv):
    """Raw get/exists/getChildren watches: right event type and path, and fire exactly once."""
    with Clients(srv) as cs:
        a, b = cs.new(), cs.new()
        q = queue.Queue()
        cb = lambda ev: q.put((ev.type, ev.path))

        check(a.exists("/ow", watch=cb) is None, "exists on missing")
        b.create("/ow", b"0")
        check_eq(get_q(q, "exists watch"), ("CREATED", "/ow"), "exists watch event")

        a.get("/ow", watch=cb)
        b.set("/ow", b"1")
        check_eq(get_q(q, "data watch"), ("CHANGED", "/ow"), "data watch event")
        check_eq(a.get("/ow")[0], b"1", "data after event")
        b.set("/ow", b"2")
        expect_quiet(q, "second event from a one-shot watch")

        a.get_children("/ow", watch=cb)
        b.set("/ow", b"3")                 # data change does not fire a child watch
        b.create("/ow/k", b"")
        check_eq(get_q(q, "child watch"), ("CHILD", "/ow"), "child watch event")
        b.set("/ow/k", b"x")              # grandchild data does not matter to the parent
        expect_quiet(q, "second child event")

        # exists watch on an existing node fires on data change; delete fires child + data watches
        a.exists("/ow/k", watch=cb)
        b.set("/ow/k", b"y")
        check_eq(get_q(q, "exists watch on existing node"), ("CHANGED", "/ow/k"), "event")
        a.get("/ow/k", watch=cb)
        a.get_children("/ow", watch=cb)
        b.delete("/ow/k")
        got = sorted([get_q(q, "delete events"), get_q(q, "delete events")])
        check_eq(got, [("CHILD", "/ow"), ("DELETED", "/ow/k")], "events for child delete")
        expect_quiet(q, "extra events")
        b.delete("/ow")


def children_watch(srv):
    with Clients(srv) as cs:
        a, b, c = cs.new(), cs.new(), cs.new()
        b.create("/cw")
        seen = queue.Queue()
        a.ChildrenWatch("/cw", lambda kids: seen.put(sorted(kids)))
        check_eq(get_q(seen, "initial call"), [], "initial children")
        b.create("/cw/c1")
        check_eq(get_q(seen, "c1 added"), ["c1"], "children")
        b.create("/cw/c2")
        check_eq(get_q(seen, "c2 added"), ["c1", "c2"], "children")
        b.delete("/cw/c1")
        check_eq(get_q(seen, "c1 removed"), ["c2"], "children")
        b.set("/cw", b"data")
        b.set("/cw/c2", b"data")
        expect_quiet(seen, "children call on data change")
        c.create("/cw/e3", ephemeral=True)
        check_eq(get_q(seen, "ephemeral added"), ["c2", "e3"], "children")
        c.stop()
        check_eq(get_q(seen, "ephemeral removed by session close"), ["c2"], "children")
        b.delete("/cw", recursive=True)


# --------------------------------------------------------------------------------------------
# Transactions (multi)

def transactions(srv):
    with Clients(srv) as cs:
        zk = cs.new()
        zk.create("/tx", b"")
        t = zk.transaction()
        t.create("/tx/a", b"A")
        t.create("/tx/a/b", b"B")
        t.set_data("/tx", b"top")
        t.check("/tx/a", 0)
        t.create("/tx/seq-", b"", sequence=True)
        t.create("/tx/e", b"", ephemeral=True)
        t.delete("/tx/a/b")
        res = t.commit()
        check_eq(len(res), 7, "number of results")
        check_eq(res[0:2], ["/tx/a", "/tx/a/b"], "create results")
        check(isinstance(res[2], ZnodeStat) and res[2].version == 1, "setData result %r", res[2])
        check_eq(res[3], True, "check result")
        check_eq(res[4], "/tx/seq-0000000001", "sequential create in multi")
        check_eq(res[5], "/tx/e", "ephemeral create in multi")
        check_eq(res[6], True, "delete result")
        check_eq(zk.get("/tx/a")[0], b"A", "/tx/a data")
        check(zk.exists("/tx/a/b") is None, "/tx/a/b created and deleted in the same multi")
        top, tst = zk.get("/tx")
        check_eq(top, b"top", "/tx data")
        ast, est = zk.exists("/tx/a"), zk.exists("/tx/e")
        check_eq(est.ephemeralOwner, zk.client_id[0], "ephemeral owner of multi create")
        check(ast.czxid == est.czxid == tst.mzxid == res[2].mzxid,
              "all ops of one multi share one zxid: %r %r %r" % (ast, est, tst))

        # failing multi: nothing applied; per-op results tell which op failed
        t = zk.transaction()
        t.create("/tx/x", b"")
        t.check("/tx/a", 7)
        t.set_data("/tx/nope", b"")
        t.delete("/tx/a")
        res = t.commit()
        kinds = [type(r) for r in res]
        check_eq(kinds, [RolledBackError, BadVersionError, RuntimeInconsistency,
                         RuntimeInconsistency], "per-op results of failed multi")
        check(zk.exists("/tx/x") is None, "rolled-back create must not exist")
        check(zk.exists("/tx/a") is not None, "op after failure must not run")
        check_eq(zk.exists("/tx").mzxid, tst.mzxid, "failed multi must not touch /tx")

        t = zk.transaction()
        t.create("/tx/a", b"")
        t.create("/tx/y", b"")
        check_eq([type(r) for r in t.commit()], [NodeExistsError, RuntimeInconsistency],
                 "multi failing on first op")
        check(zk.exists("/tx/y") is None, "/tx/y must not exist")

        t = zk.transaction()       # a delete that depends on an earlier op of the same multi
        t.delete("/tx/a")
        t.delete("/tx")
        check_eq([type(r) for r in t.commit()], [RolledBackError, NotEmptyError],
                 "multi with NotEmpty on second op")
        zk.delete("/tx", recursive=True)


# --------------------------------------------------------------------------------------------
# ACLs and authentication

def acl_digest_auth(srv):
    with Clients(srv) as cs:
        owner = cs.new(auth_data=[("digest", "alice:secret")])
        anon = cs.new()
        owner.create("/acl", b"")
        alice_all = make_digest_acl("alice", "secret", all=True)
        owner.create("/acl/private", b"s3cret", acl=[alice_all])
        check_eq(owner.get("/acl/private")[0], b"s3cret", "owner can read")
        acls, ast = owner.get_acls("/acl/private")
        check_eq(list(acls), [ACL(31, Id("digest", make_digest_acl_credential("alice", "secret")))],
                 "stored ACL")
        check_eq(ast.aversion, 0, "aversion")

        expect_raises(NoAuthError, anon.get, "/acl/private")
        expect_raises(NoAuthError, anon.set, "/acl/private", b"x")
        expect_raises(NoAuthError, anon.get_children, "/acl/private")
        expect_raises(NoAuthError, anon.create, "/acl/private/kid", b"")
        expect_raises(NoAuthError, anon.get_acls, "/acl/private")   # READ or ADMIN needed (3.8)
        check(anon.exists("/acl/private") is not None, "exists needs no permission")

        wrong = cs.new(auth_data=[("digest", "alice:wrong")])
        expect_raises(NoAuthError, wrong.get, "/acl/private")
        anon.add_auth("digest", "alice:secret")
        check_eq(anon.get("/acl/private")[0], b"s3cret", "readable after add_auth")
        root = cs.new(auth_data=[("digest", "super:test")])
        check_eq(root.get("/acl/private")[0], b"s3cret", "super user reads anything")

        # world read-only; setAcl with versions
        other = cs.new()
        owner.create("/acl/ro", b"r", acl=READ_ACL_UNSAFE)
        check_eq(other.get("/acl/ro")[0], b"r", "world-readable")
        expect_raises(NoAuthError, other.set, "/acl/ro", b"w")
        expect_raises(NoAuthError, owner.set_acls, "/acl/ro", OPEN_ACL_UNSAFE)  # no ADMIN
        root_st = root.set_acls("/acl/ro", OPEN_ACL_UNSAFE, version=0)
        check_eq(root_st.aversion, 1, "aversion after setAcl")
        expect_raises(BadVersionError, root.set_acls, "/acl/ro", OPEN_ACL_UNSAFE, version=0)
        other.set("/acl/ro", b"w")

        # the "auth" scheme stands for the creator's authenticated identities
        owner.create("/acl/authscheme", b"", acl=[make_acl("auth", "", all=True)])
        acls, _ = owner.get_acls("/acl/authscheme")
        check_eq([(a.id.scheme, a.id.id) for a in acls],
                 [("digest", make_digest_acl_credential("alice", "secret"))],
                 "auth scheme expanded to creator's digest identity")
        expect_raises(NoAuthError, other.get, "/acl/authscheme")
        expect_raises(InvalidACLError, other.create, "/acl/bad", b"",
                      acl=[make_acl("auth", "", all=True)])

        # ip scheme
        owner.create("/acl/ip-ok", b"", acl=[make_acl("ip", "127.0.0.1", read=True)])
        owner.create("/acl/ip-net", b"", acl=[make_acl("ip", "127.0.0.0/8", read=True)])
        owner.create("/acl/ip-no", b"", acl=[make_acl("ip", "10.1.2.3", read=True)])
        check_eq(other.get("/acl/ip-ok")[0], b"", "ip ACL matching loopback")
        check_eq(other.get("/acl/ip-net")[0], b"", "ip ACL with /8 mask")
        expect_raises(NoAuthError, other.get, "/acl/ip-no")

        # deleting needs DELETE on the parent, not on the node itself
        other.delete("/acl/private")
        check(owner.exists("/acl/private") is None, "deleted by a user without rights on it")
        root.delete("/acl", recursive=True)


# --------------------------------------------------------------------------------------------
# Misc

def four_letter_words_via_kazoo(srv):
    with Clients(srv) as cs:
        zk = cs.new()
        check_eq(zk.command(b"ruok"), "imok", "ruok")
        check("Mode: standalone" in zk.command(b"srvr"), "srvr mentions standalone mode")


def chroot_client(srv):
    with Clients(srv) as cs:
        cs.new().create("/chroot/app", b"", makepath=True)
        c = KazooClient(hosts=srv.hosts + "/chroot/app", timeout=10.0)
        c.start(timeout=15)
        cs.all.append(c)
        q = queue.Queue()
        c.get_children("/", watch=lambda ev: q.put((ev.type, ev.path)))
        check_eq(c.create("/s-", b"", sequence=True), "/s-0000000000", "chrooted seq path")
        check_eq(get_q(q, "chrooted child watch"), ("CHILD", "/"), "chrooted watch path")
        t = c.transaction()
        t.create("/t", b"")
        check_eq(t.commit(), ["/t"], "chrooted multi result")
        check_eq(sorted(cs.all[0].get_children("/chroot/app")), ["s-0000000000", "t"],
                 "nodes live under chroot")
        cs.all[0].delete("/chroot", recursive=True)


TESTS = [data_watch, one_shot_watches, children_watch, transactions, acl_digest_auth,
         four_letter_words_via_kazoo, chroot_client]
