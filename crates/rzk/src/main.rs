//! `rzk`: the command-line entry point.

#![forbid(unsafe_code)]

use anyhow::Context as _;
use clap::{Parser, Subcommand};

mod server;
mod zoocfg;

/// ZooKeeper-style coordination in Rust: a ZooKeeper-compatible server, leader election and
/// the tools around them.
#[derive(Debug, Parser)]
#[command(name = "rzk", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a ZooKeeper-wire-compatible server.
    Server(server::ServerArgs),
}

fn init_logging() {
    let level = std::env::var("RZK_LOG")
        .ok()
        .and_then(|l| l.parse::<tracing::Level>().ok())
        .unwrap_or(tracing::Level::INFO);
    tracing_subscriber::fmt().with_max_level(level).with_writer(std::io::stderr).init();
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    init_logging();
    match cli.command {
        Command::Server(args) => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("starting the tokio runtime")?;
            rt.block_on(server::run(args))
        }
    }
}
