//! What the scenarios on a real ZooKeeper ensemble share: their session timeout, sessions
//! placed on (or off) a given member, and the harness's blocking probes run off the runtime's
//! scheduling.

use std::time::Duration;

use rzk_recipes::session::{Session, SessionConfig};
use rzk_testkit::ensemble::Ensemble;

/// The session timeout on an ensemble, longer than the other failure tests' 4 s: a ZAB
/// re-election of three JVMs plus the client's reconnect back-off must fit inside the
/// leader's lease with room to spare on a loaded machine (it took 0.46-1.3 s when idle).
pub const T: Duration = Duration::from_secs(10);

/// The session's id as the harness's `cons` reports it.
pub fn sid(s: &Session) -> String {
    format!("{:#x}", s.session_id().expect("session id").0)
}

/// Runs a blocking harness call (a four-letter word, a kill) without stalling the runtime.
pub fn blocking<R>(f: impl FnOnce() -> R) -> R {
    tokio::task::block_in_place(f)
}

/// A session configuration with [`T`].
pub fn config(hosts: &str) -> SessionConfig {
    SessionConfig::new(hosts).with_session_timeout(T)
}

/// A session placed on node `node` (or, with `on` false, anywhere else): the client's
/// shuffle decides, so sessions placed elsewhere are closed and opened again.
pub async fn session_placed(ens: &Ensemble, hosts: &str, node: usize, on: bool) -> Session {
    for _ in 0..40 {
        let s = Session::connect(config(hosts)).await.expect("connect");
        if blocking(|| ens.sessions_on(node).contains(&sid(&s))) == on {
            return s;
        }
        s.close().await;
    }
    panic!("no session placed {} node {} in 40 tries", if on { "on" } else { "off" }, node + 1);
}
