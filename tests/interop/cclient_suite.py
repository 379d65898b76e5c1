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

from tests.interop.common import Suite, Failure, check, check_eq, wait_until
from tests.support.net import Proxy

from kazoo.client import KazooClient
from kazoo.security import make_digest_acl

CLI_MT = "/usr/lib/zookeeper/bin/cli_mt"
LOAD_GEN = "/usr/lib/zookeeper/bin/load_gen"
suite = Suite("cclient", overall_timeout_s=150)
logging.getLogger("kazoo").setLevel(logging.CRITICAL)
WAIT = 10.0          # bound for anything that should happen "soon"
QUIET = 0.4          # how long we listen to be sure that something did NOT happen

# C client return codes (zookeeper.h)
ZOK, ZNONODE, ZNOAUTH, ZBADVERSION = 0, -101, -102, -103
ZNOCHILDRENFOREPHEMERALS, ZNODEEXISTS, ZNOTEMPTY = -108, -110, -111
ZRECONFIGDISABLED = -123

EVENT_RE = re.compile(r"^Watcher (\S+) state = (\S+)(?: for path (.*))?$")
NEW_SESSION_RE = re.compile(r"^Got a new session id: 0x([0-9a-f]+)$")
LIBLOG_RE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}:\d+\(0x[0-9a-f]+\):ZOO_")
# perror() after a successful fwrite in cli.c's -m handling (a cli.c quirk, harmless)
NOISE_RE = re.compile(r"^writing client id: ")


def hexint(s, bits=64):
    v = int(s, 16)
    return v - (1 << bits) if v >= 1 << (bits - 1) else v


