//! `rzk config get|set|watch PATH`: a configuration node (one node holding the config, read
//! and watched by every client, written by versioned compare-and-set) from the shell, on
//! rzk-recipes' `NodeCache`.

use std::process::Stdio;

use clap::{Args, Subcommand};
use rzk_recipes::cache::{CachedNode, NodeCache, NodeState};
use tokio::io::AsyncWriteExt;
use tokio::sync::watch;

use crate::connect::Connect;
use crate::error::CliError;
use crate::json;

/// The exit status of a `set --version` whose version moved (a lost compare-and-set); a
/// missing node (`set --version`, `get`), a node the session may not write and a bad path exit
/// 2 (usage), a lost connection 1.
const EXIT_VERSION_MOVED: u8 = 3;
/// The version `watch --exec` gives a command when the node does not exist.
const ABSENT_VERSION: i32 = -1;

/// `rzk config`'s subcommands.
#[derive(Debug, Args)]
pub(crate) struct ConfigArgs {
    #[command(subcommand)]
    op: ConfigOp,
}

#[derive(Debug, Subcommand)]
enum ConfigOp {
    /// Print the node's data (exit 2 if it does not exist).
    Get {
        /// The config node.
        path: String,
        /// Print {"path": "...", "version": N, "data": "..."}.
        #[arg(long)]
        json: bool,
    },
    /// Write DATA (or standard input) and print the new version; missing parents are created.
    /// Exit 3 if --version is stale, 2 for a missing node with --version or a node whose ACL
    /// forbids the write.
    Set {
        /// The config node.
        path: String,
        /// The data; standard input when absent.
        data: Option<String>,
        /// Write only if the node is at this version (compare-and-set); exit 3 if it moved.
        #[arg(long)]
        version: Option<i32>,
    },
    /// Print "VERSION DATA" now and after every change (version -1: absent), or run --exec
    /// with the data.
    Watch {
        /// The config node.
        path: String,
        /// Run this shell command on every change, with the data on its standard input and
        /// RZK_CONFIG_VERSION set (-1 for an absent node); never two at once, changes made
        /// while it runs coalesce into one more run with the latest data.
        #[arg(long)]
        exec: Option<String>,
        /// Print {"path": "...", "version": N, "data": "..."} lines (version -1: absent).
        #[arg(long)]
        json: bool,
    },
}

/// Runs `rzk config`.
pub(crate) async fn run(connect: &Connect, args: ConfigArgs) -> Result<(), CliError> {
    let path = match &args.op {
        ConfigOp::Get { path, .. } | ConfigOp::Set { path, .. } | ConfigOp::Watch { path, .. } => {
            path.clone()
        }
    };
    let bad = |e: rzk_recipes::Error| CliError::usage(format!("{path}: {e}"));
    let session = connect.election_session(None).await?;
    let cache = NodeCache::new(&session, &path).map_err(bad)?;
    let result = match args.op {
        ConfigOp::Get { json, .. } => {
            cache.initialized().await.map_err(bad)?;
            match cache.current() {
                Some(node) => {
                    print_state(&path, &Some(node), json);
                    Ok(())
                }
                None => Err(CliError::usage(format!("{path}: no node"))),
            }
        }
        ConfigOp::Set { data, version, .. } => {
            let data = match data {
                Some(d) => d.into_bytes(),
                None => read_stdin().await?,
            };
            match cache.set(&data, version).await {
                Ok(node) => {
                    println!("{}", node.version());
                    Ok(())
                }
                Err(e) => Err(set_failed(&path, version, e)),
            }
        }
        ConfigOp::Watch { exec, json, .. } => watch_changes(&cache, exec, json).await,
    };
    cache.close();
    session.close().await;
    result
}

