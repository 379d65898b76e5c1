//! An MIT Kerberos realm on loopback, from Debian's `krb5-kdc` and `krb5-admin-server`: a
//! KDC on a free port with its database, krb5.conf and keytabs in a directory of its own,
//! killed on drop. Principals are made with `kadmin.local`, keytabs exported with `ktadd`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::ports::free_port;
use crate::tempdir::TempDir;

/// The test realm.
pub const REALM: &str = "RZK.TEST";
/// How long the KDC may take to answer after it is started.
const READY_TIMEOUT: Duration = Duration::from_secs(20);
/// The encryption types both MIT and the JDK's Kerberos take.
const ENCTYPES: &str = "aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96";

/// A running KDC.
pub struct Kdc {
    child: Child,
    port: u16,
    dir: TempDir,
}

impl Kdc {
    /// Creates the realm's database and starts its KDC.
    ///
    /// # Panics
    /// When a Kerberos tool is missing (scripts/install-deps.sh installs them) or fails.
    pub fn start() -> Kdc {
        let dir = TempDir::new("rzk-testkit-kdc");
        let port = free_port();
        let d = dir.path().display();
        let krb5_conf = format!(
            "[libdefaults]\n default_realm = {REALM}\n dns_lookup_kdc = false\n \
             dns_lookup_realm = false\n dns_canonicalize_hostname = true\n rdns = true\n \
             udp_preference_limit = 1\n permitted_enctypes = {ENCTYPES}\n \
             default_tkt_enctypes = {ENCTYPES}\n default_tgs_enctypes = {ENCTYPES}\n\
             [realms]\n {REALM} = {{\n  kdc = 127.0.0.1:{port}\n }}\n\
             [domain_realm]\n localhost = {REALM}\n"
        );
        let kdc_conf = format!(
            "[kdcdefaults]\n kdc_ports = {port}\n kdc_tcp_ports = {port}\n\
             [realms]\n {REALM} = {{\n  database_name = {d}/principal\n  \
             key_stash_file = {d}/stash\n  acl_file = {d}/kadm5.acl\n  \
             supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal\n  \
             max_life = 1h\n }}\n[logging]\n kdc = FILE:{d}/kdc.log\n"
        );
        std::fs::write(dir.path().join("krb5.conf"), krb5_conf).expect("krb5.conf");
        std::fs::write(dir.path().join("kdc.conf"), kdc_conf).expect("kdc.conf");
        std::fs::write(dir.path().join("kadm5.acl"), "").expect("kadm5.acl");
        let mut kdc = Kdc { child: Command::new("true").spawn().expect("true"), port, dir };
        kdc.run("/usr/sbin/kdb5_util", &["create", "-s", "-r", REALM, "-P", "master-secret"]);
        kdc.child = kdc
            .command("/usr/sbin/krb5kdc")
            .args(["-n", "-r", REALM])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start krb5kdc (is krb5-kdc installed?)");
        kdc.wait_ready();
        kdc
    }

    /// The krb5.conf of the realm, for `KRB5_CONFIG` and `java.security.krb5.conf`.
    pub fn krb5_conf(&self) -> PathBuf {
        self.dir.path().join("krb5.conf")
    }

    /// The directory the realm's files are in.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Adds `principal` (`name` or `service/host`, in the realm) with a random key and exports
    /// it to a keytab; returns the keytab. Exporting again changes the key, so an older keytab
    /// of the same principal stops working (a "wrong keytab").
    pub fn add_principal(&self, principal: &str) -> PathBuf {
        let keytab = self.dir.path().join(format!("{}.keytab", principal.replace('/', "_")));
        let _ = std::fs::remove_file(&keytab);
        self.admin(&format!("addprinc -randkey {principal}"));
        self.export(principal, &keytab);
        keytab
    }

    /// Exports `principal`'s keys again to `keytab`, changing them: keytabs exported before
    /// no longer authenticate.
    pub fn export(&self, principal: &str, keytab: &Path) {
        self.admin(&format!("ktadd -k {} {principal}", keytab.display()));
    }

    /// Writes a JAAS file with one `section` (`Client` or `Server`) that logs `principal` (in
    /// the realm) in from `keytab` with `Krb5LoginModule`, as a Java process's file has it: no
    /// ticket cache, no password prompt, and the key kept (`storeKey`) only for a `Server`, which must accept with
    /// it. Returns the file.
    pub fn keytab_jaas(&self, section: &str, principal: &str, keytab: &Path) -> PathBuf {
        let file = self.dir.path().join(format!("{}-jaas.conf", principal.replace('/', "_")));
        let store_key = section == "Server";
        let text = format!(
            "{section} {{\n  com.sun.security.auth.module.Krb5LoginModule required\n    \
             useKeyTab=true keyTab=\"{}\" storeKey={store_key} useTicketCache=false\n    \
             doNotPrompt=true principal=\"{principal}@{REALM}\";\n}};\n",
            keytab.display()
        );
        std::fs::write(&file, text).expect("write the JAAS file");
        file
    }

    /// Caps the lifetime of `principal`'s tickets, so that a test can watch one expire.
    pub fn set_max_life(&self, principal: &str, seconds: u32) {
        self.admin(&format!("modprinc -maxlife \"{seconds} seconds\" {principal}"));
    }

    fn admin(&self, query: &str) {
        self.run("/usr/sbin/kadmin.local", &["-r", REALM, "-q", query]);
    }

    fn command(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env("KRB5_CONFIG", self.krb5_conf())
            .env("KRB5_KDC_PROFILE", self.dir.path().join("kdc.conf"));
        c
    }

    fn run(&self, program: &str, args: &[&str]) {
        let out = self
            .command(program)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("{program} (is krb5-kdc installed?): {e}"));
        assert!(
            out.status.success() && !String::from_utf8_lossy(&out.stderr).contains("rror"),
            "{program} {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + READY_TIMEOUT;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                let log = std::fs::read_to_string(self.dir.path().join("kdc.log"));
                panic!("krb5kdc exited with {status}: {}", log.unwrap_or_default());
            }
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("krb5kdc did not listen on {} within {READY_TIMEOUT:?}", self.port);
    }
}

impl Drop for Kdc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
