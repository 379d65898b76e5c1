"""Test certificates for the TLS suites, made at run time with the `openssl` command (no key is
ever committed), as rzk-testkit's `certs.rs` makes them for the Rust tests: a CA, a server
certificate for localhost and 127.0.0.1, a client certificate signed by the CA, and one signed
by another CA, which servers requiring client certificates must refuse. EC P-256, PEM,
unencrypted PKCS#8 keys; `<name>.pem` holds a key and its certificate, ZooKeeper's PEM key store.
"""

import os
import shutil
import subprocess
import tempfile

# The subject of the client certificate, as ZooKeeper's x509 provider names it (RFC 2253).
CLIENT_DN = "CN=rzk-test-client,O=rzk"


def _openssl(*args):
    p = subprocess.run(["openssl"] + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if p.returncode != 0:
        raise RuntimeError("openssl %s failed: %s" % (" ".join(args), p.stdout))


class Certs:
    """The certificates in a temporary directory, removed by `remove()`."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="rzk-certs-")
        self._authority("ca", "rzk test CA")
        self._authority("rogue-ca", "rzk rogue CA")
        # Both leaves name 127.0.0.1: ZooKeeper checks a client certificate's host too.
        san = "subjectAltName=DNS:localhost,IP:127.0.0.1"
        self._leaf("server", "ca", "/CN=localhost", san)
        self._leaf("client", "ca", "/O=rzk/CN=rzk-test-client",
                   san + "\nextendedKeyUsage=clientAuth")
        self._leaf("rogue-client", "rogue-ca", "/CN=rogue", san + "\nextendedKeyUsage=clientAuth")

    def path(self, name):
        """`ca.crt`, `server.pem`, `client.crt`, `client.key`, `rogue-client.pem`, ..."""
        return os.path.join(self.dir, name)

    def remove(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def _authority(self, name, cn):
        _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                 "-days", "2", "-subj", "/CN=" + cn, "-keyout", self.path(name + ".key"),
                 "-out", self.path(name + ".crt"))

    def _leaf(self, name, ca, subject, extensions):
        p = lambda ext: self.path("%s.%s" % (name, ext))
        _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                 "-subj", subject, "-keyout", p("key"), "-out", p("csr"))
        with open(p("ext"), "w") as f:
            f.write(extensions + "\n")
        _openssl("x509", "-req", "-in", p("csr"), "-CA", self.path(ca + ".crt"), "-CAkey",
                 self.path(ca + ".key"), "-CAcreateserial", "-days", "2", "-extfile", p("ext"),
                 "-out", p("crt"))
        with open(p("pem"), "w") as out:
            for part in ("key", "crt"):
                with open(p(part)) as f:
                    out.write(f.read())


def secure_port_cfg(certs, port):
    """The zoo.cfg keys of a secure client port on 127.0.0.1:`port` needing a client certificate
    (ZooKeeper's Netty factory, PEM stores, the x509 provider), the same for both servers."""
    return {
        "secureClientPort": port,
        "secureClientPortAddress": "127.0.0.1",
        "serverCnxnFactory": "org.apache.zookeeper.server.NettyServerCnxnFactory",
        "ssl.keyStore.location": certs.path("server.pem"),
        "ssl.keyStore.type": "PEM",
        "ssl.trustStore.location": certs.path("ca.crt"),
        "ssl.trustStore.type": "PEM",
        "ssl.clientAuth": "need",
        "authProvider.x509": "org.apache.zookeeper.server.auth.X509AuthenticationProvider",
    }
