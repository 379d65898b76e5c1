"""rzk as an operator installs it: the systemd units, readiness, completions and man pages.

    /usr/bin/python3 -m tests.packaging.suite [-k NAME]

- The units in contrib/systemd pass `systemd-analyze verify` (their ExecStart pointed at the
  binary under test, since /usr/local/bin/rzk is not installed here).
- Readiness: `rzk server` with a `NOTIFY_SOCKET` this suite listens on sends `READY=1` only
  once a large log is recovered and the port accepts: when it arrives, the log has reported
  the recovery, and the last node written before the restart is read at once. On SIGTERM it
  sends `STOPPING=1`, syncs its log, says so and exits 0; a restart finds every node.
- The watchdog: with `WATCHDOG_USEC` set, `WATCHDOG=1` arrives at half that period.
- Log lines carry no time of their own when `JOURNAL_STREAM` names standard error.
- Completions: the bash script loads in bash and completes a subcommand and a flag; zsh and
  fish scripts are generated.
- Man pages: `rzk man --out-dir` writes a page per subcommand; each renders with groff with
  every warning enabled and none printed, and `man -l` shows rzk's.

The binary is $RZK_BIN, else target/debug/rzk (tests/support/servers.py).
"""

import argparse
import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from kazoo.client import KazooClient

from tests.support.net import free_port
from tests.support.servers import REPO, rzk_binary

UNITS = os.path.join(REPO, "contrib", "systemd")
INSTALLED_BIN = "/usr/local/bin/rzk"
# The log the readiness test recovers: this many nodes of this many bytes.
LOG_NODES = 4000
NODE_BYTES = 4096
READY_TIMEOUT_S = 60
STOP_TIMEOUT_S = 30
WATCHDOG_USEC = 400_000

TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


class Failed(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failed(what)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, **kw)


class NotifySocket:
    """A datagram socket standing in for systemd's, recording each message and when it came."""

    def __init__(self, directory):
        self.path = os.path.join(directory, "notify.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.settimeout(0.1)
        self.messages = []
        self.arrived = threading.Condition()
        self.stop = False
        self.thread = threading.Thread(target=self._receive, daemon=True)
        self.thread.start()

    def _receive(self):
        while not self.stop:
            try:
                data = self.sock.recv(4096)
            except socket.timeout:
                continue
            with self.arrived:
                self.messages.append((time.monotonic(), data.decode(errors="replace")))
                self.arrived.notify_all()

    def wait_for(self, line, timeout_s, on_arrival=None):
        """The time `line` (e.g. READY=1) first arrived; `on_arrival` runs as it is seen."""
        deadline = time.monotonic() + timeout_s
        with self.arrived:
            while True:
                for at, msg in self.messages:
                    if line in msg.splitlines():
                        if on_arrival:
                            on_arrival()
                        return at
                left = deadline - time.monotonic()
                if left <= 0:
                    raise Failed("no %s in %ds; got %r" % (line, timeout_s, self.messages))
                self.arrived.wait(left)

    def count(self, line):
        with self.arrived:
            return sum(1 for _, m in self.messages if line in m.splitlines())

    def close(self):
        self.stop = True
        self.thread.join()
        self.sock.close()


@contextlib.contextmanager
def notified(prefix):
    """A work directory and a notify socket in it, both gone afterwards."""
    workdir = tempfile.mkdtemp(prefix=prefix)
    notify = NotifySocket(workdir)
    try:
        yield workdir, notify
    finally:
        notify.close()
        shutil.rmtree(workdir)


def start_server(workdir, port, env_extra=None):
    log = open(os.path.join(workdir, "server-%d.log" % time.monotonic_ns()), "w+")
    # Not under the journal unless a test says so (a gate run from a unit would be).
    env = dict(os.environ)
    env.pop("JOURNAL_STREAM", None)
    env.update(env_extra or {})
    cmd = [rzk_binary(), "server", "--port", str(port), "--bind", "127.0.0.1",
           "--data-dir", os.path.join(workdir, "data")]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log, env=env)
    return p, log


def read_log(log):
    log.flush()
    with open(log.name) as f:
        return f.read()


def wait_port(port, timeout_s):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise Failed("port %d never accepted" % port)


def stop(p, timeout_s=STOP_TIMEOUT_S):
    p.send_signal(signal.SIGTERM)
    try:
        return p.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        raise Failed("the server did not stop within %ds of SIGTERM" % timeout_s)


