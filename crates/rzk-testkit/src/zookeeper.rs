//! Apache ZooKeeper 3.8 standalone, from the Debian jars, on a free loopback port with its data
//! in a directory the caller owns.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::four_letter::four_letter_local;
use crate::java::java;
use crate::ports::free_port;

/// How long a ZooKeeper JVM may take to serve after it is started.
pub const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// How often readiness is probed.
const READY_POLL: Duration = Duration::from_millis(50);

/// The settings of a standalone server.
#[derive(Debug, Clone)]
pub struct Settings {
    pub tick_ms: u32,
    /// `znode.container.checkIntervalMs`: how often empty containers are reaped.
    pub container_check_ms: u64,
}

/// Starts `main_class` (`ZooKeeperServerMain` or `QuorumPeerMain`) with `cfg`, its output
/// appended to `log`, with JVM settings small enough for several on two cores.
pub(crate) fn spawn(main_class: &str, cfg: &Path, log: &Path, properties: &[String]) -> Child {
    let log = std::fs::File::create(log).expect("server log");
    java(&[])
        .arg("-Xmx256m")
        .arg("-XX:+UseSerialGC")
        .arg("-XX:TieredStopAtLevel=1")
        .arg("-Dzookeeper.extendedTypesEnabled=true")
        .args(properties)
        .arg("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn")
        .arg(main_class)
        .arg(cfg)
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("log"))
        .stderr(log)
        .spawn()
        .expect("start java (is the Debian zookeeper package installed?)")
}

/// Asserts that the ZooKeeper answering on `port` is the one keeping its data in `data_dir`: a
/// port picked free can be taken by another process before the server meant for it binds it,
/// and a test would then talk to that process's server.
pub fn assert_served_by(port: u16, data_dir: &Path) {
    let conf = four_letter_local(port, "conf").unwrap_or_default();
    assert!(
        conf.contains(&format!("dataDir={}", data_dir.display())),
        "port {port} is served by another server, not the ZooKeeper of {}:\n{conf}",
        data_dir.display()
    );
}

/// A standalone ZooKeeper in `dir` (`zoo.cfg`, `server.log`, `data/`), killed on drop.
pub struct ZooKeeper {
    child: Option<Child>,
    port: u16,
    dir: PathBuf,
    properties: Vec<String>,
}

impl ZooKeeper {
    /// Writes the configuration into `dir`, starts the server on a free port and waits until
    /// it serves.
    pub fn start(dir: &Path, settings: &Settings) -> ZooKeeper {
        ZooKeeper::start_with(dir, settings, "")
    }

    /// [`ZooKeeper::start`] with `extra` appended to `zoo.cfg` (`key=value` lines, each ending
    /// in a newline), for the keys a test compares rzk's handling of.
    pub fn start_with(dir: &Path, settings: &Settings, extra: &str) -> ZooKeeper {
        ZooKeeper::start_with_properties(dir, settings, extra, &[])
    }

    /// [`ZooKeeper::start_with`] with JVM system properties (`-Dkey=value`) too, for the
    /// settings ZooKeeper reads only there (`java.security.auth.login.config`).
    pub fn start_with_properties(
        dir: &Path,
        settings: &Settings,
        extra: &str,
        jvm: &[String],
    ) -> ZooKeeper {
        let port = free_port();
        let text = format!(
            "tickTime={}\ndataDir={}\nclientPort={port}\nclientPortAddress=127.0.0.1\n\
             maxClientCnxns=0\nadmin.enableServer=false\n4lw.commands.whitelist=*\n\
             extendedTypesEnabled=true\n{extra}",
            settings.tick_ms,
            dir.join("data").display()
        );
        std::fs::write(dir.join("zoo.cfg"), text).expect("zoo.cfg");
        let mut properties =
            vec![format!("-Dznode.container.checkIntervalMs={}", settings.container_check_ms)];
        properties.extend_from_slice(jvm);
        let mut zk = ZooKeeper { child: None, port, dir: dir.to_path_buf(), properties };
        zk.resume();
        zk
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The connect string.
    pub fn hosts(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// SIGKILL; the data stays.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts the server again on the same port and data (a no-op while it runs) and waits
    /// until it serves.
    pub fn resume(&mut self) {
        if self.child.is_some() {
            return;
        }
        let (cfg, log) = (self.dir.join("zoo.cfg"), self.dir.join("server.log"));
        let mut child =
            spawn("org.apache.zookeeper.server.ZooKeeperServerMain", &cfg, &log, &self.properties);
        self.wait_ready(&mut child);
        self.child = Some(child);
    }

    /// Stops the server and starts it again on the same port and data.
    pub fn restart(&mut self) {
        self.stop();
        self.resume();
    }

    fn wait_ready(&self, child: &mut Child) {
        let deadline = Instant::now() + READY_TIMEOUT;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = child.try_wait() {
                let log = std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
                panic!("ZooKeeper exited with {status} before it was ready:\n{log}");
            }
            if four_letter_local(self.port, "srvr").is_ok_and(|o| o.contains("Mode:")) {
                assert_served_by(self.port, &self.dir.join("data"));
                return;
            }
            std::thread::sleep(READY_POLL);
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("ZooKeeper on port {} not ready after {READY_TIMEOUT:?}", self.port);
    }
}

impl Drop for ZooKeeper {
    fn drop(&mut self) {
        self.stop();
    }
}
