//! `rzk server`.

use std::net::IpAddr;

use anyhow::Context as _;
use clap::Args;
use rzk_server::{Server, ServerConfig};

/// Flags of `rzk server`. Names follow `zoo.cfg` where ZooKeeper has a setting.
#[derive(Debug, Args)]
pub(crate) struct ServerArgs {
    /// Client port (`clientPort`).
    #[arg(long, default_value_t = 2181)]
    port: u16,
    /// Address to listen on (`clientPortAddress`).
    #[arg(long, default_value = "0.0.0.0")]
    bind: IpAddr,
    /// Tick length in ms (`tickTime`); session timeouts are clamped to [2, 20] ticks.
    #[arg(long, default_value_t = 2000)]
    tick_ms: u32,
    /// Smallest session timeout granted, ms (`minSessionTimeout`; default 2 ticks).
    #[arg(long)]
    min_session_timeout_ms: Option<i32>,
    /// Largest session timeout granted, ms (`maxSessionTimeout`; default 20 ticks).
    #[arg(long)]
    max_session_timeout_ms: Option<i32>,
    /// Keep everything in memory: nothing survives a restart.
    #[arg(long)]
    in_memory: bool,
    /// Comma-separated four-letter words to allow, or `*` (`4lw.commands.whitelist`).
    #[arg(long, default_value = "srvr,ruok")]
    four_letter_words: String,
    /// Allow TTL nodes (`zookeeper.extendedTypesEnabled`).
    #[arg(long)]
    extended_types: bool,
    /// Super user digest, `super:base64(sha1("super:password"))`
    /// (`zookeeper.DigestAuthenticationProvider.superDigest`).
    #[arg(long)]
    super_digest: Option<String>,
    /// Connections per client IP, 0 for unlimited (`maxClientCnxns`).
    #[arg(long, default_value_t = 60)]
    max_client_cnxns: usize,
    /// Largest accepted packet in bytes (`jute.maxbuffer`).
    #[arg(long = "jute-maxbuffer", default_value_t = rzk_proto_default_max())]
    max_packet_bytes: usize,
    /// Interval between container/TTL reaping passes, ms (`znode.container.checkIntervalMs`).
    #[arg(long, default_value_t = 60_000)]
    container_check_interval_ms: u64,
}

const fn rzk_proto_default_max() -> usize {
    0xfffff
}

pub(crate) async fn run(args: ServerArgs) -> anyhow::Result<()> {
    let mut config = ServerConfig::new(crate::bind_addr(args.bind, args.port));
    config.core = rzk_core::Config::with_tick_ms(args.tick_ms);
    if let Some(ms) = args.min_session_timeout_ms {
        config.core.session_timeout_ms_min = ms;
    }
    if let Some(ms) = args.max_session_timeout_ms {
        config.core.session_timeout_ms_max = ms;
    }
    anyhow::ensure!(
        config.core.session_timeout_ms_min <= config.core.session_timeout_ms_max,
        "minimum session timeout {} ms exceeds maximum {} ms",
        config.core.session_timeout_ms_min,
        config.core.session_timeout_ms_max
    );
    config.core.four_letter_words = args
        .four_letter_words
        .split(',')
        .map(|w| w.trim().to_string())
        .filter(|w| !w.is_empty())
        .collect();
    config.core.extended_types_enabled = args.extended_types;
    config.core.super_digest = args.super_digest;
    config.core.container_check_interval_ms = args.container_check_interval_ms;
    config.core.seed = std::collections::hash_map::RandomState::new().hash_one(0u8);
    config.max_client_connections_per_ip = args.max_client_cnxns;
    config.max_packet_bytes = args.max_packet_bytes;
    if !args.in_memory {
        tracing::warn!("durable storage is not implemented yet: running in memory");
    }
    let server = Server::start(config).await.context("starting the server")?;
    tracing::info!("serving on {}", server.connect_string());
    shutdown_signal().await;
    tracing::info!("shutting down");
    server.shutdown().await;
    Ok(())
}

use std::hash::BuildHasher as _;

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("installing the SIGTERM handler");
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}
