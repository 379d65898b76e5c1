//! Test certificates, made at test time with the `openssl` command (no key is ever committed):
//! a CA, a server certificate for `localhost` and 127.0.0.1 signed by it, a client certificate
//! signed by it, and a client certificate signed by another CA, which the server must refuse.
//! All PEM, EC P-256, unencrypted PKCS#8 keys; each key also comes as one file with its
//! certificate, ZooKeeper's PEM key store.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::tempdir::TempDir;

/// The subject of [`Certs::client_cert`], in the RFC 2253 form ZooKeeper's `x509` ids take.
pub const CLIENT_DN: &str = "CN=rzk-test-client,O=rzk";

/// A directory of test certificates, removed on drop.
#[derive(Debug)]
pub struct Certs {
    dir: TempDir,
}

impl Certs {
    /// Makes the certificates.
    ///
    /// # Panics
    /// If `openssl` is missing or fails: a test that needs them cannot run without them.
    pub fn generate() -> Certs {
        let dir = TempDir::new("rzk-certs");
        let certs = Certs { dir };
        certs.authority("ca", "rzk test CA");
        certs.authority("rogue-ca", "rzk rogue CA");
        certs.leaf("server", "ca", "/CN=localhost", "subjectAltName=DNS:localhost,IP:127.0.0.1");
        certs.leaf("client", "ca", "/O=rzk/CN=rzk-test-client", "extendedKeyUsage=clientAuth");
        certs.leaf("rogue-client", "rogue-ca", "/CN=rogue", "extendedKeyUsage=clientAuth");
        certs
    }

    /// The CA that signs the server's and the client's certificates.
    pub fn ca(&self) -> PathBuf {
        self.dir.join("ca.crt")
    }

    /// The server's certificate (chain: the leaf alone).
    pub fn server_cert(&self) -> PathBuf {
        self.dir.join("server.crt")
    }

    /// The server's private key.
    pub fn server_key(&self) -> PathBuf {
        self.dir.join("server.key")
    }

    /// The server's key and certificate in one file (`ssl.keyStore.location`, type PEM).
    pub fn server_pem(&self) -> PathBuf {
        self.dir.join("server.pem")
    }

    /// A client certificate the CA signed, subject [`CLIENT_DN`].
    pub fn client_cert(&self) -> PathBuf {
        self.dir.join("client.crt")
    }

    /// Its key.
    pub fn client_key(&self) -> PathBuf {
        self.dir.join("client.key")
    }

    /// Key and certificate in one file.
    pub fn client_pem(&self) -> PathBuf {
        self.dir.join("client.pem")
    }

    /// A client certificate signed by a CA the server does not trust.
    pub fn rogue_cert(&self) -> PathBuf {
        self.dir.join("rogue-client.crt")
    }

    /// Its key.
    pub fn rogue_key(&self) -> PathBuf {
        self.dir.join("rogue-client.key")
    }

    /// The directory holding them all.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    fn authority(&self, name: &str, cn: &str) {
        let (key, crt) =
            (self.dir.join(format!("{name}.key")), self.dir.join(format!("{name}.crt")));
        openssl(&[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-days",
            "2",
            "-subj",
            &format!("/CN={cn}"),
            "-keyout",
            path(&key),
            "-out",
            path(&crt),
        ]);
    }

    fn leaf(&self, name: &str, ca: &str, subject: &str, extension: &str) {
        let file = |ext: &str| self.dir.join(format!("{name}.{ext}"));
        let ca_file = |ext: &str| self.dir.join(format!("{ca}.{ext}"));
        let (key, csr, crt, ext) = (file("key"), file("csr"), file("crt"), file("ext"));
        openssl(&[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-subj",
            subject,
            "-keyout",
            path(&key),
            "-out",
            path(&csr),
        ]);
        std::fs::write(&ext, format!("{extension}\n")).expect("write extension file");
        openssl(&[
            "x509",
            "-req",
            "-in",
            path(&csr),
            "-CA",
            path(&ca_file("crt")),
            "-CAkey",
            path(&ca_file("key")),
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            path(&ext),
            "-out",
            path(&crt),
        ]);
        let both = [std::fs::read(&key).expect("key"), std::fs::read(&crt).expect("crt")].concat();
        std::fs::write(file("pem"), both).expect("write key store");
    }
}

fn path(p: &Path) -> &str {
    p.to_str().expect("temporary paths are UTF-8")
}

fn openssl(args: &[&str]) {
    let out = Command::new("openssl").args(args).output().expect("run openssl");
    assert!(
        out.status.success(),
        "openssl {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}
