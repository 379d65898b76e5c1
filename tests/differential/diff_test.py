"""Differential test: one scripted scenario against two ZooKeeper-protocol servers.

    /usr/bin/python3 -m tests.differential.diff_test                      # zookeeper vs rzk
    /usr/bin/python3 -m tests.differential.diff_test --server-b zookeeper  # self-check

Each server is started fresh on loopback (tests/support/servers.py), the scenario in
scenario.py is played against it through the raw client tests/support/zkwire.py, and every
frame received is decoded and normalised into a transcript. The two transcripts must be
identical; otherwise a side-by-side diff of the first differing steps is printed and the exit
status is 1. Nothing is skipped.

Normalisation (what is masked and what is still checked):
* Session ids -> S1, S2, ... in order of first appearance (ConnectResponse, ephemeralOwner);
  0 stays 0. Passwords are not compared as bytes: a 16-byte password is "pw16" (or "zero16"
  when all zero), and a resumed session must get back the password it first had.
* zxids -> "Z+n": the offset from the first zxid seen (the reply to the scenario's first
  ping). Offsets, not ranks, so a server that does not consume a zxid for a failed write, a
  session create/close or a failed multi shows a different number. 0 and -1 stay literal.
* Notification (xid -1) zxid -> "any": ZooKeeper 3.8 sends -1, 3.9 sends the triggering
  txn's zxid (ZOOKEEPER-4655), and rzk is free to do either. It is still checked to be -1 or
  a positive zxid no higher than the highest zxid seen by the end of the step.
* ctime/mtime -> "T" (or 0 where the server has 0, e.g. for /zookeeper). Checked: inside the
  test's wall-clock window, ctime <= mtime, ctime == mtime when czxid == mzxid, and every
  txn keeps the same time across all reads (czxid -> ctime, mzxid -> mtime).
* Children and getEphemerals lists are sorted (servers may list them in any order), and so is
  whoAmI's list (ZooKeeper keeps a connection's auth ids in a hash set).
* create2 inside multi: 3.8 answers a plain create result (type 1, path), 3.9 a create2
  result with a Stat (ZOOKEEPER-4026); the project follows 3.9. Both forms are accepted and
  folded into one; a Stat, when sent, must be exactly that of the node just created (zxids =
  the multi's zxid, versions 0, dataLength, ephemeralOwner). --strict-create2-in-multi turns
  this off.
* One step is pinned rather than compared (see scenario.py): stand-alone `check`, which the
  installed ZooKeeper 3.8.0 never answers (fixed upstream in 3.8.5 / 3.9.3).
Everything else (xids, error codes, Stat counters, paths, data, ACLs, frame order, which
frames arrive on which connection at which step, connection closes) is compared exactly.
"""

import argparse
import json
import os
import sys
import tempfile
import time

from tests.differential import scenario as scenario_mod
from tests.differential.transcript_diff import compare, render
from tests.support import servers, zkwire
from tests.support.zkwire import Closed, Timeout, err_name

IO_TIMEOUT = 5.0       # every socket wait
CLOSE_TIMEOUT = 5.0    # how long to wait for a server-side close
LAST_ZXID_AHEAD = 1 << 40


# ---------------------------------------------------------------------------------------------
# Normalisation


