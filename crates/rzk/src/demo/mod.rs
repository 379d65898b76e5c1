//! `rzk demo`: the flags of the demo, here; the scenarios it plays, in `scenarios`.

use std::time::Duration;

use clap::Args;

use crate::error::CliError;
use scenarios::DemoConfig;

mod scenarios;

/// Flags of `rzk demo`.
#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// Candidates in the leader-latch scenarios.
    #[arg(long, default_value_t = 5)]
    candidates: usize,
    /// Session timeout of every candidate, ms (bounds the crash failover).
    #[arg(long, default_value_t = 2_000)]
    session_timeout_ms: u64,
    /// Leadership rotations in the selector scenario.
    #[arg(long, default_value_t = 6)]
    rotations: usize,
}

/// Runs `rzk demo`.
pub(crate) async fn run(a: DemoArgs) -> Result<(), CliError> {
    let cfg = DemoConfig {
        candidates: a.candidates,
        session_timeout: Duration::from_millis(a.session_timeout_ms),
        rotations: a.rotations,
    };
    scenarios::run(cfg).await.map_err(|e| CliError::runtime(format!("demo: {e:#}")))
}
