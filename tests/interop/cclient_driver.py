"""The ZooKeeper C client's shell `cli_mt`, driven through a pipe, for cclient_suite.

cli_mt is asynchronous: a command's answer is printed later by the library's completion
thread, so after each command `Cli` waits, with a bound, for the exact lines of its answer.
Watch notifications, new-session notices and the library's own log lines may come at any time;
they are set aside as they arrive, each line numbered, and checked separately. Also here: the
Stat checks every fresh node must pass, and the parsers of the connect frames the proxy
records (the C client reads exactly 4+37 bytes of ConnectResponse).
"""

import re
import struct
import subprocess
import threading
import time

from tests.interop.common import Failure, check, check_eq

from kazoo.client import KazooClient

CLI_MT = "/usr/lib/zookeeper/bin/cli_mt"
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