class Cli:
    """One cli_mt process. Lines of command answers go to `lines`; watch notifications to
    `events` as (seq, type, state, path); 'Got a new session id' to `sessions`."""

    def __init__(self, hosts, args=(), name="cli"):
        self.name = name
        self.proc = subprocess.Popen(
            ["stdbuf", "-oL", "-eL", CLI_MT] + list(args) + [hosts],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            start_new_session=True)
        self.cond = threading.Condition()
        self.seq = 0
        self.lines = []        # (seq, text) of answer lines not yet consumed
        self.events = []       # (seq, type, state, path), consumed ones removed
        self.sessions = []     # session ids (int) from 'Got a new session id'
        self.liblog = []       # the C library's own log lines
        self.transcript = []   # everything, for failure messages
        self.eof = False
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for raw in iter(self.proc.stdout.readline, b""):
            text = raw.decode("latin-1").rstrip("\n")   # values may hold any byte
            with self.cond:
                self.seq += 1
                self.transcript.append(text)
                m = EVENT_RE.match(text)
                n = NEW_SESSION_RE.match(text)
                if m:
                    self.events.append((self.seq, m.group(1), m.group(2), m.group(3)))
                elif n:
                    self.sessions.append(int(n.group(1), 16))
                elif LIBLOG_RE.match(text):
                    self.liblog.append(text)
                elif not NOISE_RE.match(text):
                    self.lines.append((self.seq, text))
                self.cond.notify_all()
        with self.cond:
            self.eof = True
            self.cond.notify_all()

    def tail(self, n=25):
        with self.cond:
            t = self.transcript[-n:]
        return "\n    | ".join([""] + t)

    def fail(self, msg):
        raise Failure("%s: %s; last output of %s:%s" % (self.name, msg, self.name, self.tail()))

    def send(self, line):
        try:
            self.proc.stdin.write((line + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            self.fail("cannot send %r: cli_mt has exited (status %s)" % (line, self.proc.poll()))

    def _wait(self, pred, what, timeout):
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                v = pred()
                if v is not None:
                    return v
                left = deadline - time.monotonic()
                if left <= 0 or (self.eof and pred() is None):
                    break
                self.cond.wait(min(left, 0.2))
        self.fail("timed out after %.1fs waiting for %s" % (timeout, what) if not self.eof
                  else "output ended while waiting for %s" % what)

    def take(self, what, timeout=WAIT):
        """Next answer line as (seq, text)."""
        return self._wait(lambda: self.lines.pop(0) if self.lines else None, what, timeout)

    def expect(self, pattern, what, timeout=WAIT):
        """Next answer line must match `pattern` in full; returns (seq, match)."""
        seq, text = self.take(what, timeout)
        m = re.fullmatch(pattern, text)
        if not m:
            self.fail("%s: got line %r, want /%s/" % (what, text, pattern))
        return seq, m

    def event(self, etype, path, state="CONNECTED_STATE", timeout=WAIT):
        """Waits for (and consumes) the first pending notification of this type and path."""
        def find():
            for i, (seq, t, s, p) in enumerate(self.events):
                if t == etype and p == path and s == state:
                    del self.events[i]
                    return seq
            return None
        return self._wait(find, "notification %s %s for %s" % (etype, state, path), timeout)

    def session_state(self, state, timeout=WAIT):
        return self.event("SESSION_EVENT", None, state, timeout)

    def pending_events(self):
        with self.cond:
            return [(t, s, p) for _, t, s, p in self.events]

    def no_events(self, what, quiet=QUIET):
        time.sleep(quiet)
        ev = self.pending_events()
        if ev:
            self.fail("unexpected notifications %s: %r" % (what, ev))

    def no_lines(self, what, quiet=QUIET):
        time.sleep(quiet)
        with self.cond:
            extra = [t for _, t in self.lines]
        if extra:
            self.fail("unexpected output %s: %r" % (what, extra))

    def connected(self):
        """Waits for the first connect; returns the session id."""
        self.session_state("CONNECTED_STATE")
        sid = self._wait(lambda: self.sessions[0] if self.sessions else None,
                         "'Got a new session id'", WAIT)
        check(sid != 0, "session id is 0")
        return sid

    # ---- command answers, parsed exactly as cli.c prints them -----------------------------

    def stat(self, what):
        """dumpStat(): six lines, or 'null'. Returns a dict, or None."""
        _, text = self.take(what + " stat")
        if text == "null":
            return None
        pats = [r"\tctime = (.+)", r"\tczxid=([0-9a-f]+)", r"\tmtime=(.+)", r"\tmzxid=([0-9a-f]+)",
                r"\tversion=([0-9a-f]+)\taversion=([0-9a-f]+)", r"\tephemeralOwner = ([0-9a-f]+)"]
        m = re.fullmatch(pats[0], text)
        if not m:
            self.fail("%s: got %r, want a stat block or null" % (what, text))
        groups = [m.group(1)]
        for p in pats[1:]:
            groups.extend(self.expect(p, what + " stat")[1].groups())
        st = {"ctime": groups[0], "czxid": hexint(groups[1]), "mtime": groups[2],
              "mzxid": hexint(groups[3]), "version": hexint(groups[4], 32),
              "aversion": hexint(groups[5], 32), "ephemeralOwner": hexint(groups[6])}
        for k in ("ctime", "mtime"):
            t = st[k]
            try:
                secs = time.mktime(time.strptime(t, "%a %b %d %H:%M:%S %Y"))
            except ValueError:
                self.fail("%s: %s %r is not a ctime(3) date" % (what, k, t))
            st[k + "_s"] = secs
        return st

    def create(self, path, flags="", create2=False):
        """Returns (rc, name, stat-or-None, seq of the reply)."""
        verb = "create2" if create2 else "create"
        self.send("%s %s%s" % (verb, "+%s " % flags if flags else "", path))
        self.expect(re.escape("Creating [%s] node (mode: " % path) + r"\d\)", "%s %s" % (verb, path))
        seq, m = self.expect(re.escape("[%s]: rc = " % path) + r"(-?\d+)", "%s %s rc" % (verb, path))
        rc = int(m.group(1))
        name = None
        if rc == 0:
            name = self.expect(r"\tname = (.*)", "%s %s name" % (verb, path))[1].group(1)
        st = self.stat("%s %s" % (verb, path)) if create2 else None
        return rc, name, st, seq

    def get(self, path, command=None):
        """get (or `command`, e.g. config, which answers the same way).
        Returns (rc, value or None, stat or None, seq of the reply)."""
        self.send(command or "get %s" % path)
        what = command or "get %s" % path
        self.expect(r"time = -?\d+ msec", what)
        seq, m = self.expect(re.escape("%s: rc = " % path) + r"(-?\d+)", what + " rc")
        rc = int(m.group(1))
        _, text = self.take(what + " value")
        value = None
        body = []
        if text.startswith(" value_len = "):
            vlen = int(text[len(" value_len = "):])
            while True:
                _, text = self.take(what + " value")
                if text == "Stat:":
                    break
                body.append(text)
            value = "\n".join(body)
            check_eq(len(value.encode("latin-1")), vlen, "%s value_len" % what)
        else:
            if text != "":
                self.fail("%s: got %r after the rc line, want value_len or ''" % (what, text))
            self.expect("Stat:", what)
        return rc, value, self.stat(what), seq

    def set(self, path, data):
        self.send("set %s %s" % (path, data))
        seq, m = self.expect(re.escape("%s: rc = " % path) + r"(-?\d+) Stat:", "set %s" % path)
        return int(m.group(1)), self.stat("set %s" % path), seq

    def ls(self, path, two=False):
        """Returns (rc, children in server order, stat (ls2) or None)."""
        verb = "ls2" if two else "ls"
        self.send("%s %s" % (verb, path))
        self.expect(r"time = -?\d+ msec", "%s %s" % (verb, path))
        _, m = self.expect(re.escape("%s: rc = " % path) + r"(-?\d+)", "%s %s rc" % (verb, path))
        kids = []
        while True:
            _, text = self.take("%s %s children" % (verb, path))
            if re.fullmatch(r"time = -?\d+ msec", text):
                break
            if not text.startswith("\t"):
                self.fail("%s %s: unexpected line %r among children" % (verb, path, text))
            kids.append(text[1:])
        st = self.stat("%s %s" % (verb, path)) if two else None
        return int(m.group(1)), kids, st

    def delete(self, path):
        self.send("delete %s" % path)
        seq, m = self.expect(re.escape("%s: rc = " % path) + r"(-?\d+)", "delete %s" % path)
        return int(m.group(1)), seq

    def sync(self, path):
        self.send("sync %s" % path)
        _, m = self.expect(re.escape("[%s]: rc = " % path) + r"(-?\d+)", "sync %s" % path)
        rc = int(m.group(1))
        if rc == 0:
            check_eq(self.expect(r"\tname = (.*)", "sync name")[1].group(1), path, "sync name")
        return rc

    def myid(self):
        self.send("myid")
        return int(self.expect(r"session Id = ([0-9a-f]+)", "myid")[1].group(1), 16)

    def exists(self, path, verb="exists"):
        """Synchronous in cli_mt: prints 'Error RC for PATH' on failure, nothing on success."""
        self.send("%s %s" % (verb, path))
        self.send("myid")
        _, text = self.take("%s %s" % (verb, path))
        rc = 0
        m = re.fullmatch(r"Error (-?\d+) for (.*)", text)
        if m:
            check_eq(m.group(2), path, "path in exists error")
            rc = int(m.group(1))
            _, text = self.take("myid after %s" % verb)
        if not re.fullmatch(r"session Id = [0-9a-f]+", text):
            self.fail("%s %s: unexpected line %r" % (verb, path, text))
        return rc

    def quit(self):
        """quit: zookeeper_close() sends closeSession and waits for its reply."""
        self.send("quit")
        self.expect("Quitting...", "quit")
        self.wait_exit("quit")

    def wait_exit(self, what, timeout=WAIT):
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.fail("cli_mt still running %.0fs after %s" % (timeout, what))
        self.reader.join(5)
        if rc != 0:
            self.fail("cli_mt exited with status %s after %s" % (rc, what))

    def kill(self):
        """After AUTH_FAILED or EXPIRED, cli.c's watcher calls zookeeper_close() from the
        completion thread and only then clears its handle: a command or end of input at that
        moment closes the handle a second time (crash or hang) in cli.c, whatever the server
        did. So such a cli_mt is killed, not ended through stdin."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except Exception:
                pass


class Clis:
    """Creates cli_mt processes and kazoo clients for one test and always ends them."""

    def __init__(self, srv):
        self.srv = srv
        self.all = []
        self.kazoos = []

    def new(self, hosts=None, args=(), name=None):
        c = Cli(hosts or self.srv.hosts, args, name or "cli%d" % (len(self.all) + 1))
        self.all.append(c)
        return c

    def kazoo(self, **kw):
        k = KazooClient(hosts=self.srv.hosts, timeout=10.0, **kw)
        k.start(timeout=15)
        self.kazoos.append(k)
        return k

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for c in self.all:
            c.kill()
        for k in self.kazoos:
            try:
                k.stop()
                k.close()
            except Exception:
                pass


def check_fresh_stat(st, what, now=None):
    check(st is not None, "%s: stat is null", what)
    check(st["czxid"] > 0 and st["czxid"] == st["mzxid"], "%s: czxid/mzxid %r", what, st)
    check_eq((st["version"], st["aversion"], st["ephemeralOwner"]), (0, 0, 0),
             "%s (version, aversion, ephemeralOwner)" % what)
    check(st["ctime"] == st["mtime"], "%s: ctime %s != mtime %s", what, st["ctime"], st["mtime"])
    check(abs(st["ctime_s"] - (now or time.time())) < 120,
          "%s: ctime %s is not near now (ctime must be in milliseconds)", what, st["ctime"])


# --------------------------------------------------------------------------------------------
# What the proxy recorded

def first_frame(data, what):
    check(len(data) >= 4, "%s: only %d bytes captured", what, len(data))
    n = struct.unpack(">i", data[:4])[0]
    check(len(data) >= 4 + n, "%s: frame of %d bytes, only %d captured", what, n, len(data) - 4)
    return data[4:4 + n]


def parse_connect_request(body):
    check_eq(len(body), 45, "C client ConnectRequest length")
    proto, last_zxid, timeout, sid, pwlen = struct.unpack(">iqiqi", body[:28])
    check_eq(pwlen, 16, "ConnectRequest password length")
    return {"protocolVersion": proto, "lastZxidSeen": last_zxid, "timeOut": timeout,
            "sessionId": sid, "passwd": body[28:44], "readOnly": body[44]}


def parse_connect_response(body):
    """What the server must send: exactly 37 bytes (the C client reads 41 bytes, length
    included, whatever the length prefix says)."""
    if len(body) != 37:
        raise Failure("ConnectResponse body is %d bytes, the C client needs exactly 37 "
                      "(int protocolVersion, int timeOut, long sessionId, int 16, 16-byte "
                      "password, bool readOnly): %s" % (len(body), body.hex()))
    proto, timeout, sid, pwlen = struct.unpack(">iiqi", body[:20])
    check_eq(pwlen, 16, "ConnectResponse password length")
    return {"protocolVersion": proto, "timeOut": timeout, "sessionId": sid,
            "passwd": body[20:36], "readOnly": body[36]}


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
