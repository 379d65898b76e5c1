//! `rzk`: the command-line entry point.

#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::{CommandFactory as _, Parser, Subcommand};

mod acl;
mod barrier;
mod bench;
mod config;
mod connect;
mod counter;
mod demo;
mod elect;
mod error;
mod jaas;
mod json;
mod leader;
mod lock;
mod lock_status;
mod logging;
mod manual;
mod node;
mod queue;
mod runtime;
mod server;
mod supervise;
mod systemd;
mod ui;
mod watchdog;
mod watchdog_handle;
mod watchdog_proto;
mod zoocfg;
// Service discovery.
mod register;
mod services;
// --metrics-port of rzk elect and rzk lock.
mod client_metrics;

/// ZooKeeper-style coordination in Rust: a ZooKeeper-compatible server, leader election and
/// the tools around them.
#[derive(Debug, Parser)]
#[command(name = "rzk", version, about)]
struct Cli {
    #[command(flatten)]
    connect: connect::Connect,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a ZooKeeper-wire-compatible server.
    Server(Box<server::ServerArgs>),
    /// Join an election and run a command only while leading.
    Elect(elect::ElectArgs),
    /// Run a command only while holding a lock (mutex, read-write lock or semaphore); show
    /// its holders and waiters with --status.
    Lock(lock::LockArgs),
    /// Offer to, take from, or count a queue (Curator's SimpleDistributedQueue layout, or its
    /// DistributedQueue with --curator-envelope).
    Queue(queue::QueueArgs),
    /// Read or add to a counter (Curator's DistributedAtomicLong layout).
    Counter(counter::CounterArgs),
    /// Set, remove or wait on a barrier; run a command inside a double barrier (Curator's
    /// DistributedBarrier and DistributedDoubleBarrier layouts).
    Barrier(barrier::BarrierArgs),
    /// Show the leader and the queue of an election (live with --watch).
    Leader(leader::LeaderArgs),
    /// Play leader-election scenarios (handoffs, a crashed leader, a fair rotation) on an
    /// in-process server and time them.
    Demo(demo::DemoArgs),
    /// Serve a web console that shows the recipes under the tree (who leads, who holds, who
    /// waits, which instances are up), live.
    Ui(ui::UiArgs),
    /// Load a ZooKeeper-protocol server and report throughput and latency.
    Bench(bench::BenchArgs),
    /// Register a service instance (curator-x-discovery layout) while a command runs.
    Register(register::RegisterArgs),
    /// List the services of a registry, or one service's instances.
    Services(services::ServicesArgs),
    /// Get, set (with --version for compare-and-set) or watch a config node; run a command
    /// on every change with watch --exec.
    Config(config::ConfigArgs),
    /// Get or set a node's ACL (zkCli's getAcl and setAcl syntax).
    Acl(acl::AclArgs),
    #[command(flatten)]
    Node(node::NodeCommand),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(manual::CompletionsArgs),
    /// Print the manual page, or write one page per subcommand with --out-dir.
    Man(manual::ManArgs),
    /// Runs a command for `rzk elect` or `rzk lock` and stops it when they cannot (internal).
    #[command(name = watchdog_handle::WATCHDOG_SUBCOMMAND, hide = true)]
    Watchdog(watchdog::WatchdogArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Synchronous, before any runtime: the watchdog starts its command sooner without one,
    // and the generated texts need none.
    match &cli.command {
        Command::Watchdog(args) => return watchdog::run(args),
        Command::Completions(args) => return done(manual::completions(args, Cli::command())),
        Command::Man(args) => return done(manual::man(args, Cli::command())),
        _ => {}
    }
    // Before the runtime's threads exist: these set environment variables.
    match &cli.command {
        Command::Server(args) => {
            jaas::prepare_kerberos_server(args.jaas.as_deref(), &args.jaas_section);
        }
        _ => jaas::prepare_kerberos(cli.connect.jaas.as_deref(), &cli.connect.jaas_section),
    }
    let built = match &cli.command {
        Command::Server(args) => runtime::build(args.io_threads, Some(args.schedule)),
        Command::Bench(args) => runtime::build(None, args.schedule()),
        _ => runtime::build(None, None),
    };
    let rt = match built {
        Ok(rt) => rt,
        Err(e) => {
            return error::CliError::runtime(format!("starting the tokio runtime: {e}")).exit()
        }
    };
    let result = match cli.command {
        Command::Server(args) => logging::init(&args.log).and_then(|()| {
            rt.block_on(server::run(*args, &cli.connect)).map_err(error::CliError::from)
        }),
        Command::Node(cmd) => rt.block_on(node::run(&cli.connect, cmd)),
        Command::Acl(args) => rt.block_on(acl::run(&cli.connect, args)),
        Command::Leader(args) => rt.block_on(leader::run(&cli.connect, args)),
        Command::Counter(args) => rt.block_on(counter::run(&cli.connect, args)),
        Command::Demo(args) => rt.block_on(demo::run(args)),
        Command::Config(args) => rt.block_on(config::run(&cli.connect, args)),
        Command::Bench(args) => rt.block_on(bench::run(&cli.connect, args)),
        Command::Watchdog(_) | Command::Completions(_) | Command::Man(_) => {
            unreachable!("answered before the runtime starts")
        }
        Command::Elect(args) => return status_exit(rt.block_on(elect::run(&cli.connect, args))),
        Command::Lock(args) => return status_exit(rt.block_on(lock::run(&cli.connect, args))),
        Command::Queue(args) => return status_exit(rt.block_on(queue::run(&cli.connect, args))),
        Command::Barrier(args) => {
            return status_exit(rt.block_on(barrier::run(&cli.connect, args)))
        }
        Command::Register(args) => {
            return status_exit(rt.block_on(register::run(&cli.connect, args)))
        }
        Command::Services(args) => rt.block_on(services::run(&cli.connect, args)),
        Command::Ui(args) => rt.block_on(ui::run(&cli.connect, args)),
    };
    done(result)
}

/// The exit of a command that succeeds or fails with its error.
fn done(r: Result<(), error::CliError>) -> ExitCode {
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => e.exit(),
    }
}

/// The exit of a command that returns its own status (the supervised command's).
fn status_exit(r: Result<u8, error::CliError>) -> ExitCode {
    match r {
        Ok(code) => ExitCode::from(code),
        Err(e) => e.exit(),
    }
}
