"""Start ZooKeeper-protocol servers on free loopback ports for the suites and the benchmarks.

Two kinds, one interface:
  * Apache ZooKeeper 3.8 from Debian's `zookeeper` package, run in-process of a JVM we start;
  * rzk server, the binary built by cargo (path from $RZK_BIN, else target/debug/rzk).

`start_for_benchmark` starts either with equal durability, as every benchmark compares them.

Every server gets its own temporary directory and is stopped (and its directory removed) by
`stop()` or when used as a context manager. Nothing here skips: a missing JVM or binary raises.
"""

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from tests.support import java
from tests.support.net import free_port

REPO = java.REPO
# Same settings the kazoo and zookeeper-client harnesses use: every 4lw, a known super digest
# (password "test"), extended types for TTL nodes.
SUPER_DIGEST = "super:D/InIHSb7yEEbrWz8b9l71RjZJU="


def four_letter(port, word, timeout_s=5.0):
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as s:
        s.sendall(word.encode())
        out = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return out.decode(errors="replace")
            out += chunk


def wait_ready(port, timeout_s=30.0, proc=None, ours=lambda: True):
    """Polls `srvr` until the server reports a mode (ZooKeeper answers `ruok` before it serves)
    and `ours()` says the answer came from this server: a port picked free can be taken by
    another process before the server meant for it binds it."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError("server exited with status %s before it was ready" % proc.returncode)
        try:
            if "Mode:" in four_letter(port, "srvr", timeout_s=1) and ours():
                return
        except OSError:
            pass
        time.sleep(0.05)
    raise TimeoutError("server on port %d not ready after %.0fs" % (port, timeout_s))


class Server:
    """A running server. `hosts` is the connect string, e.g. `127.0.0.1:40123`."""

    def __init__(self, kind, proc, port, workdir, cmd):
        self.kind, self.proc, self.port, self.workdir, self.cmd = kind, proc, port, workdir, cmd
        self.hosts = "127.0.0.1:%d" % port
        self.log_from = 0
        # The environment it was launched with (None: ours), kept for a relaunch.
        self.env = None

    def four_letter(self, word):
        return four_letter(self.port, word)

    def ours(self):
        """Whether the server answering on our port is this one (see wait_ready)."""
        if self.kind == "zookeeper":
            data = "dataDir=" + os.path.join(self.workdir, "data")
            try:
                return data in four_letter(self.port, "conf")
            except OSError:
                return False
        # rzk in memory has no data dir to show: its log names the address it serves on.
        with open(os.path.join(self.workdir, "server.log"), errors="replace") as f:
            f.seek(self.log_from)
            return ("serving on 127.0.0.1:%d" % self.port) in f.read()

    def pause(self):
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self):
        self.proc.send_signal(signal.SIGCONT)

    def relaunch(self, hard=True):
        """Stops the server (SIGKILL when `hard`, else SIGTERM) and launches it again on the same
        port with the same data, without waiting for it; returns the launch's time.monotonic()."""
        self.proc.send_signal(signal.SIGCONT)
        if hard:
            self.proc.kill()
        else:
            self.proc.terminate()
        self.proc.wait(30)
        log = open(os.path.join(self.workdir, "server.log"), "a")
        self.log_from = log.tell()
        t0 = time.monotonic()
        self.proc = subprocess.Popen(self.cmd, stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=True, env=self.env)
        return t0

    def restart(self, hard=True):
        """relaunch(), then waits until it serves: what an operator's restart or a crash looks
        like to clients."""
        self.relaunch(hard)
        wait_ready(self.port, 60, self.proc, self.ours)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def _launch(kind, cmd, port, workdir, ready_timeout_s, env=None):
    """Runs `cmd` in its own session, its output in workdir/server.log; waits up to
    `ready_timeout_s` for it to serve, or not at all when that is None."""
    log = open(os.path.join(workdir, "server.log"), "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                            env=env)
    srv = Server(kind, proc, port, workdir, cmd)
    srv.env = env
    if ready_timeout_s is not None:
        wait_ready(port, ready_timeout_s, proc, srv.ours)
    return srv


JAAS_PROPERTY = "java.security.auth.login.config"


def _write_jaas(workdir, jaas):
    path = os.path.join(workdir, "jaas.conf")
    with open(path, "w") as f:
        f.write(jaas)
    return path


def start_zookeeper(tick_ms=2000, extra_cfg=None, port=None, heap="512m", wait=True, jaas=None):
    """Apache ZooKeeper 3.8 standalone, with fsync on, as our tests and benchmarks expect.

    `heap` is the -Xmx value, or None for the JVM's own default as Debian's zkServer.sh runs it
    (a quarter of RAM). With `wait=False` it returns as soon as the JVM is launched. `jaas` is
    the text of a JAAS file, read through java.security.auth.login.config."""
    workdir = tempfile.mkdtemp(prefix="zk-")
    port = port or free_port()
    cfg = {
        "tickTime": tick_ms,
        "dataDir": os.path.join(workdir, "data"),
        "clientPort": port,
        "clientPortAddress": "127.0.0.1",
        "maxClientCnxns": 0,
        "admin.enableServer": "false",
        "4lw.commands.whitelist": "*",
        "extendedTypesEnabled": "true",
    }
    cfg.update(extra_cfg or {})
    with open(os.path.join(workdir, "zoo.cfg"), "w") as f:
        for k, v in cfg.items():
            f.write("%s=%s\n" % (k, v))
    props = [("zookeeper.DigestAuthenticationProvider.superDigest", SUPER_DIGEST),
             ("zookeeper.extendedTypesEnabled", "true"),
             ("org.slf4j.simpleLogger.defaultLogLevel", "warn")]
    if jaas is not None:
        props.append((JAAS_PROPERTY, _write_jaas(workdir, jaas)))
    cmd = java.command("org.apache.zookeeper.server.ZooKeeperServerMain",
                       [os.path.join(workdir, "zoo.cfg")], heap, props)
    return _launch("zookeeper", cmd, port, workdir, 60 if wait else None)


def rzk_binary():
    """The rzk binary the suites run: $RZK_BIN, else target/debug/rzk."""
    path = os.environ.get("RZK_BIN") or os.path.join(REPO, "target", "debug", "rzk")
    if not os.path.exists(path):
        raise FileNotFoundError("rzk binary not found at %s; run `cargo build` first" % path)
    return path


def start_rzk(tick_ms=2000, extra_args=(), port=None, durable=False, wait=True, extra_cfg=None,
              jaas=None):
    """rzk server, in memory unless `durable` (then with a data directory, like ZooKeeper).
    `extra_cfg` are zoo.cfg keys, read through `--config` as ZooKeeper reads them from its
    zoo.cfg. With `wait=False` it returns as soon as the process is launched. `jaas` is the
    text of a JAAS file, named as zkEnv.sh names it to ZooKeeper: in SERVER_JVMFLAGS."""
    workdir = tempfile.mkdtemp(prefix="rzk-")
    port = port or free_port()
    storage = ["--data-dir", os.path.join(workdir, "data")] if durable else ["--in-memory"]
    config = []
    if extra_cfg:
        config = ["--config", os.path.join(workdir, "zoo.cfg")]
        with open(config[1], "w") as f:
            for k, v in extra_cfg.items():
                f.write("%s=%s\n" % (k, v))
    cmd = [rzk_binary(), "server", "--port", str(port), "--bind", "127.0.0.1",
           "--tick-ms", str(tick_ms), "--four-letter-words", "*",
           "--super-digest", SUPER_DIGEST, "--extended-types"] + storage + config + list(extra_args)
    env = None
    if jaas is not None:
        flags = "-Xmx1g -D%s=%s" % (JAAS_PROPERTY, _write_jaas(workdir, jaas))
        env = dict(os.environ, SERVER_JVMFLAGS=flags)
    return _launch("rzk", cmd, port, workdir, 30 if wait else None, env)


def release_rzk_binary():
    """The rzk binary the benchmarks measure by default: $RZK_BIN, else target/release/rzk."""
    return os.environ.get("RZK_BIN") or os.path.join(REPO, "target", "release", "rzk")


def start_for_benchmark(kind, zk_heap=None, rzk_args=(), wait=True, extra_cfg=None):
    """A server as the benchmarks compare them, both durable: ZooKeeper with forceSync (its
    default) and the JVM's default heap unless `zk_heap`; rzk with a data directory, group
    commit with fdatasync. Benchmarks open many sessions from one address: rzk's per-IP limit
    is lifted as zoo.cfg's maxClientCnxns=0 lifts ZooKeeper's. `rzk_args` are extra arguments
    of `rzk server`; `extra_cfg` zoo.cfg keys both servers get (a secure port, say)."""
    if kind == "zookeeper":
        return start_zookeeper(heap=zk_heap or None, wait=wait, extra_cfg=extra_cfg)
    return start_rzk(durable=True, wait=wait, extra_cfg=extra_cfg,
                     extra_args=["--max-client-cnxns", "0"] + list(rzk_args))


def start(kind, **kw):
    """`kind` is `zookeeper` or `rzk`."""
    if kind == "zookeeper":
        kw.pop("durable", None)  # ZooKeeper always is
        return start_zookeeper(**kw)
    if kind == "rzk":
        return start_rzk(**kw)
    raise ValueError("unknown server kind %r" % kind)


if __name__ == "__main__":
    import sys
    kind = sys.argv[1] if len(sys.argv) > 1 else "zookeeper"
    t0 = time.monotonic()
    with start(kind) as srv:
        print("%s up on %s in %.2fs" % (kind, srv.hosts, time.monotonic() - t0))
        print(srv.four_letter("srvr"))
