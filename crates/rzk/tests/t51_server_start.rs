//! `rzk server` at start: what it does with a ZooKeeper `zoo.cfg`, and its log's format.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

fn zoo_cfg(name: &str, text: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("rzk-t51-{name}-{}.cfg", std::process::id()));
    std::fs::write(&p, text).unwrap();
    p
}

fn server(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rzk"));
    c.args(["server", "--in-memory", "--bind", "127.0.0.1", "--port", "0"]).args(args);
    c
}

/// Runs a server that should refuse to start; one that starts anyway is killed after a bound.
fn refused(args: &[&str]) -> Output {
    let mut child = server(args).stderr(Stdio::piped()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    child.wait_with_output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn an_ensemble_config_is_refused() {
    // A real deployment's three-host config: started on each host, rzk would be three
    // independent servers behind one connect string.
    let cfg = zoo_cfg(
        "ensemble",
        "tickTime=2000\ninitLimit=10\nsyncLimit=5\nclientPort=2181\n\
         server.1=192.168.1.101:2888:3888\nserver.2=192.168.1.102:2888:3888\n\
         server.3=192.168.1.103:2888:3888\n",
    );
    let o = refused(&["--config", cfg.to_str().unwrap()]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    for needle in ["server.1, server.2, server.3", "replication", "Apache ZooKeeper"] {
        assert!(err.contains(needle), "{needle:?} not in {err}");
    }
    let o = refused(&["--config", zoo_cfg("tls", "secureClientPort=2281\n").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("secureClientPort"), "{}", stderr(&o));
}

/// Starts a server with stderr on a pipe and returns its log up to "serving on".
fn log_until_serving(args: &[&str]) -> String {
    let mut out = String::new();
    while_serving(args, |log| out = log.to_string());
    out
}

#[test]
fn the_log_is_plain_text_on_a_pipe() {
    let log = log_until_serving(&[]);
    assert!(log.contains("serving on"), "{log}");
    assert!(!log.contains('\x1b'), "colour escapes in a piped log: {log:?}");
}

#[test]
fn each_ignored_key_is_explained() {
    let cfg = zoo_cfg(
        "single",
        "tickTime=2000\ninitLimit=10\ntickTme=100\nserver.1=127.0.0.1:2888:3888\n\
         clientTcpKeepAlive=true\n",
    );
    let log = log_until_serving(&["--config", cfg.to_str().unwrap()]);
    for needle in [
        "initLimit: not used by a single-node server",
        "unknown key \"tickTme\" (did you mean tickTime?)",
        "server.1=127.0.0.1:2888:3888 names a single server: rzk runs it standalone",
        "clientTcpKeepAlive: not supported",
    ] {
        assert!(log.contains(needle), "{needle:?} not in {log}");
    }
}

/// Starts a server, reads its log up to "serving on", runs `probe` on that log while the
/// server still runs, then stops it.
fn while_serving(args: &[&str], probe: impl FnOnce(&str)) {
    let mut child = server(args).stderr(Stdio::piped()).spawn().unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut log = String::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        log.push_str(&line);
        log.push('\n');
        if line.contains("serving on") {
            break;
        }
    }
    // Keep draining the log so that the server never blocks on a full pipe.
    let drain = thread::spawn(move || lines.for_each(drop));
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| probe(&log)));
    child.kill().unwrap();
    child.wait().unwrap();
    drain.join().unwrap();
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// `GET path` on `addr`: the whole response.
fn http_get(addr: &str, path: &str) -> String {
    http_get_as(addr, "rzk", path)
}

/// `GET path` on `addr` naming `host`: the whole response.
fn http_get_as(addr: &str, host: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// The AdminServer's address from a log's "AdminServer on http://ADDR/URL" line.
fn admin_addr(log: &str) -> String {
    let line = log.lines().find(|l| l.contains("AdminServer on http://")).unwrap_or_else(|| {
        panic!("no AdminServer line in {log}");
    });
    let url = line.split("http://").nth(1).unwrap();
    url.split('/').next().unwrap().to_string()
}

#[test]
fn the_admin_server_runs_when_zoo_cfg_or_a_flag_asks() {
    let text = "admin.enableServer=true\nadmin.serverAddress=127.0.0.1\nadmin.serverPort=0\n\
                admin.commandURL=/zk\n";
    let cfg = zoo_cfg("admin", text);
    while_serving(&["--config", cfg.to_str().unwrap()], |log| {
        let reply = http_get(&admin_addr(log), "/zk/ruok");
        assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
        assert!(reply.contains("\"command\": \"ruok\""), "{reply}");
        // The file's text as read, JSON-escaped.
        let icfg = http_get(&admin_addr(log), "/zk/initial_configuration");
        let escaped = text.replace('\n', "\\n");
        assert!(icfg.contains(&format!("\"initial_configuration\": \"{escaped}\"")), "{icfg}");
    });
    // The flags turn it on over a zoo.cfg that turns it off.
    let off = zoo_cfg("admin-off", "admin.enableServer=false\n");
    let args =
        ["--config", off.to_str().unwrap(), "--admin-port", "0", "--admin-bind", "127.0.0.1"];
    while_serving(&args, |log| {
        let reply = http_get(&admin_addr(log), "/commands/isro");
        assert!(reply.contains("\"read_only\": false"), "{reply}");
    });
    // A zoo.cfg written for ZooKeeper, where it would be on: off, and the log says so.
    let silent = zoo_cfg("admin-silent", "tickTime=2000\n");
    let log = log_until_serving(&["--config", silent.to_str().unwrap()]);
    assert!(log.contains("AdminServer off") && !log.contains("AdminServer on"), "{log}");
}

/// The client address from a log's "serving on ADDR" line.
fn serving_addr(log: &str) -> String {
    let line = log.lines().find(|l| l.contains("serving on")).unwrap();
    line.rsplit("serving on ").next().unwrap().trim().to_string()
}

/// The backlog the kernel keeps for the socket listening on `addr` (`ss`'s Send-Q column).
fn listen_backlog(addr: &str) -> u32 {
    let port = addr.rsplit(':').next().unwrap();
    let out = Command::new("ss").args(["-ltnH", &format!("sport = :{port}")]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let fields: Vec<&str> = text.split_whitespace().collect();
    assert_eq!(fields.first(), Some(&"LISTEN"), "ss: {text}");
    fields[2].parse().unwrap()
}

#[test]
fn max_cnxns_and_the_listen_backlog_are_applied() {
    use std::io::Read;
    // By default, a backlog for a storm (the kernel's somaxconn here is 4,096 or more).
    while_serving(&[], |log| assert_eq!(listen_backlog(&serving_addr(log)), 4096));
    let cfg = zoo_cfg("limits", "clientPortListenBacklog=2000\nmaxCnxns=3\n");
    while_serving(&["--config", cfg.to_str().unwrap()], |log| {
        let addr = serving_addr(log);
        assert_eq!(listen_backlog(&addr), 2000);
        let open: Vec<_> = (0..3).map(|_| std::net::TcpStream::connect(&addr).unwrap()).collect();
        // The fourth is closed as soon as it is accepted; the three keep their slots.
        let mut fourth = std::net::TcpStream::connect(&addr).unwrap();
        fourth.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        assert_eq!(fourth.read(&mut [0; 16]).unwrap(), 0, "the fourth connection was served");
        let mut first = &open[0];
        first.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
        let still = first.read(&mut [0; 16]);
        assert!(still.is_err(), "the first connection was closed: {still:?}");
    });
}

#[test]
fn the_console_serves_on_the_admin_port_when_asked() {
    let args = ["--admin-port", "0", "--admin-bind", "127.0.0.1", "--console"];
    while_serving(&args, |log| {
        let admin = admin_addr(log);
        assert!(log.contains(&format!("console on http://{admin}/console/")), "{log}");
        let bare = http_get_as(&admin, &admin, "/console");
        assert!(bare.starts_with("HTTP/1.1 308") && bare.contains("location: /console/"), "{bare}");
        let overview = http_get_as(&admin, &admin, "/console/");
        assert!(overview.starts_with("HTTP/1.1 200"), "{overview}");
        // Relative links, so that they stay under the mount.
        assert!(overview.contains("href=\"tree?path=/\""), "{overview}");
        let tree = http_get_as(&admin, &admin, "/console/tree?path=/zookeeper");
        assert!(tree.starts_with("HTTP/1.1 200") && tree.contains("quota"), "{tree}");
        // A page that names another host (DNS rebinding) is refused; the commands still serve.
        assert!(http_get_as(&admin, "evil.example", "/console/").starts_with("HTTP/1.1 421"));
        assert!(http_get(&admin, "/commands/ruok").contains("\"command\": \"ruok\""));
    });
    let o = refused(&["--console"]);
    assert!(!o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("--console is served on the AdminServer's port"), "{}", stderr(&o));
}

#[test]
fn sasl_is_enforced_only_with_users_to_log_in() {
    let require = zoo_cfg("sasl", "sessionRequireClientSASLAuth=true\n");
    let require = require.to_str().unwrap();
    let o = refused(&["--config", require]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("refusing to enforce the sasl scheme with no SASL users"), "{err}");
    let bad =
        zoo_cfg("jaas-bad", "Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule\n");
    let o = refused(&["--config", require, "--jaas", bad.to_str().unwrap()]);
    assert!(stderr(&o).contains("JAAS line 3"), "{}", stderr(&o));
    let kerberos = zoo_cfg(
        "jaas-krb5",
        "Server {\n  com.sun.security.auth.module.Krb5LoginModule required\n  \
         useKeyTab=true keyTab=\"/etc/zk.keytab\" principal=\"zookeeper/h@R\";\n};\n",
    );
    let o = refused(&["--config", require, "--jaas", kerberos.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    // Without the gssapi feature rzk says how to get it; with it, that the keytab lacks keys.
    let says =
        if cfg!(feature = "gssapi") { "no keys for zookeeper/h@R" } else { "without GSSAPI" };
    assert!(stderr(&o).contains(says), "{}", stderr(&o));
    let good = zoo_cfg(
        "jaas",
        "Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  \
         user_bob=\"bob-secret\";\n};\n",
    );
    // Found where zkEnv.sh names it, as ZooKeeper finds it.
    let flags = format!("-Xmx1g -Djava.security.auth.login.config={}", good.display());
    let mut child = server(&["--config", require])
        .env("SERVER_JVMFLAGS", flags)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let log: Vec<String> =
        lines.by_ref().map(Result::unwrap).take_while(|l| !l.contains("serving on")).collect();
    child.kill().unwrap();
    child.wait().unwrap();
    let log = log.join("\n");
    assert!(log.contains("SASL DIGEST-MD5 logins on") && log.contains("users=1"), "{log}");
    assert!(log.contains("enforcing authentication") && log.contains("sasl"), "{log}");
}
