"""Loopback networking for the tests: a free port, and a TCP proxy for fault injection."""

import os
import socket
import threading


# Ports are handed out from PORT_MIN up to the kernel's ephemeral range, which the kernel
# never hands out by itself: a port from bind(0) is drawn from the range outgoing connections
# take their source ports from, and any of them can take it before the server binds it. Each
# process walks the range from its own offset (from its pid), as rzk_testkit::ports does, so
# suites running side by side rarely meet; a port that cannot be bound is skipped.
PORT_MIN = 10000
EPHEMERAL_MIN_DEFAULT = 32768
_next = None
_top = None


def _ephemeral_min():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return EPHEMERAL_MIN_DEFAULT


def free_port():
    """A loopback port free right now, below the ephemeral range (another process may still
    take it before it is bound: the server launchers check that the server answering is
    theirs)."""
    global _next, _top
    if _top is None:
        _top = max(_ephemeral_min(), PORT_MIN + 1000)
    top = _top
    span = top - PORT_MIN
    if _next is None:
        _next = (os.getpid() * 7919) % span
    for _ in range(span):
        port = PORT_MIN + _next % span
        _next += 1
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise OSError("no free port on 127.0.0.1 in %d..%d" % (PORT_MIN, top))


def _shutdown(sock):
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


class Proxy:
    """A loopback proxy to `port` that records the bytes of every connection both ways and can
    cut every connection and refuse new ones (`cut_and_block`) until `unblock`."""

    def __init__(self, port):
        self.target = ("127.0.0.1", port)
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(16)
        self.hosts = "127.0.0.1:%d" % self.lsock.getsockname()[1]
        self.lock = threading.Lock()
        self.blocked = False
        self.closed = False
        self.conns = []   # dicts: c2s, s2c bytearrays (all bytes, in order), socks
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            with self.lock:
                if self.blocked or self.closed:
                    c.close()
                    continue
                try:
                    s = socket.create_connection(self.target, timeout=5)
                except OSError:
                    c.close()
                    continue
                conn = {"c2s": bytearray(), "s2c": bytearray(), "socks": (c, s)}
                self.conns.append(conn)
            threading.Thread(target=self._pump, args=(c, s, conn["c2s"]), daemon=True).start()
            threading.Thread(target=self._pump, args=(s, c, conn["s2c"]), daemon=True).start()

    def _pump(self, src, dst, record):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                with self.lock:
                    record.extend(data)
                dst.sendall(data)
        except OSError:
            pass
        for x in (src, dst):
            _shutdown(x)

    def cut_and_block(self):
        with self.lock:
            self.blocked = True
            for conn in self.conns:
                for x in conn["socks"]:
                    _shutdown(x)

    def unblock(self):
        with self.lock:
            self.blocked = False

    def snapshot(self):
        """[(client-to-server bytes, server-to-client bytes)] of every connection so far."""
        with self.lock:
            return [(bytes(c["c2s"]), bytes(c["s2c"])) for c in self.conns]

    def close(self):
        self.cut_and_block()
        with self.lock:
            self.closed = True
        self.lsock.close()
