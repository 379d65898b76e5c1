"""A tiny raw ZooKeeper wire client: jute encoding/decoding, framing, one connection.

Stdlib only. Everything about bytes lives here: the scenario and the differential runner only
see Python values (dicts, lists, ints, strings, bytes).

Conventions
-----------
* Requests are built with `encode_request(op, args)`; `op` is a name from `OPS` and `args` a
  dict of that op's fields. The xid is chosen by the caller (`Conn.send`).
* Frames are decoded with `decode_frame(raw, op)`: a dict with the ReplyHeader fields
  (`xid`, `zxid`, `err`), `body` (decoded per op, only when `err == 0`), and `trailing`
  (hex of any bytes left over; should be empty). Notifications (xid -1) decode to a
  `WatcherEvent` body regardless of `op`.
* Every socket wait is bounded by `Conn.timeout` seconds.
"""

import socket
import struct
import time

# ---------------------------------------------------------------------------------------------
# Constants

XID_NOTIFICATION = -1
XID_PING = -2
XID_AUTH = -4
XID_SET_WATCHES = -8

PERM_READ, PERM_WRITE, PERM_CREATE, PERM_DELETE, PERM_ADMIN, PERM_ALL = 1, 2, 4, 8, 16, 31
# CreateMode, the `flags` of a create
PERSISTENT, EPHEMERAL, PERSISTENT_SEQ, EPHEMERAL_SEQ, CONTAINER, TTL, TTL_SEQ = range(7)

EVENT_TYPES = {
    -1: "None", 1: "NodeCreated", 2: "NodeDeleted", 3: "NodeDataChanged",
    4: "NodeChildrenChanged", 5: "DataWatchRemoved", 6: "ChildWatchRemoved",
    7: "PersistentWatchRemoved",
}
KEEPER_STATES = {-1: "Unknown", 0: "Disconnected", 3: "SyncConnected", 4: "AuthFailed",
                 5: "ConnectedReadOnly", 6: "SaslAuthenticated", -112: "Expired", 7: "Closed"}

ERROR_NAMES = {
    0: "OK", -1: "SystemError", -2: "RuntimeInconsistency", -3: "DataInconsistency",
    -4: "ConnectionLoss", -5: "MarshallingError", -6: "Unimplemented", -7: "OperationTimeout",
    -8: "BadArguments", -12: "UnknownSession", -13: "NewConfigNoQuorum",
    -14: "ReconfigInProgress", -100: "APIError", -101: "NoNode", -102: "NoAuth",
    -103: "BadVersion", -108: "NoChildrenForEphemerals", -110: "NodeExists", -111: "NotEmpty",
    -112: "SessionExpired", -113: "InvalidCallback", -114: "InvalidACL", -115: "AuthFailed",
    -118: "SessionMoved", -119: "NotReadOnly", -120: "EphemeralOnLocalSession",
    -121: "NoWatcher", -122: "RequestTimeout", -123: "ReconfigDisabled",
    -124: "SessionClosedRequireSaslAuth", -125: "QuotaExceeded", -127: "Throttled",
}


def err_name(code):
    return "%d %s" % (code, ERROR_NAMES.get(code, "?"))


# ---------------------------------------------------------------------------------------------
# jute primitives


class Writer:
    def __init__(self):
        self.parts = []

    def int(self, v):
        self.parts.append(struct.pack(">i", v))
        return self

    def long(self, v):
        self.parts.append(struct.pack(">q", v))
        return self

    def bool(self, v):
        self.parts.append(b"\x01" if v else b"\x00")
        return self

    def buffer(self, b):
        if b is None:
            return self.int(-1)
        self.int(len(b))
        self.parts.append(bytes(b))
        return self

    def string(self, s):
        return self.buffer(None if s is None else s.encode("utf-8"))

    def strings(self, items):
        if items is None:
            return self.int(-1)
        self.int(len(items))
        for s in items:
            self.string(s)
        return self

    def acl(self, acls):
        if acls is None:
            return self.int(-1)
        self.int(len(acls))
        for perms, scheme, ident in acls:
            self.int(perms).string(scheme).string(ident)
        return self

    def raw(self, b):
        self.parts.append(bytes(b))
        return self

    def bytes(self):
        return b"".join(self.parts)


class DecodeError(Exception):
    pass