class Normaliser:
    def __init__(self):
        self.sessions = {}        # raw id -> "S<n>"
        self.passwords = {}       # raw id -> bytes
        self.zxid_base = None
        self.max_zxid = 0
        self.txn_time = {}        # zxid -> time (ms) of that txn, from ctime/mtime
        self.t_start = int(time.time() * 1000) - 2000

    # -- primitives

    def session(self, sid):
        if sid == 0:
            return 0
        if sid not in self.sessions:
            self.sessions[sid] = "S%d" % (len(self.sessions) + 1)
        return self.sessions[sid]

    def zxid(self, z):
        if z in (0, -1):
            return z
        if self.zxid_base is None:
            self.zxid_base = z
        return "Z%+d" % (z - self.zxid_base)

    def see_zxid(self, z):
        if z > self.max_zxid:
            self.max_zxid = z

    def time(self, t, zxid, now_ms, problems):
        if t == 0:
            return 0
        if not (self.t_start <= t <= now_ms + 2000):
            problems.append("time %d outside the run's window [%d, %d]"
                            % (t, self.t_start, now_ms + 2000))
        if zxid > 0:
            seen = self.txn_time.setdefault(zxid, t)
            if seen != t:
                problems.append("txn %s had time %d before, now %d"
                                % (self.zxid(zxid), seen, t))
        return "T"

    def stat(self, st, now_ms):
        problems = []
        out = dict(st)
        for f in ("czxid", "mzxid", "pzxid"):
            out[f] = self.zxid(st[f])
        out["ctime"] = self.time(st["ctime"], st["czxid"], now_ms, problems)
        out["mtime"] = self.time(st["mtime"], st["mzxid"], now_ms, problems)
        if st["ctime"] > st["mtime"]:
            problems.append("ctime > mtime")
        if st["czxid"] == st["mzxid"] and st["ctime"] != st["mtime"]:
            problems.append("czxid == mzxid but ctime != mtime")
        out["ephemeralOwner"] = self.session(st["ephemeralOwner"])
        if problems:
            out["PROBLEMS"] = problems
        return out

    # -- frames

    def walk(self, v, now_ms):
        """Normalises a decoded body: Stats, sorted name lists; recursive for multi."""
        if isinstance(v, list):
            return [self.walk(x, now_ms) for x in v]
        if not isinstance(v, dict):
            return v
        out = {}
        for k, x in v.items():
            if k == "stat" and isinstance(x, dict):
                out[k] = self.stat(x, now_ms)
            elif k in ("children", "ephemerals") and isinstance(x, list):
                out[k] = sorted(x)
            elif k == "clientInfo" and isinstance(x, list):
                # ZooKeeper keeps a connection's auth ids in a hash set: the order is arbitrary
                out[k] = sorted(x, key=lambda c: json.dumps(c, sort_keys=True))
            elif k == "err" and isinstance(x, int):
                out[k] = err_name(x)
            else:
                out[k] = self.walk(x, now_ms)
        return out

    def frame(self, f, step_max_zxid, now_ms):
        if "closed" in f or "timeout" in f or "error" in f:
            return f
        out = {"xid": f["xid"]}
        if f["xid"] == zxid_notification():
            z = f["zxid"]
            ok = z == -1 or (0 < z <= step_max_zxid)
            out["zxid"] = "any" if ok else "BAD notification zxid %d" % z
        else:
            out["zxid"] = self.zxid(f["zxid"])
        out["err"] = err_name(f["err"])
        for k in ("event", "body", "trailing", "decodeError"):
            if k in f:
                out[k] = self.walk(f[k], now_ms)
        return out

    def connect_response(self, r):
        out = dict(r)
        out.pop("len", None)
        sid = r.get("sessionId")
        if sid is not None:
            out["sessionId"] = self.session(sid)
        pw = r.get("passwd")
        if pw is not None:
            if len(pw) != 16:
                out["passwd"] = "len%d" % len(pw)
            elif pw == b"\0" * 16:
                out["passwd"] = "zero16"
            else:
                out["passwd"] = "pw16"
                known = self.passwords.setdefault(sid, pw)
                if known != pw:
                    out["passwd"] = "pw16 CHANGED for a resumed session"
        return out


def zxid_notification():
    return zkwire.XID_NOTIFICATION


# ---------------------------------------------------------------------------------------------
# Running a scenario


class ConnState:
    def __init__(self, conn, name):
        self.conn, self.name = conn, name
        self.xid = 0
        self.session_id = 0
        self.passwd = b"\0" * 16
        self.live = True

    def next_xid(self):
        self.xid += 1
        return self.xid


