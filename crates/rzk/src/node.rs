//! zkCli-style node commands: `ls`, `get`, `set`, `create`, `delete`, `stat`, `tree`, `watch`.

use std::time::Duration;

use clap::{Args, Subcommand};
use rzk_client as zk;

use crate::connect::Connect;
use crate::error::{zk_error, CliError};

/// A node command.
#[derive(Debug, Subcommand)]
pub(crate) enum NodeCommand {
    /// List a node's children, sorted.
    Ls {
        /// The node.
        path: String,
        /// Also print the node's Stat.
        #[arg(short = 's', long)]
        stat: bool,
    },
    /// Print a node's data.
    Get {
        /// The node.
        path: String,
        /// Also print the node's Stat.
        #[arg(short = 's', long)]
        stat: bool,
    },
    /// Set a node's data.
    Set {
        /// The node.
        path: String,
        /// The new data.
        data: String,
        /// Only if the node is at this version.
        #[arg(short = 'v', long)]
        version: Option<i32>,
    },
    /// Create a node.
    Create(CreateArgs),
    /// Delete a node.
    Delete {
        /// The node.
        path: String,
        /// Delete its descendants too (zkCli's deleteall).
        #[arg(short = 'r', long)]
        recursive: bool,
        /// Only if the node is at this version.
        #[arg(short = 'v', long)]
        version: Option<i32>,
    },
    /// Print a node's Stat.
    Stat {
        /// The node.
        path: String,
    },
    /// Print a subtree.
    Tree {
        /// The root of the subtree.
        #[arg(default_value = "/")]
        path: String,
    },
    /// Print changes to a node (and, with -r, its descendants) as they happen. A reader too
    /// slow for the changes is told on stderr where some were dropped.
    Watch {
        /// The node.
        path: String,
        /// Watch the whole subtree (a persistent recursive watch).
        #[arg(short = 'r', long)]
        recursive: bool,
        /// Stop after this many events.
        #[arg(long)]
        count: Option<usize>,
    },
}

/// `create` flags, as zkCli's.
#[derive(Debug, Args)]
pub(crate) struct CreateArgs {
    /// Ephemeral: deleted when this command's session ends (which is at once).
    #[arg(short = 'e')]
    ephemeral: bool,
    /// Sequential: a 10-digit counter is appended to the name.
    #[arg(short = 's')]
    sequential: bool,
    /// Container: deleted once it has had children and has none left.
    #[arg(short = 'c', conflicts_with_all = ["ephemeral", "sequential", "ttl_ms"])]
    container: bool,
    /// TTL in ms: deleted when unmodified and childless for that long (server needs TTLs on).
    #[arg(short = 't', value_name = "TTL_MS", conflicts_with = "ephemeral")]
    ttl_ms: Option<u64>,
    /// Its ACL, as `rzk acl set` takes it (default `world:anyone:cdrwa`).
    #[arg(long, value_parser = crate::acl::parse_acl)]
    acl: Option<crate::acl::AclList>,
    /// The node.
    path: String,
    /// Its data.
    #[arg(default_value = "")]
    data: String,
}

fn print_stat(s: &zk::Stat) {
    println!("cZxid = {:#x}", s.czxid);
    println!("ctime = {}", s.ctime);
    println!("mZxid = {:#x}", s.mzxid);
    println!("mtime = {}", s.mtime);
    println!("pZxid = {:#x}", s.pzxid);
    println!("cversion = {}", s.cversion);
    println!("dataVersion = {}", s.version);
    println!("aclVersion = {}", s.aversion);
    println!("ephemeralOwner = {:#x}", s.ephemeral_owner);
    println!("dataLength = {}", s.data_length);
    println!("numChildren = {}", s.num_children);
}

