//! Scenario 5: two jobs that must not overlap take turns with one InterProcessMutex; the
//! second holds as soon as the first releases, with a greater fencing token.

use std::time::{Duration, Instant};

use anyhow::bail;
use rzk_recipes::lock::{InterProcessMutex, LockLayout, LockStatus, MutexOptions};

use super::stage::{Kept, Stage};

/// The lock the jobs share.
const LOCK_PATH: &str = "/demo/locks/nightly";

/// How long the second job may take to queue.
const QUEUE_WITHIN: Duration = Duration::from_secs(5);

/// Plays the handover; an error if the second holder's token is not greater.
pub(super) async fn play(stage: &Stage, kept: &mut Kept) -> anyhow::Result<Duration> {
    println!("\n== 5. two jobs take turns with a lock at {LOCK_PATH}; each token is greater");
    let (s1, s2) = (stage.session().await?, stage.session().await?);
    let mutex =
        |s, id: &str| InterProcessMutex::new(s, LOCK_PATH, MutexOptions::default().with_id(id));
    let (report, backup) = (mutex(&s1, "nightly-report")?, mutex(&s2, "nightly-backup")?);
    let first = report.acquire().await?;
    stage.log(format_args!("nightly-report holds the lock, token {}", first.token()));
    let waiting = tokio::spawn(async move { backup.acquire().await.map(|g| (backup, g)) });
    let queued = async {
        for _ in 0..QUEUE_WITHIN.as_millis() {
            let status = LockStatus::read(&s1, LOCK_PATH, LockLayout::Mutex).await?;
            if !status.waiters.is_empty() {
                return Ok::<_, rzk_recipes::Error>(true);
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        Ok(false)
    };
    if !queued.await? {
        bail!("nightly-backup did not queue within {QUEUE_WITHIN:?}");
    }
    stage.log("nightly-backup waits behind it");
    let token = first.token();
    let released = Instant::now();
    first.release().await?;
    let (backup, second) = waiting.await??;
    let took = released.elapsed();
    stage.log(format_args!(
        "nightly-report released; nightly-backup holds after {:.2} ms, token {} > {token}",
        took.as_secs_f64() * 1e3,
        second.token()
    ));
    if second.token() <= token {
        bail!("the second holder's token {} is not greater than {token}", second.token());
    }
    kept.keep((s1, s2, report, backup, second));
    Ok(took)
}
