//! `rzk register` and `rzk services` against the in-process server and Apache ZooKeeper:
//! an instance is listed (with its payload, and as curator-x-discovery JSON) while the
//! command runs, the command's status is rzk register's, and the instance is gone after;
//! seed 002's online/offline flow: an `rzk register` killed with SIGKILL disappears from the
//! list within the session timeout while a live one stays, and SIGTERM unregisters at once
//! and exits 143. A bad payload and a missing base path get clear answers.

mod support;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::{rzk, stdout_ok, Kind, Server};

both_servers! {
    register_while_command_runs => registered_while_the_command_runs;
    killed_instance_disappears => a_killed_instance_disappears_and_a_live_one_stays;
}

/// The session timeout the registrations ask for (the servers' maximum at a 100 ms tick).
const SESSION_MS: u64 = 2_000;
/// How long after a SIGKILL the instance may still be listed on a loaded machine: the
/// session timeout plus generous slack for the server's expiry tick.
const GONE_LIMIT: Duration = Duration::from_secs(15);

fn registered_while_the_command_runs(kind: Kind) {
    let server = Server::start(kind);
    let cs = server.hosts();
    let rzk_bin = env!("CARGO_BIN_EXE_rzk");
    let script = format!(
        "{rzk_bin} --connect {cs} services api --base-path /svc; \
         {rzk_bin} --connect {cs} services api --base-path /svc --json; \
         echo \"$RZK_SERVICE_NAME $RZK_SERVICE_ID $RZK_SERVICE_PATH\"; exit 7"
    );
    let out = rzk(
        &cs,
        &[
            "register",
            "api",
            "--address",
            "10.0.0.1",
            "--port",
            "80",
            "--id",
            "a1",
            "--payload",
            r#"{"zone":"eu"}"#,
            "--base-path",
            "/svc",
            "--",
            "sh",
            "-c",
            &script,
        ],
    );
    assert_eq!(out.status.code(), Some(7), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], r#"a1 10.0.0.1:80 payload={"zone":"eu"}"#);
    let json: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
    assert_eq!(
        (&json["id"], &json["port"], &json["serviceType"]),
        (&"a1".into(), &80.into(), &"DYNAMIC".into())
    );
    assert_eq!(lines[2], "api a1 /svc/api/a1");

    assert_eq!(stdout_ok(&cs, &["services", "api", "--base-path", "/svc"]), "", "unregistered");
    assert_eq!(stdout_ok(&cs, &["services", "--base-path", "/nothing"]), "");
    assert_eq!(
        stdout_ok(&cs, &["services", "--base-path", "/nothing", "--json"]),
        "{\"base_path\":\"/nothing\",\"names\":[]}\n"
    );
    let bad = rzk(
        &cs,
        &["register", "api", "--address", "h", "--port", "1", "--payload", "{", "--", "true"],
    );
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--payload is not JSON"));
}

/// An `rzk register` without a command, killed when dropped.
struct Registered(Child);

impl Drop for Registered {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn register(cs: &str, id: &str) -> Registered {
    let timeout = SESSION_MS.to_string();
    let child = Command::new(env!("CARGO_BIN_EXE_rzk"))
        .args(["--connect", cs, "register", "web", "--address", "10.0.0.2", "--port", "8080"])
        .args(["--id", id, "--session-timeout-ms", &timeout])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    Registered(child)
}

/// The ids `rzk services web` lists.
fn ids(cs: &str) -> Vec<String> {
    let out = stdout_ok(cs, &["services", "web"]);
    out.lines().map(|l| l.split(' ').next().unwrap().to_string()).collect()
}

/// Waits until the listed ids are `want`; returns when they were.
fn wait_for(cs: &str, want: &[&str], limit: Duration) -> Instant {
    let deadline = Instant::now() + limit;
    loop {
        let now = ids(cs);
        if now == want {
            return Instant::now();
        }
        assert!(Instant::now() < deadline, "listed {now:?}, want {want:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn a_killed_instance_disappears_and_a_live_one_stays(kind: Kind) {
    let server = Server::start(kind);
    let cs = server.hosts();
    let mut doomed = register(&cs, "doomed");
    let mut live = register(&cs, "live");
    wait_for(&cs, &["doomed", "live"], Duration::from_secs(20));

    doomed.0.kill().unwrap();
    let killed = Instant::now();
    let gone = wait_for(&cs, &["live"], GONE_LIMIT);
    eprintln!("SIGKILLed instance gone after {:?}", gone - killed);

    let pid = live.0.id().to_string();
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    let status = live.0.wait().unwrap();
    assert_eq!(status.code(), Some(143));
    assert!(ids(&cs).is_empty(), "unregistered on SIGTERM, not left to expire");
}