class Runner:
    def __init__(self, server, steps, strict_create2_in_multi=False):
        self.server, self.steps = server, steps
        self.strict_create2_in_multi = strict_create2_in_multi
        self.conns = {}          # name -> ConnState (live or not)
        self.norm = Normaliser()
        self.max_zxid = 0        # raw, for LAST_ZXID

    # -- helpers

    def resolve(self, v):
        if v == scenario_mod.LAST_ZXID:
            return self.max_zxid
        if isinstance(v, dict):
            return {k: self.resolve(x) for k, x in v.items()}
        if isinstance(v, list):
            return [self.resolve(x) for x in v]
        if isinstance(v, tuple):
            return tuple(self.resolve(x) for x in v)
        return v

    def kill(self, st):
        st.live = False
        st.conn.close()

    def read_until(self, st, xid, op, frames, timeout=None):
        """Reads frames until the one with `xid`; appends decoded frames. False if the
        connection ended first (recorded in `frames`)."""
        while True:
            try:
                raw = st.conn.recv_frame(timeout)
            except Closed:
                frames.append({"closed": "before the reply"})
                self.kill(st)
                return False
            except Timeout:
                frames.append({"timeout": "no reply"})
                self.kill(st)
                return False
            f = zkwire.decode_frame(raw, op)
            frames.append(f)
            if f.get("zxid", 0) > 0 and f.get("xid") != zkwire.XID_NOTIFICATION:
                self.max_zxid = max(self.max_zxid, f["zxid"])
            if f.get("xid") == xid:
                return True

    def expect_close(self, st, frames):
        """After a reply the server must close the connection: records what happened."""
        extra, closed = st.conn.wait_closed(CLOSE_TIMEOUT)
        for raw in extra:
            frames.append(zkwire.decode_frame(raw, "raw"))
        frames.append({"closed": "yes" if closed
                       else "NO: still open after %.0fs" % CLOSE_TIMEOUT})
        self.kill(st)

    # -- step kinds

    def do_connect(self, name, args, rec):
        session_id, passwd = 0, b"\0" * 16
        if "session_of" in args:
            prev = self.conns[args["session_of"]]
            session_id, passwd = prev.session_id, prev.passwd
            if args.get("passwd") == "wrong":
                passwd = bytes(b ^ 0xFF for b in passwd)
        last = args.get("last_zxid", 0)
        if last == "ahead":
            last = LAST_ZXID_AHEAD
        frames = rec["frames"]
        try:
            conn, raw = zkwire.connect(self.host, self.port, args["timeout"], session_id,
                                       passwd, last, args["read_only"], IO_TIMEOUT)
        except Closed:
            frames.append({"closed": "without a ConnectResponse"})
            return
        except Timeout:
            frames.append({"timeout": "no ConnectResponse"})
            return
        st = ConnState(conn, name)
        self.conns[name] = st
        resp = zkwire.decode_connect_response(raw)
        st.session_id = resp.get("sessionId", 0)
        st.passwd = resp.get("passwd") or b""
        frames.append({"connectResponse": self.norm.connect_response(resp)})
        if resp.get("timeOut", 0) <= 0:
            self.expect_close(st, frames)
        if "displaces" in args:
            # A dict pins a behaviour that differs by design: {server kind or "*": conn or None}.
            target = args["displaces"]
            if isinstance(target, dict):
                target = target.get(self.server.kind, target.get("*"))
                rec["displaced_pinned"] = True
            if target is not None:
                old = self.conns[target]
                out = []
                self.expect_close(old, out)
                rec["displaced"] = {target: out}

    def do_expect_closed(self, name, rec):
        self.expect_close(self.conns[name], rec["frames"])

    def do_op(self, name, op, rec_args, rec):
        st = self.conns.get(name)
        if st is None or not st.live:
            rec["frames"].append({"error": "connection %s is not open" % name})
            return
        args = {k: v for k, v in rec_args.items() if not k.startswith("_")}
        close_after = rec_args.get("_close", False)
        xid = zkwire.FIXED_XID.get(op) or st.next_xid()
        try:
            st.conn.send(op, xid, self.resolve(args))
        except Closed:
            rec["frames"].append({"closed": "on send"})
            self.kill(st)
            return
        if self.read_until(st, xid, op, rec["frames"], rec_args.get("_reply_timeout")) \
                and close_after:
            self.expect_close(st, rec["frames"])

    def drain(self, st):
        """Pings a live connection; returns the frames before the ping reply (notifications)."""
        frames = []
        try:
            st.conn.send("ping", zkwire.XID_PING)
        except Closed:
            self.kill(st)
            return [{"closed": "on ping send"}]
        while True:
            try:
                raw = st.conn.recv_frame()
            except Closed:
                self.kill(st)
                frames.append({"closed": "before the ping reply"})
                return frames
            except Timeout:
                self.kill(st)
                frames.append({"timeout": "no reply to a ping"})
                return frames
            f = zkwire.decode_frame(raw, "ping")
            if f.get("xid") == zkwire.XID_PING and f.get("err") == 0 \
                    and "trailing" not in f and "decodeError" not in f:
                return frames
            frames.append(f)

    # -- the whole run

    def run(self):
        self.host, self.port = "127.0.0.1", self.server.port
        transcript = []
        for i, (name, op, args) in enumerate(self.steps):
            rec = {"step": i, "conn": name, "op": op, "args": describe_args(args),
                   "frames": []}
            try:
                if op == "connect":
                    self.do_connect(name, args, rec)
                elif op == "expect_closed":
                    self.do_expect_closed(name, rec)
                else:
                    self.do_op(name, op, args, rec)
                drains = {}
                for other in sorted(self.conns):
                    st = self.conns[other]
                    if st.live:
                        got = self.drain(st)
                        if got:
                            drains[other] = got
                if drains:
                    rec["notifications"] = drains
                if op == "multi" and not self.strict_create2_in_multi:
                    self.fold_create2_results(name, args, rec)
            except Exception as e:  # a bug in this harness or an undecodable reply
                rec["frames"].append({"error": "%s: %s" % (type(e).__name__, e)})
            self.normalise(rec)
            if "_pinned" in args:
                pinned = args["_pinned"]
                rec["expected"] = pinned.get(self.server.kind, pinned.get("*"))
                rec["pinned_ok"] = rec["frames"] == rec["expected"]
            transcript.append(rec)
        for st in self.conns.values():
            st.conn.close()
        return transcript

    def fold_create2_results(self, name, args, rec):
        """create2 inside multi: ZooKeeper 3.8 answers a plain create result (type 1, path);
        3.9 answers create2 (type 15, path, Stat; ZOOKEEPER-4026). Both are folded into one
        form so that either passes; a Stat, when present, must describe the node the multi
        just created (checked here, on raw values), else the problems are recorded."""
        create2_at = {i: a for i, (o, a) in enumerate(args["ops"]) if o == "create2"}
        st = self.conns.get(name)
        for f in rec["frames"]:
            results = (f.get("body") or {}).get("results") if f.get("xid", -1) > 0 else None
            if not results or len(results) != len(args["ops"]):
                continue
            for i, req in create2_at.items():
                r = results[i]
                if r.get("err") != 0 or r.get("type") not in (1, 15):
                    continue
                folded = {"type": "create (3.8) or create2 (3.9)", "err": 0, "path": r["path"]}
                if r["type"] == 15:
                    problems = create2_stat_problems(r.get("stat"), f["zxid"], req,
                                                     st.session_id if st else None)
                    if problems:
                        folded["create2StatProblems"] = problems
                results[i] = folded

    def normalise(self, rec):
        now_ms = int(time.time() * 1000)
        step_max = self.max_zxid
        n = self.norm

        def frames(fs):
            out = []
            for f in fs:
                if "connectResponse" in f:
                    out.append({"connectResponse": f["connectResponse"]})
                else:
                    out.append(n.frame(f, step_max, now_ms))
            return out

        rec["frames"] = frames(rec["frames"])
        if "displaced" in rec:
            rec["displaced"] = {k: frames(v) for k, v in rec["displaced"].items()}
        if "notifications" in rec:
            rec["notifications"] = {k: frames(v) for k, v in rec["notifications"].items()}


