//! The `--json` output of every command: one document per line, rendered by serde_json from
//! a struct per document (the participants' here, the others beside their commands), so that
//! escaping is serde_json's and the fields come in the order they are declared, the order
//! the commands have always printed.

use rzk_recipes::{election::Participant, lock::LockEntry};
use serde::Serialize;

/// `doc` as one line of JSON.
pub(crate) fn line<T: Serialize>(doc: &T) -> String {
    serde_json::to_string(doc).expect("the --json documents are plain structs, which serialize")
}

/// A participant of an election or a lock, with its owning session when `session` is asked.
#[derive(Serialize)]
pub(crate) struct ParticipantDoc<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
    pub id: &'a str,
    pub token: i64,
    pub node: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
}

impl<'a> ParticipantDoc<'a> {
    /// `p`, with its session as `0x…` when `with_session`.
    pub(crate) fn of(p: &'a Participant, with_session: bool) -> ParticipantDoc<'a> {
        ParticipantDoc {
            kind: None,
            id: &p.id,
            token: p.token.0,
            node: &p.node,
            session: with_session.then(|| format!("{:#x}", p.session.0)),
        }
    }

    /// A lock's holder or waiter: its kind, then the participant with its session.
    pub(crate) fn of_entry(e: &'a LockEntry) -> ParticipantDoc<'a> {
        ParticipantDoc { kind: Some(e.kind.as_str()), ..ParticipantDoc::of(&e.participant, true) }
    }
}