class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def _take(self, n):
        if self.pos + n > len(self.data):
            raise DecodeError("need %d bytes at offset %d, frame has %d"
                              % (n, self.pos, len(self.data)))
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def int(self):
        return struct.unpack(">i", self._take(4))[0]

    def long(self):
        return struct.unpack(">q", self._take(8))[0]

    def bool(self):
        b = self._take(1)[0]
        if b not in (0, 1):
            raise DecodeError("boolean byte %#x" % b)
        return bool(b)

    def buffer(self):
        n = self.int()
        if n == -1:
            return None
        if n < 0:
            raise DecodeError("negative buffer length %d" % n)
        return self._take(n)

    def string(self):
        b = self.buffer()
        return None if b is None else b.decode("utf-8", "surrogateescape")

    def vector(self, item):
        n = self.int()
        if n == -1:
            return None
        if n < 0:
            raise DecodeError("negative vector length %d" % n)
        return [item(self) for _ in range(n)]

    def remaining(self):
        return len(self.data) - self.pos

    def rest(self):
        return self._take(self.remaining())


# ---------------------------------------------------------------------------------------------
# Records


def read_stat(r):
    return {
        "czxid": r.long(), "mzxid": r.long(), "ctime": r.long(), "mtime": r.long(),
        "version": r.int(), "cversion": r.int(), "aversion": r.int(),
        "ephemeralOwner": r.long(), "dataLength": r.int(), "numChildren": r.int(),
        "pzxid": r.long(),
    }


def read_acl_entry(r):
    return {"perms": r.int(), "scheme": r.string(), "id": r.string()}


def read_data(r):
    """A `buffer` field holding znode data: shown as text when it is printable ASCII."""
    b = r.buffer()
    return data_repr(b)


def data_repr(b):
    if b is None:
        return None
    if all(32 <= c < 127 for c in b):
        return "b:" + b.decode()
    return "hex:" + b.hex()


# ---------------------------------------------------------------------------------------------
# Ops: name -> (opcode, request encoder, response body decoder)
#
# Request args (dict keys) per op:
#   create/create2/createContainer: path, data (bytes), acl (list of (perms, scheme, id)), flags
#   createTTL: same + ttl
#   delete: path, version          exists/getData/getChildren/getChildren2: path, watch
#   setData: path, data, version   getACL: path       setACL: path, acl, version
#   sync: path                     check: path, version
#   checkWatches/removeWatches: path, type          addWatch: path, mode
#   getEphemerals: prefix          getAllChildrenNumber: path
#   multi/multiRead: ops = list of (op name, args)
#   auth: scheme, auth (bytes)     setWatches: relativeZxid, data, exist, child (lists)
#   setWatches2: same + persistent, recursive
#   whoAmI, closeSession, ping: no args
#   raw: opcode, body (bytes)


def _enc_create(w, a):
    w.string(a["path"]).buffer(a.get("data", b"")).acl(a["acl"]).int(a.get("flags", 0))


def _enc_create_ttl(w, a):
    _enc_create(w, a)
    w.long(a["ttl"])


def _enc_path_watch(w, a):
    w.string(a["path"]).bool(a.get("watch", False))


def _enc_path_version(w, a):
    w.string(a["path"]).int(a.get("version", -1))


def _enc_path(w, a):
    w.string(a["path"])


def _enc_set_data(w, a):
    w.string(a["path"]).buffer(a.get("data", b"")).int(a.get("version", -1))


def _enc_set_acl(w, a):
    w.string(a["path"]).acl(a["acl"]).int(a.get("version", -1))


def _enc_path_type(w, a):
    w.string(a["path"]).int(a["type"])


def _enc_add_watch(w, a):
    w.string(a["path"]).int(a["mode"])


def _enc_none(w, a):
    pass


def _enc_auth(w, a):
    w.int(a.get("type", 0)).string(a["scheme"]).buffer(a["auth"])


def _enc_set_watches(w, a):
    w.long(a["relativeZxid"]).strings(a.get("data", [])).strings(a.get("exist", [])) \
        .strings(a.get("child", []))


def _enc_set_watches2(w, a):
    _enc_set_watches(w, a)
    w.strings(a.get("persistent", [])).strings(a.get("recursive", []))


def _enc_prefix(w, a):
    w.string(a["prefix"])


def _enc_raw(w, a):
    w.raw(a.get("body", b""))


def _enc_multi(w, a):
    for name, args in a["ops"]:
        opcode, enc, _ = OPS[name]
        w.int(opcode).bool(False).int(-1)
        enc(w, args)
    w.int(-1).bool(True).int(-1)


def _dec_none(r):
    return None


def _dec_path(r):
    return {"path": r.string()}


def _dec_path_stat(r):
    return {"path": r.string(), "stat": read_stat(r)}