def fill(port):
    """Writes the large log: LOG_NODES nodes of NODE_BYTES, pipelined; returns the last path."""
    zk = KazooClient(hosts="127.0.0.1:%d" % port, timeout=10)
    zk.start(timeout=15)
    try:
        zk.ensure_path("/big")
        data = b"x" * NODE_BYTES
        for batch in range(0, LOG_NODES, 500):
            pending = [zk.create_async("/big/n%06d" % i, data)
                       for i in range(batch, min(batch + 500, LOG_NODES))]
            for a in pending:
                a.get(timeout=30)
        last = "/big/n%06d" % (LOG_NODES - 1)
        zk.set(last, b"the last write")
        return last
    finally:
        zk.stop()
        zk.close()


@test
def units_verify():
    tmp = tempfile.mkdtemp(prefix="rzk-units-")
    try:
        binary = os.path.abspath(rzk_binary())
        for name in os.listdir(UNITS):
            if name.endswith(".service"):
                with open(os.path.join(UNITS, name)) as f:
                    text = f.read()
                check(INSTALLED_BIN in text, "%s does not run %s" % (name, INSTALLED_BIN))
                with open(os.path.join(tmp, name), "w") as f:
                    f.write(text.replace(INSTALLED_BIN, binary))
        units = [os.path.join(tmp, "rzk-server.service"),
                 os.path.join(tmp, "rzk-elect@compactor.service")]
        r = run(["systemd-analyze", "verify", "--man=no"] + units)
        problems = (r.stdout + r.stderr).strip()
        check(r.returncode == 0 and not problems,
              "systemd-analyze verify: exit %d: %s" % (r.returncode, problems))
    finally:
        shutil.rmtree(tmp)


@test
def ready_after_recovery_and_stopping_on_sigterm():
    with notified("rzk-ready-") as (workdir, notify):
        port = free_port()
        p, log = start_server(workdir, port)
        wait_port(port, 30)
        last = fill(port)
        check(stop(p) == 0, "the filling server did not exit 0 on SIGTERM")
        check("transaction log synced and closed" in read_log(log),
              "the filling server did not report its log synced")

        p, log = start_server(workdir, port, {"NOTIFY_SOCKET": notify.path})
        seen = {}

        def at_ready():
            # Before anything else, as a unit ordered after this one would: the log has
            # reported the recovery, the port accepts, the last write is there.
            seen["log"] = read_log(log)
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                seen["accepts"] = True
            except OSError as e:
                seen["accepts"] = e

        started = time.monotonic()
        ready = notify.wait_for("READY=1", READY_TIMEOUT_S, at_ready)
        check(seen["accepts"] is True, "READY=1 came before the port accepted: %r" % seen)
        check(re.search(r"recovered", seen["log"]) is not None,
              "READY=1 came before the log reported its recovery:\n" + seen["log"])
        zk = KazooClient(hosts="127.0.0.1:%d" % port, timeout=10)
        zk.start(timeout=10)
        data, _ = zk.get(last)
        count = len(zk.get_children("/big"))
        zk.stop()
        zk.close()
        check(data == b"the last write", "the last write was not recovered: %r" % data)
        check(count == LOG_NODES, "%d of %d nodes recovered" % (count, LOG_NODES))
        print("    READY=1 %.2f s after the start, %d nodes of %d B recovered"
              % (ready - started, LOG_NODES, NODE_BYTES))

        code = stop(p)
        notify.wait_for("STOPPING=1", 5)
        check(code == 0, "exit %d on SIGTERM" % code)
        check("transaction log synced and closed" in read_log(log),
              "no 'transaction log synced and closed' on SIGTERM")


@test
def watchdog_is_fed_at_half_its_period():
    with notified("rzk-watchdog-") as (workdir, notify):
        port = free_port()
        env = {"NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": str(WATCHDOG_USEC)}
        p, _ = start_server(workdir, port, env)
        try:
            ready = notify.wait_for("READY=1", READY_TIMEOUT_S)
            period_s = WATCHDOG_USEC / 1e6
            time.sleep(period_s * 5)
            fed = notify.count("WATCHDOG=1")
            # Half a period apart: about ten in five periods; at least six leaves room.
            check(fed >= 6, "WATCHDOG=1 %d times in %.1f s after READY=1 at %.2f"
                  % (fed, period_s * 5, ready))
        finally:
            check(stop(p) == 0, "exit on SIGTERM not 0")


