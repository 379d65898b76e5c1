//! `rzk acl get|set PATH`, and the ACL syntax zkCli takes: a comma-separated list of
//! `scheme:id:perms` entries, the permissions a word of `c` (create), `d` (delete), `r`
//! (read), `w` (write), `a` (admin). The id is everything between the first and the last
//! colon, so `digest:user:hash:cdrwa` and `ip:10.0.0.0/8:r` read as zkCli reads them.

use clap::{Args, Subcommand};
use rzk_client as zk;

use crate::connect::Connect;
use crate::error::zk_error;
use crate::error::CliError;

/// The most entries one ACL may have here (rzk server's `acl_entries_max`, which ZooKeeper's
/// clients never come near).
const ACL_ENTRIES_MAX: usize = 1024;

/// `rzk acl`.
#[derive(Debug, Args)]
pub(crate) struct AclArgs {
    #[command(subcommand)]
    command: AclCommand,
}

#[derive(Debug, Subcommand)]
enum AclCommand {
    /// Print a node's ACL, one entry per line as `scheme:id:perms`, and its aclVersion.
    Get {
        /// The node.
        path: String,
    },
    /// Set a node's ACL (zkCli's setAcl).
    Set {
        /// The node.
        path: String,
        /// The new ACL: `scheme:id:perms[,...]`, e.g. `world:anyone:r,digest:app:HASH:cdrwa`.
        #[arg(value_parser = parse_acl)]
        acl: AclList,
        /// Only if the node's aclVersion is this.
        #[arg(short = 'v', long)]
        version: Option<i32>,
    },
}

/// A parsed ACL, as `--acl` and `acl set` take it.
#[derive(Debug, Clone)]
pub(crate) struct AclList(pub Vec<zk::Acl>);

/// The ACL of the nodes a command's recipe creates: `--acl`, or ZooKeeper's open default.
/// The recipes keep it for their lifetime as `'static`, so a given list is leaked, once per
/// process.
pub(crate) fn recipe_acls(acl: Option<&AclList>) -> zk::Acls<'static> {
    match acl {
        None => zk::Acls::anyone_all(),
        Some(AclList(list)) => zk::Acls::new(Box::leak(list.clone().into_boxed_slice())),
    }
}

/// `scheme:id:perms[,scheme:id:perms...]`.
pub(crate) fn parse_acl(s: &str) -> Result<AclList, String> {
    let entries: Vec<&str> = s.split(',').map(str::trim).filter(|e| !e.is_empty()).collect();
    if entries.is_empty() {
        return Err("an ACL needs at least one scheme:id:perms entry".to_owned());
    }
    if entries.len() > ACL_ENTRIES_MAX {
        return Err(format!("an ACL may have at most {ACL_ENTRIES_MAX} entries"));
    }
    entries.into_iter().map(parse_entry).collect::<Result<_, _>>().map(AclList)
}

fn parse_entry(e: &str) -> Result<zk::Acl, String> {
    let bad = || format!("{e:?}: expected scheme:id:perms, e.g. world:anyone:cdrwa");
    let (scheme, rest) = e.split_once(':').ok_or_else(bad)?;
    let (id, perms) = rest.rsplit_once(':').ok_or_else(bad)?;
    if scheme.is_empty() || !scheme.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(bad());
    }
    let mut p = zk::Permission::NONE;
    for c in perms.chars() {
        p = p | match c {
            'c' => zk::Permission::CREATE,
            'd' => zk::Permission::DELETE,
            'r' => zk::Permission::READ,
            'w' => zk::Permission::WRITE,
            'a' => zk::Permission::ADMIN,
            _ => return Err(format!("{e:?}: {c:?} is not a permission (c, d, r, w, a)")),
        };
    }
    if p == zk::Permission::NONE {
        return Err(format!("{e:?}: no permission given (c, d, r, w, a)"));
    }
    Ok(zk::Acl::new(p, zk::AuthId::new(scheme.to_owned(), id.to_owned())))
}

/// An entry as `scheme:id:perms`, the permissions in zkCli's order.
fn format_entry(a: &zk::Acl) -> String {
    let bits = a.permission();
    let perms: String = [
        ('c', zk::Permission::CREATE),
        ('d', zk::Permission::DELETE),
        ('r', zk::Permission::READ),
        ('w', zk::Permission::WRITE),
        ('a', zk::Permission::ADMIN),
    ]
    .iter()
    .filter(|(_, p)| bits.bits() & p.bits() != 0)
    .map(|(c, _)| *c)
    .collect();
    format!("{}:{}:{perms}", a.auth_id().scheme, a.auth_id().id)
}

/// Runs `rzk acl`.
pub(crate) async fn run(connect: &Connect, args: AclArgs) -> Result<(), CliError> {
    let client = connect.client().await?;
    match args.command {
        AclCommand::Get { path } => {
            let (acl, stat) = client.get_acl(&path).await.map_err(|e| zk_error(&path, e))?;
            for a in &acl {
                println!("{}", format_entry(a));
            }
            println!("aclVersion = {}", stat.aversion);
        }
        AclCommand::Set { path, acl, version } => {
            client.set_acl(&path, &acl.0, version).await.map_err(|e| zk_error(&path, e))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acls_parse_and_print_as_zkcli_writes_them() {
        let AclList(acl) =
            parse_acl("world:anyone:r, digest:app:ab/c+d=:cdrwa,ip:10.0.0.0/8:rw").expect("parses");
        let printed: Vec<String> = acl.iter().map(format_entry).collect();
        assert_eq!(printed, ["world:anyone:r", "digest:app:ab/c+d=:cdrwa", "ip:10.0.0.0/8:rw"]);
        assert_eq!(acl[1].permission(), zk::Permission::ALL);
        for bad in ["", "world", "world:anyone", "world:anyone:x", "world:anyone:", ":a:r"] {
            assert!(parse_acl(bad).is_err(), "{bad:?}");
        }
        let many = vec!["world:anyone:r"; ACL_ENTRIES_MAX + 1].join(",");
        assert!(parse_acl(&many).unwrap_err().contains("at most"));
    }
}
