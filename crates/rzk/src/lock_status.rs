//! `rzk lock --status PATH`: who holds the lock and who waits, for each layout (a mutex, a
//! read-write lock's readers and writers, a semaphore's lease holders), as text or JSON.

use rzk_recipes::lock::{LockEntry, LockLayout, LockStatus};

use crate::connect::Connect;
use crate::error::CliError;
use crate::json::{self, ParticipantDoc};

/// Prints the status of the lock at `path`; `layout` as the flags name it, or read from the
/// path's children when they do not.
pub(crate) async fn print(
    connect: &Connect,
    path: &str,
    layout: Option<LockLayout>,
    json: bool,
) -> Result<(), CliError> {
    let session = connect.election_session(None).await?;
    let bad = |e: rzk_recipes::Error| CliError::usage(format!("{path}: {e}"));
    let layout = match layout {
        Some(l) => l,
        None => LockLayout::detect(&session, path).await.map_err(bad)?,
    };
    let status = LockStatus::read(&session, path, layout).await.map_err(bad)?;
    if json {
        println!("{}", to_json(path, &status));
    } else {
        print!("{}", to_text(path, &status));
    }
    Ok(())
}

fn layout_name(l: LockLayout) -> String {
    match l {
        LockLayout::Mutex => "mutex".into(),
        LockLayout::ReadWrite => "read-write lock".into(),
        LockLayout::Semaphore { max_leases: Some(n) } => format!("semaphore of {n} leases"),
        LockLayout::Semaphore { max_leases: None } => "semaphore".into(),
    }
}

/// One JSON object: `{"path", "layout", "max_leases", "holders", "waiters", "foreign"}`.
fn to_json(path: &str, s: &LockStatus) -> String {
    #[derive(serde::Serialize)]
    struct Status<'a> {
        path: &'a str,
        layout: &'static str,
        max_leases: Option<u32>,
        holders: Vec<ParticipantDoc<'a>>,
        waiters: Vec<ParticipantDoc<'a>>,
        foreign: &'a [String],
    }
    let (layout, max_leases) = match s.layout {
        LockLayout::Mutex => ("mutex", None),
        LockLayout::ReadWrite => ("read-write", None),
        LockLayout::Semaphore { max_leases } => ("semaphore", max_leases),
    };
    fn docs(v: &[LockEntry]) -> Vec<ParticipantDoc<'_>> {
        v.iter().map(ParticipantDoc::of_entry).collect()
    }
    json::line(&Status {
        path,
        layout,
        max_leases,
        holders: docs(&s.holders),
        waiters: docs(&s.waiters),
        foreign: &s.foreign,
    })
}

fn to_text(path: &str, s: &LockStatus) -> String {
    let mut out = format!(
        "{path} ({}): {} holding, {} waiting\n",
        layout_name(s.layout),
        s.holders.len(),
        s.waiters.len()
    );
    let lines =
        s.holders.iter().map(|e| ("holds", e)).chain(s.waiters.iter().map(|e| ("waits", e)));
    for (what, e) in lines {
        let p = &e.participant;
        out.push_str(&format!(
            "  {what} {:<9} {} (token {}, node {}, session {:#x})\n",
            e.kind.as_str(),
            p.id,
            p.token,
            p.node,
            p.session.0
        ));
    }
    for f in &s.foreign {
        out.push_str(&format!("  ! foreign child {f}: not a node of this layout\n"));
    }
    out
}