def create2_stat_problems(stat, zxid, req, session_id):
    if stat is None:
        return ["type 15 without a Stat"]
    data = req.get("data") or b""
    ephemeral = req.get("flags", 0) in (1, 3)
    want = {"czxid": zxid, "mzxid": zxid, "pzxid": zxid, "version": 0, "cversion": 0,
            "aversion": 0, "numChildren": 0, "dataLength": len(data),
            "ephemeralOwner": session_id if ephemeral else 0, "mtime": stat["ctime"]}
    return ["%s=%s, expected %s" % (k, stat[k], v) for k, v in want.items() if stat[k] != v]


def describe_args(args):
    args = {k: v for k, v in args.items() if k != "_pinned"}

    def conv(v):
        if isinstance(v, bytes):
            return zkwire.data_repr(v)
        if isinstance(v, (list, tuple)):
            return [conv(x) for x in v]
        if isinstance(v, dict):
            return {k: conv(x) for k, x in v.items()}
        return v
    return json.dumps(conv(args), ensure_ascii=True, sort_keys=True)


def run_against(kind, strict_create2_in_multi):
    t0 = time.monotonic()
    srv = servers.start(kind)
    t1 = time.monotonic()
    try:
        transcript = Runner(srv, scenario_mod.SCENARIO, strict_create2_in_multi).run()
    finally:
        srv.stop()
    t2 = time.monotonic()
    return transcript, t1 - t0, t2 - t1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--server-a", default="zookeeper")
    ap.add_argument("--server-b", default="rzk")
    ap.add_argument("--dump", help="directory to write both normalised transcripts to "
                                   "(default: a temporary directory, only on mismatch)")
    ap.add_argument("--strict-create2-in-multi", action="store_true",
                    help="require ZooKeeper 3.8's plain create result for create2 inside multi "
                         "(by default the 3.9 create2 result with a checked Stat also passes)")
    ap.add_argument("--show", type=int, default=5, help="differing steps to print")
    ap.add_argument("--width", type=int, default=80, help="column width of the diff")
    opts = ap.parse_args()

    for kind in (opts.server_a, opts.server_b):
        if kind == "rzk":
            try:
                servers.rzk_binary()
            except FileNotFoundError as e:  # a failure, not a skip
                print("FAIL: %s" % e)
                return 1

    t0 = time.monotonic()
    ta, start_a, run_a = run_against(opts.server_a, opts.strict_create2_in_multi)
    print("%s: started in %.1fs, %d steps in %.2fs" % (opts.server_a, start_a, len(ta), run_a))
    tb, start_b, run_b = run_against(opts.server_b, opts.strict_create2_in_multi)
    print("%s: started in %.1fs, %d steps in %.2fs" % (opts.server_b, start_b, len(tb), run_b))
    name_a, name_b = "A=" + opts.server_a, "B=" + opts.server_b
    rc = compare(ta, tb, name_a, name_b, opts.show, opts.width)
    if opts.dump or rc:
        d = opts.dump or tempfile.mkdtemp(prefix="zk-diff-")
        os.makedirs(d, exist_ok=True)
        for label, t in (("a-" + opts.server_a, ta), ("b-" + opts.server_b, tb)):
            with open(os.path.join(d, label + ".json"), "w") as f:
                json.dump(t, f, indent=1, ensure_ascii=True)
            with open(os.path.join(d, label + ".txt"), "w") as f:
                for rec in t:
                    f.write("#%d %s %s %s\n" % (rec["step"], rec["conn"], rec["op"], rec["args"]))
                    f.write("\n".join(render(rec)) + "\n")
        print("\ntranscripts written to %s" % d)
    print("\n%s in %.1fs" % ("PASS: transcripts identical" if rc == 0 else "FAIL",
                             time.monotonic() - t0))
    return rc


if __name__ == "__main__":
    sys.exit(main())