@test
def no_timestamps_when_the_journal_reads_stderr():
    workdir = tempfile.mkdtemp(prefix="rzk-journal-")
    try:
        for journal in (False, True):
            port = free_port()
            log_path = os.path.join(workdir, "log-%s" % journal)
            with open(log_path, "w") as log:
                st = os.fstat(log.fileno())
                env = dict(os.environ)
                env.pop("JOURNAL_STREAM", None)
                if journal:
                    env["JOURNAL_STREAM"] = "%d:%d" % (st.st_dev, st.st_ino)
                cmd = [rzk_binary(), "server", "--port", str(port), "--bind", "127.0.0.1",
                       "--in-memory"]
                p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log, env=env)
                wait_port(port, 30)
                check(stop(p) == 0, "exit on SIGTERM not 0")
            with open(log_path) as f:
                lines = [line for line in f.read().splitlines() if line.strip()]
            stamped = [line for line in lines if re.match(r"\d{4}-\d\d-\d\dT", line)]
            if journal:
                check(lines and not stamped, "timestamps under the journal: %r" % lines[:3])
            else:
                check(lines and len(stamped) == len(lines), "no timestamps: %r" % lines[:3])
    finally:
        shutil.rmtree(workdir)


@test
def bash_completes_a_subcommand_and_a_flag():
    script = run([rzk_binary(), "completions", "bash"])
    check(script.returncode == 0 and "_rzk" in script.stdout, "no bash completion script")
    probe = r'''
        source /dev/stdin
        complete_words() {
            COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 ))
            COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; COMPREPLY=()
            _rzk rzk "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
            printf '%s\n' "${COMPREPLY[@]}"
        }
        echo "-- subcommands"; complete_words rzk ser
        echo "-- flags"; complete_words rzk server --data
    '''
    r = run(["bash", "-c", probe], input=script.stdout)
    out = r.stdout
    subcommands = out.split("-- flags")[0]
    flags = out.split("-- flags")[-1]
    check(r.returncode == 0, "bash failed: %s" % r.stderr)
    check("server" in subcommands.split(), "`rzk ser<TAB>` did not offer server: %r" % out)
    check("--data-dir" in flags.split(), "`rzk server --data<TAB>` did not offer --data-dir: %r"
          % out)
    for shell, marker in (("zsh", "#compdef rzk"), ("fish", "complete -c rzk")):
        r = run([rzk_binary(), "completions", shell])
        check(r.returncode == 0 and marker in r.stdout, "no %s completion script" % shell)
    r = run([rzk_binary(), "completions", "tcsh"])
    check(r.returncode == 2 and "tcsh" in r.stderr, "an unknown shell was not refused clearly")


@test
def man_pages_render_without_warnings():
    tmp = tempfile.mkdtemp(prefix="rzk-man-")
    try:
        r = run([rzk_binary(), "man", "--out-dir", tmp])
        check(r.returncode == 0, "rzk man --out-dir failed: %s" % r.stderr)
        pages = sorted(os.listdir(tmp))
        for want in ("rzk.1", "rzk-server.1", "rzk-elect.1", "rzk-lock.1", "rzk-completions.1"):
            check(want in pages, "no %s among %s" % (want, pages))
        check(not any("watchdog" in p for p in pages), "the internal watchdog got a page")
        for page in pages:
            r = run(["groff", "-man", "-Tutf8", "-ww", "-z", os.path.join(tmp, page)])
            check(r.returncode == 0 and not r.stderr.strip(),
                  "groff warns on %s: %s" % (page, r.stderr.strip()))
        r = run(["man", "-l", "-P", "cat", os.path.join(tmp, "rzk-server.1")],
                env=dict(os.environ, MANWIDTH="100"))
        check(r.returncode == 0 and "--data-dir" in r.stdout,
              "man -l rzk-server.1 did not show --data-dir: %s" % r.stderr)
        printed = run([rzk_binary(), "man"])
        with open(os.path.join(tmp, "rzk.1")) as f:
            check(printed.stdout == f.read(), "`rzk man` differs from the rzk.1 it writes")
    finally:
        shutil.rmtree(tmp)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-k", dest="only", default=None, help="only tests whose name has this")
    args = ap.parse_args()
    failures = 0
    for fn in TESTS:
        if args.only and args.only not in fn.__name__:
            continue
        t0 = time.monotonic()
        try:
            fn()
            print("PASS %s (%.1f s)" % (fn.__name__, time.monotonic() - t0))
        except Exception as e:  # noqa: BLE001 - a test's failure of any kind is reported
            failures += 1
            print("FAIL %s (%.1f s): %s: %s"
                  % (fn.__name__, time.monotonic() - t0, type(e).__name__, e))
        sys.stdout.flush()
    print("%d failed" % failures if failures else "packaging: all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
