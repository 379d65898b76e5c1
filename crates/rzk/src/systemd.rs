//! The service manager's notification protocol (sd_notify(3)) for `rzk server`: READY=1 once
//! the log is recovered and the client port accepts connections, STOPPING=1 as a stop begins,
//! and WATCHDOG=1 while the server works, when the unit asks for it with `WatchdogSec=`.
//! Without `NOTIFY_SOCKET` (not under systemd, or not `Type=notify`) every call does nothing.

use std::convert::Infallible;
use std::time::Duration;

use rzk_server::Liveness;
use sd_notify::NotifyState;

/// The server is serving: its log recovered, its port bound and accepting.
pub(crate) fn ready(status: &str) {
    send(&[NotifyState::Ready, NotifyState::Status(status)]);
}

/// A stop has begun; the log is synced before the process exits.
pub(crate) fn stopping() {
    send(&[NotifyState::Stopping, NotifyState::Status("stopping")]);
}

/// Feeds the service manager's watchdog at half its period (sd_watchdog_enabled(3)) while
/// `server` works; a server that failed or whose core stays busy a whole half-period goes
/// unfed, and systemd restarts it. Never returns; pending for ever when no watchdog is set.
///
/// # Cancellation safety
/// Safe: dropping it only stops the feeding.
pub(crate) async fn watchdog(server: Liveness) -> Infallible {
    let Some(period) = sd_notify::watchdog_enabled() else {
        return std::future::pending().await;
    };
    let half = period / 2;
    let mut tick = tokio::time::interval(half);
    loop {
        tick.tick().await;
        let probe = server.clone();
        // The probe may block on the core's lock: a blocking thread, not a runtime worker.
        let alive = tokio::task::spawn_blocking(move || probe.check(probe_within(half)))
            .await
            .unwrap_or_else(|e| Err(format!("the probe failed: {e}")));
        match alive {
            Ok(()) => send(&[NotifyState::Watchdog]),
            Err(why) => tracing::error!(%why, "not feeding systemd's watchdog"),
        }
    }
}

/// How long the probe waits for the core: most of the half-period, leaving room to send.
fn probe_within(half: Duration) -> Duration {
    half * 3 / 4
}

fn send(states: &[NotifyState<'_>]) {
    if let Err(e) = sd_notify::notify(states) {
        tracing::warn!(%e, "cannot notify the service manager at NOTIFY_SOCKET");
    }
}
