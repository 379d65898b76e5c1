//! The timer task: runs [`rzk_core::Core::tick`] when the core's next deadline comes.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::shared::Inner;

/// How long the timer may sleep at most; bounds the damage of a missed wake-up.
const TIMER_SLEEP_MS_MAX: u64 = 1_000;

/// Runs until aborted: ticks the core when its next deadline passes, and sleeps otherwise until
/// then (at most [`TIMER_SLEEP_MS_MAX`]) or until a pump brings the deadline closer.
pub(crate) async fn timer_loop(inner: Arc<Inner>) {
    loop {
        let now = inner.now();
        let deadline = inner.lock().core.next_deadline();
        if deadline <= now.mono_ms {
            let flush = {
                let mut sh = inner.lock();
                sh.core.tick(inner.now());
                inner.pump(&mut sh)
            };
            flush.run();
            continue;
        }
        let wait_ms = (deadline - now.mono_ms).min(TIMER_SLEEP_MS_MAX);
        inner.timer_target_ms.store(now.mono_ms + wait_ms, Ordering::SeqCst);
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(wait_ms)) => {}
            _ = inner.timer_wake.notified() => {}
        }
    }
}
