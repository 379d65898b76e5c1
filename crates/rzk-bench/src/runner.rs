//! Runs one benchmark: picks the workload's loop, times it and reports.

use std::sync::Arc;
use std::time::Instant;

use crate::config::{BenchConfig, Strategy, Workload};
use crate::error::BenchError;
use crate::report::{LoadReport, Report};
use crate::{
    counter, discovery, election, fanout, handoff_event, lock, pipeline, propagation, queue, race,
    session_failover, sessions,
};

/// Runs `cfg`'s workload against the servers of `hosts` (a ZooKeeper connect string) and
/// reports what it measured. Needs a multi-threaded tokio runtime.
pub async fn run(hosts: &str, cfg: BenchConfig) -> Result<Report, BenchError> {
    let runs_strategy = match cfg.strategy {
        Strategy::Predecessor => true,
        Strategy::Herd => cfg.workload == Workload::Handoff,
        Strategy::Race => cfg.workload == Workload::HandoffEvent,
    };
    if !runs_strategy {
        return Err(BenchError::Strategy(cfg.workload, cfg.strategy));
    }
    let pipelined = matches!(
        cfg.workload,
        Workload::Create
            | Workload::Set
            | Workload::Get
            | Workload::Mixed
            | Workload::Churn
            | Workload::Populate
    );
    if cfg.tls.is_some() && !pipelined {
        return Err(BenchError::Tls(cfg.workload));
    }
    match cfg.workload {
        Workload::Handoff => return Ok(Report::Election(election::handoff(&cfg, hosts).await?)),
        Workload::Selector => return Ok(Report::Election(election::selector(&cfg, hosts).await?)),
        Workload::Failover => return Ok(Report::Election(election::failover(&cfg, hosts).await?)),
        Workload::MutexHandoff => {
            return Ok(Report::Election(lock::mutex_handoff(&cfg, hosts).await?))
        }
        Workload::MutexUncontended => {
            return Ok(Report::Election(lock::mutex_uncontended(&cfg, hosts).await?))
        }
        Workload::Semaphore => return Ok(Report::Election(lock::semaphore(&cfg, hosts).await?)),
        Workload::QueuePairs => return Ok(Report::Election(queue::pairs(&cfg, hosts).await?)),
        Workload::CounterAdd => return Ok(Report::Election(counter::adds(&cfg, hosts).await?)),
        Workload::ConfigPropagation => {
            // On a worker, as fanout's rounds are: the writer's wake-ups then stay off the
            // main thread.
            let hosts = hosts.to_owned();
            let run = tokio::spawn(async move { propagation::run(&cfg, &hosts).await });
            return Ok(Report::Propagation(run.await??));
        }
        Workload::DiscoveryExpiry => {
            return Ok(Report::Election(discovery::expiry(&cfg, hosts).await?))
        }
        Workload::SessionFailover => {
            return Ok(Report::Election(session_failover::run(&cfg, hosts).await?))
        }
        Workload::Sessions => return Ok(Report::Sessions(sessions::run(&cfg, hosts).await?)),
        _ => {}
    }
    let handoff = matches!(cfg.workload, Workload::HandoffEvent | Workload::HandoffRead);
    if handoff && cfg.participants < 2 {
        return Err(BenchError::NoSuccessor);
    }
    if cfg.strategy == Strategy::Race {
        return Ok(Report::Election(race::run(&cfg, hosts).await?));
    }
    pipeline::setup(&cfg, hosts).await?;
    let cfg = Arc::new(cfg);
    let started = Instant::now();
    let deadline = started + cfg.duration;
    let mut after_ack = None;
    let samples = if handoff {
        let list = cfg.workload == Workload::HandoffRead;
        vec![handoff_event::run(&cfg, hosts, list, deadline).await?]
    } else if matches!(cfg.workload, Workload::Fanout | Workload::FanoutPersistent) {
        // On a worker, not in `block_on`: the last watcher's wake-up then finds the setter on
        // its own thread's queue instead of waking the main thread, twice a round.
        let (cfg, hosts) = (cfg.clone(), hosts.to_owned());
        let run = tokio::spawn(async move { fanout::run(&cfg, &hosts, deadline).await });
        let (rounds, tails) = run.await??;
        after_ack = Some(tails);
        vec![rounds]
    } else {
        pipeline::run(&cfg, hosts, deadline).await?
    };
    let seconds = started.elapsed().as_secs_f64();
    let report = LoadReport::new(cfg.workload, &samples, seconds);
    Ok(Report::Load(match &after_ack {
        Some(tails) => report.with_after_ack(tails),
        None => report,
    }))
}