def _dec_stat(r):
    return {"stat": read_stat(r)}


def _dec_data_stat(r):
    return {"data": read_data(r), "stat": read_stat(r)}


def _dec_acl_stat(r):
    return {"acl": r.vector(read_acl_entry), "stat": read_stat(r)}


def _dec_children(r):
    return {"children": r.vector(lambda r: r.string())}


def _dec_children_stat(r):
    return {"children": r.vector(lambda r: r.string()), "stat": read_stat(r)}


def _dec_strings(r):
    return {"ephemerals": r.vector(lambda r: r.string())}


def _dec_int(r):
    return {"totalNumber": r.int()}


def _dec_error_response(r):
    return {"errorResponse": r.int()}


def _dec_who_am_i(r):
    return {"clientInfo": r.vector(lambda r: {"authScheme": r.string(), "user": r.string()})}


def _dec_raw(r):
    return {"raw": r.rest().hex()} if r.remaining() else None


# Body decoders by opcode, for multi / multiRead results.
MULTI_RESULT_DECODERS = {
    1: _dec_path, 15: _dec_path_stat, 19: _dec_path_stat, 21: _dec_path_stat,
    2: _dec_none, 13: _dec_none, 5: _dec_stat, 4: _dec_data_stat, 8: _dec_children,
    -1: _dec_error_response,
}


def _dec_multi(r):
    results = []
    while True:
        typ, done, err = r.int(), r.bool(), r.int()
        if done:
            return {"results": results, "end": [typ, err]}
        dec = MULTI_RESULT_DECODERS.get(typ)
        if dec is None:
            raise DecodeError("unknown multi result type %d" % typ)
        item = {"type": typ, "err": err}
        body = dec(r)
        if body is not None:
            item.update(body)
        results.append(item)


OPS = {
    "create": (1, _enc_create, _dec_path),
    "delete": (2, _enc_path_version, _dec_none),
    "exists": (3, _enc_path_watch, _dec_stat),
    "getData": (4, _enc_path_watch, _dec_data_stat),
    "setData": (5, _enc_set_data, _dec_stat),
    "getACL": (6, _enc_path, _dec_acl_stat),
    "setACL": (7, _enc_set_acl, _dec_stat),
    "getChildren": (8, _enc_path_watch, _dec_children),
    "sync": (9, _enc_path, _dec_path),
    "ping": (11, _enc_none, _dec_none),
    "getChildren2": (12, _enc_path_watch, _dec_children_stat),
    "check": (13, _enc_path_version, _dec_none),
    "multi": (14, _enc_multi, _dec_multi),
    "create2": (15, _enc_create, _dec_path_stat),
    "checkWatches": (17, _enc_path_type, _dec_none),
    "removeWatches": (18, _enc_path_type, _dec_none),
    "createContainer": (19, _enc_create, _dec_path_stat),
    "createTTL": (21, _enc_create_ttl, _dec_path_stat),
    "multiRead": (22, _enc_multi, _dec_multi),
    "auth": (100, _enc_auth, _dec_none),
    "setWatches": (101, _enc_set_watches, _dec_none),
    "getEphemerals": (103, _enc_prefix, _dec_strings),
    "getAllChildrenNumber": (104, _enc_path, _dec_int),
    "setWatches2": (105, _enc_set_watches2, _dec_none),
    "addWatch": (106, _enc_add_watch, _dec_error_response),
    "whoAmI": (107, _enc_none, _dec_who_am_i),
    "closeSession": (-11, _enc_none, _dec_none),
    "raw": (None, _enc_raw, _dec_raw),
}

# Ops whose xid is fixed by the protocol.
FIXED_XID = {"ping": XID_PING, "auth": XID_AUTH, "setWatches": XID_SET_WATCHES,
             "setWatches2": XID_SET_WATCHES}


def encode_request(op, xid, args):
    """The frame payload (without the length prefix): RequestHeader + request record."""
    opcode, enc, _ = OPS[op]
    if op == "raw":
        opcode = args["opcode"]
    w = Writer().int(xid).int(opcode)
    enc(w, args)
    return w.bytes()