/// Runs a node command.
pub(crate) async fn run(connect: &Connect, cmd: NodeCommand) -> Result<(), CliError> {
    let client = connect.client().await?;
    let c = &client;
    match cmd {
        NodeCommand::Ls { path, stat } => {
            let (mut children, s) = c.get_children(&path).await.map_err(|e| zk_error(&path, e))?;
            children.sort();
            println!("[{}]", children.join(", "));
            if stat {
                print_stat(&s);
            }
        }
        NodeCommand::Get { path, stat } => {
            let (data, s) = c.get_data(&path).await.map_err(|e| zk_error(&path, e))?;
            println!("{}", String::from_utf8_lossy(&data));
            if stat {
                print_stat(&s);
            }
        }
        NodeCommand::Set { path, data, version } => {
            c.set_data(&path, data.as_bytes(), version).await.map_err(|e| zk_error(&path, e))?;
        }
        NodeCommand::Stat { path } => {
            let s = c.check_stat(&path).await.map_err(|e| zk_error(&path, e))?;
            print_stat(&s.ok_or_else(|| zk_error(&path, zk::Error::NoNode))?);
        }
        NodeCommand::Create(a) => {
            let mode = match (a.ephemeral, a.sequential, a.container) {
                (_, _, true) => zk::CreateMode::Container,
                (true, true, _) => zk::CreateMode::EphemeralSequential,
                (true, false, _) => zk::CreateMode::Ephemeral,
                (false, true, _) => zk::CreateMode::PersistentSequential,
                (false, false, _) => zk::CreateMode::Persistent,
            };
            let acls = match &a.acl {
                Some(list) => zk::Acls::new(&list.0),
                None => zk::Acls::anyone_all(),
            };
            let mut options = mode.with_acls(acls);
            if let Some(ttl) = a.ttl_ms {
                options = options.with_ttl(Duration::from_millis(ttl));
            }
            let (_, seq) = c
                .create(&a.path, a.data.as_bytes(), &options)
                .await
                .map_err(|e| zk_error(&a.path, e))?;
            if a.sequential {
                println!("Created {}{seq}", a.path);
            } else {
                println!("Created {}", a.path);
            }
        }
        NodeCommand::Delete { path, recursive, version } => {
            if recursive {
                delete_all(c, &path).await?;
            } else {
                c.delete(&path, version).await.map_err(|e| zk_error(&path, e))?;
            }
        }
        NodeCommand::Tree { path } => {
            c.check_stat(&path)
                .await
                .map_err(|e| zk_error(&path, e))?
                .ok_or_else(|| zk_error(&path, zk::Error::NoNode))?;
            println!("{path}");
            print_tree(c, &path, 1).await?;
        }
        NodeCommand::Watch { path, recursive, count } => {
            c.check_stat(&path).await.map_err(|e| zk_error(&path, e))?;
            let mode = if recursive {
                zk::AddWatchMode::PersistentRecursive
            } else {
                zk::AddWatchMode::Persistent
            };
            let mut w = c.watch(&path, mode).await.map_err(|e| zk_error(&path, e))?;
            eprintln!("watching {path}{}", if recursive { " and its descendants" } else { "" });
            let mut seen = 0;
            while count.is_none_or(|n| seen < n) {
                let ev = w.changed().await;
                if ev.event_type == zk::EventType::Session {
                    if ev.session_state.is_terminated() {
                        return Err(CliError::runtime(format!(
                            "session ended: {:?}",
                            ev.session_state
                        )));
                    }
                    continue;
                }
                if ev.event_type == zk::EventType::Lagged {
                    // Not a change: changes since the last line printed may be missing.
                    eprintln!(
                        "changes under {} may be missing (this reader fell behind, or the \
                         session reconnected)",
                        ev.path
                    );
                    continue;
                }
                println!("{:?} {}", ev.event_type, ev.path);
                seen += 1;
            }
        }
    }
    Ok(())
}

fn child_path(parent: &str, child: &str) -> String {
    if parent == "/" {
        format!("/{child}")
    } else {
        format!("{parent}/{child}")
    }
}

/// Prints the subtree under `path` in pre-order, two spaces per level.
async fn print_tree(c: &zk::Client, path: &str, depth: usize) -> Result<(), CliError> {
    let mut stack = vec![(path.to_string(), depth)];
    while let Some((p, d)) = stack.pop() {
        let mut children = match c.list_children(&p).await {
            Ok(ch) => ch,
            Err(zk::Error::NoNode) => continue,
            Err(e) => return Err(zk_error(&p, e)),
        };
        children.sort();
        for child in children.iter().rev() {
            stack.push((child_path(&p, child), d + 1));
        }
        if p != path {
            println!("{}{}", "  ".repeat(d - 1), name(&p));
        }
    }
    Ok(())
}

fn name(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

async fn delete_all(c: &zk::Client, path: &str) -> Result<(), CliError> {
    // Post-order: collect the subtree, delete deepest first.
    let mut order = Vec::new();
    let mut stack = vec![path.to_string()];
    while let Some(p) = stack.pop() {
        match c.list_children(&p).await {
            Ok(children) => stack.extend(children.iter().map(|ch| child_path(&p, ch))),
            Err(zk::Error::NoNode) if p != path => continue,
            Err(e) => return Err(zk_error(&p, e)),
        }
        order.push(p);
    }
    for p in order.iter().rev() {
        match c.delete(p, None).await {
            Ok(()) | Err(zk::Error::NoNode) => {}
            Err(e) => return Err(zk_error(p, e)),
        }
    }
    Ok(())
}
