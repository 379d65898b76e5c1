//! ZOOKEEPER-3145: a session's close replayed onto a fuzzy snapshot that missed one of its
//! ephemerals must still move that ephemeral's parent's pzxid, as the live close did. The
//! snapshot's walk can record the parent, then reach the child only after the close deleted
//! it; a client's setWatches after the restart compares against that pzxid.

use rzk_core::state::Mode;
use rzk_core::{State, Txn, TxnOp};
use rzk_proto::Acl;

const SESSION: i64 = 0x77;

fn apply(st: &mut State, session_id: i64, op: TxnOp, mode: Mode) -> i64 {
    let zxid = st.last_zxid() + 1;
    st.apply_in(&Txn { zxid, time_ms: 0, session_id, op }, mode).expect("applies");
    zxid
}

fn create(st: &mut State, path: &str, owner: i64) -> i64 {
    let parent = rzk_core::path::parent(path).expect("not the root");
    let parent_cversion = st.node(parent).expect("parent").meta.cversion + 1;
    let op = TxnOp::Create {
        path: path.into(),
        data: None,
        acl: Acl::open(),
        ephemeral_owner: owner,
        parent_cversion,
    };
    apply(st, owner, op, Mode::Strict)
}

/// A session that owns nothing yet, and `/p`.
fn base() -> State {
    let mut st = State::new();
    let op = TxnOp::CreateSession { timeout_ms: 4000, passwd: [0; 16] };
    apply(&mut st, SESSION, op, Mode::Strict);
    create(&mut st, "/p", 0);
    st
}

#[test]
fn a_replayed_close_moves_the_pzxid_of_an_ephemeral_the_snapshot_missed() {
    let mut live = base();
    create(&mut live, "/p/e", SESSION);
    let paths: Vec<String> = live.ephemerals_of(SESSION).map(String::from).collect();
    assert_eq!(paths, ["/p/e"]);
    let close =
        apply(&mut live, SESSION, TxnOp::CloseSession { paths: paths.clone() }, Mode::Strict);
    assert_eq!(live.node("/p").expect("/p").meta.pzxid, close);

    // What the snapshot held: `/p` as before the close, and no `/p/e`.
    let mut recovered = base();
    let txn =
        Txn { zxid: close, time_ms: 0, session_id: SESSION, op: TxnOp::CloseSession { paths } };
    recovered.apply_in(&txn, Mode::Replay).expect("replays");
    assert_eq!(recovered.node("/p").expect("/p").meta.pzxid, close);
    assert!(recovered.sessions().get(&SESSION).is_none());
}

#[test]
fn a_close_without_paths_still_deletes_what_the_tree_lists() {
    // Logs written before the close named its paths replay as they always did.
    let mut st = base();
    create(&mut st, "/p/e", SESSION);
    let close = apply(&mut st, SESSION, TxnOp::CloseSession { paths: Vec::new() }, Mode::Replay);
    assert!(st.node("/p/e").is_none());
    assert_eq!(st.node("/p").expect("/p").meta.pzxid, close);
}