def decode_frame(raw, op):
    """Decodes one reply or notification frame received while `op` was outstanding."""
    r = Reader(raw)
    out = {"len": len(raw)}
    try:
        out["xid"], out["zxid"], out["err"] = r.int(), r.long(), r.int()
        if out["xid"] == XID_NOTIFICATION:
            out["event"] = {"type": EVENT_TYPES.get(r.int(), "?"), "state": r.int(),
                            "path": r.string()}
            out["event"]["state"] = KEEPER_STATES.get(out["event"]["state"],
                                                      out["event"]["state"])
        elif out["err"] == 0:
            dec = OPS[op][2] if op in OPS else _dec_raw
            if out["xid"] == XID_PING:
                dec = _dec_none
            out["body"] = dec(r)
    except DecodeError as e:
        out["decodeError"] = str(e)
    if r.remaining():
        out["trailing"] = r.rest().hex()
    return out


def encode_connect(timeout_ms, session_id=0, passwd=b"\0" * 16, last_zxid=0, read_only=False):
    """ConnectRequest; `read_only=None` omits the trailing readOnly byte (pre-3.4 / Go form)."""
    w = Writer().int(0).long(last_zxid).int(timeout_ms).long(session_id).buffer(passwd)
    if read_only is not None:
        w.bool(read_only)
    return w.bytes()


def decode_connect_response(raw):
    r = Reader(raw)
    out = {"len": len(raw)}
    try:
        out["protocolVersion"] = r.int()
        out["timeOut"] = r.int()
        out["sessionId"] = r.long()
        out["passwd"] = r.buffer()
        out["readOnly"] = r.bool() if r.remaining() else "absent"
    except DecodeError as e:
        out["decodeError"] = str(e)
    if r.remaining():
        out["trailing"] = r.rest().hex()
    return out


# ---------------------------------------------------------------------------------------------
# Connection


class WireError(Exception):
    """The connection failed or the server's answer was not what the protocol allows."""


class Closed(WireError):
    """The peer closed the connection (EOF or reset)."""


class Timeout(WireError):
    """No complete frame within the time limit."""


class Conn:
    def __init__(self, host, port, timeout=5.0, sock=None):
        """Connects to host:port, or takes over `sock`, a socket already connected there."""
        self.timeout = timeout
        self.sock = sock or socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def send_frame(self, payload):
        try:
            self.sock.sendall(struct.pack(">i", len(payload)) + payload)
        except OSError as e:  # broken pipe, reset, or a socket we closed already
            raise Closed(str(e))

    def send(self, op, xid, args=None):
        self.send_frame(encode_request(op, xid, args or {}))

    def _fill(self, n, deadline):
        while len(self.buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Timeout("waited %.1fs, have %d/%d bytes" % (self.timeout, len(self.buf), n))
            try:
                self.sock.settimeout(left)
                chunk = self.sock.recv(65536)
            except socket.timeout:
                continue
            except OSError as e:  # reset, or a socket we closed already
                raise Closed("reset: %s" % e)
            if not chunk:
                raise Closed("EOF with %d buffered bytes" % len(self.buf))
            self.buf += chunk

    def recv_frame(self, timeout=None):
        """One frame payload (bytes). Raises Closed or Timeout."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        self._fill(4, deadline)
        n = struct.unpack(">i", self.buf[:4])[0]
        if n < 0 or n > 0xfffff + 1024:
            raise Closed("bad frame length %d" % n)
        self._fill(4 + n, deadline)
        frame, self.buf = self.buf[4:4 + n], self.buf[4 + n:]
        return frame

    def wait_closed(self, timeout=None):
        """Waits for EOF. Returns (frames that arrived first, True if closed / False if the
        connection was still open when `timeout` ran out)."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        frames = []
        while True:
            try:
                frames.append(self.recv_frame(max(0.0, deadline - time.monotonic())))
            except Closed:
                return frames, True
            except Timeout:
                return frames, False

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def connect(host, port, timeout_ms, session_id=0, passwd=b"\0" * 16, last_zxid=0,
            read_only=False, io_timeout=5.0):
    """Opens a socket, sends a ConnectRequest; returns (Conn, raw ConnectResponse bytes).

    Raises Closed if the server closes without answering."""
    c = Conn(host, port, io_timeout)
    c.send_frame(encode_connect(timeout_ms, session_id, passwd, last_zxid, read_only))
    try:
        raw = c.recv_frame()
    except (Closed, Timeout):
        c.close()
        raise
    return c, raw


def digest_id(user, password):
    """The `digest` scheme id for user:password, as DigestAuthenticationProvider computes it."""
    import base64
    import hashlib
    h = hashlib.sha1(("%s:%s" % (user, password)).encode()).digest()
    return "%s:%s" % (user, base64.b64encode(h).decode())


OPEN_ACL = [(PERM_ALL, "world", "anyone")]
READ_ACL = [(PERM_READ, "world", "anyone")]