/// Prints or runs `exec` on every state of the node, until the cache ends.
async fn watch_changes(
    cache: &NodeCache,
    exec: Option<String>,
    json: bool,
) -> Result<(), CliError> {
    let path = cache.path().to_string();
    let mut changes = cache.changes();
    let Some(exec) = exec else {
        while let Some(state) = changes.next().await {
            match state {
                Ok(state) => print_change(&path, &state, json),
                Err(e) => eprintln!("rzk: {path}: {e}"),
            }
        }
        return Err(CliError::runtime(format!("{path}: the watch ended")));
    };
    // The latest state, coalesced: the runner takes whatever is newest when it is free.
    let (tx, mut rx) = watch::channel::<Option<NodeState>>(None);
    let runner = tokio::spawn(async move {
        while rx.changed().await.is_ok() {
            let state = rx.borrow_and_update().clone();
            if let Some(state) = state {
                if let Err(e) = run_once(&exec, &state, json).await {
                    eprintln!("rzk: {e}");
                }
            }
        }
    });
    while let Some(state) = changes.next().await {
        match state {
            Ok(state) => {
                let _ = tx.send(Some(state));
            }
            Err(e) => eprintln!("rzk: {path}: {e}"),
        }
    }
    drop(tx);
    let _ = runner.await;
    Err(CliError::runtime(format!("{path}: the watch ended")))
}

/// The error of a failed `set`: the exit status says which kind (see [`EXIT_VERSION_MOVED`]).
fn set_failed(path: &str, version: Option<i32>, e: rzk_recipes::Error) -> CliError {
    match (e, version) {
        (rzk_recipes::Error::BadVersion { .. }, Some(v)) => CliError {
            code: EXIT_VERSION_MOVED,
            message: format!(
                "{path}: not written: the node is no longer at version {v} (read it again)"
            ),
        },
        (e @ rzk_recipes::Error::NoNode { .. }, Some(_)) => {
            CliError::usage(format!("{e} (set --version writes only an existing node)"))
        }
        (e @ rzk_recipes::Error::NoAuth { .. }, _) => {
            CliError::usage(format!("{e} (the node's ACL does not let this session write it)"))
        }
        (e, _) => CliError::usage(format!("{path}: {e}")),
    }
}

/// Runs `exec` once with `state`, and waits for it.
async fn run_once(exec: &str, state: &NodeState, json: bool) -> Result<(), String> {
    let (data, version) = match state {
        Some(node) => (node.data.clone(), node.version()),
        None => (Vec::new(), ABSENT_VERSION),
    };
    let mut child = tokio::process::Command::new("sh")
        .args(["-c", exec])
        .env("RZK_CONFIG_VERSION", version.to_string())
        .stdin(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {exec:?}: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A command that does not read its input closes the pipe; that is its choice.
        let _ = stdin.write_all(&data).await;
    }
    let status = child.wait().await.map_err(|e| format!("{exec:?}: {e}"))?;
    if json {
        #[derive(serde::Serialize)]
        struct Ran {
            version: i32,
            status: i32,
        }
        println!("{}", json::line(&Ran { version, status: status.code().unwrap_or(-1) }));
    }
    Ok(())
}

/// One line per change: `--json`'s document, else the version and the data.
fn print_change(path: &str, state: &Option<CachedNode>, json: bool) {
    match state {
        _ if json => print_state(path, state, true),
        Some(node) => println!("{} {}", node.version(), String::from_utf8_lossy(&node.data)),
        None => println!("{ABSENT_VERSION} "),
    }
}

fn print_state(path: &str, state: &Option<CachedNode>, json: bool) {
    let (data, version) = match state {
        Some(node) => (String::from_utf8_lossy(&node.data).into_owned(), node.version()),
        None => (String::new(), ABSENT_VERSION),
    };
    if json {
        #[derive(serde::Serialize)]
        struct Node<'a> {
            path: &'a str,
            version: i32,
            data: &'a str,
        }
        println!("{}", json::line(&Node { path, version, data: &data }));
    } else {
        println!("{data}");
    }
}

async fn read_stdin() -> Result<Vec<u8>, CliError> {
    let read = tokio::task::spawn_blocking(|| {
        let mut data = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut data).map(|_| data)
    });
    match read.await {
        Ok(Ok(data)) => Ok(data),
        Ok(Err(e)) => Err(CliError::runtime(format!("reading standard input: {e}"))),
        Err(e) => Err(CliError::runtime(format!("reading standard input: {e}"))),
    }
}
