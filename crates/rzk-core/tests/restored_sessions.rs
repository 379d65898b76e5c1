//! Sessions restored after a restart: their timeout counts from the moment the server serves
//! again (`Core::start_serving`), not from the restore, however long the server took between
//! the two. Virtual time throughout, so each boundary is exact to the millisecond.

use std::net::SocketAddr;

use rzk_core::{CloseReason, Config, Core, Now, Output, State};
use rzk_proto::jute::{Reader, Writer};
use rzk_proto::{Acl, ConnectRequest, ConnectResponse, CreateOp, CreateRequest, Request};

const TIMEOUT_MS: u64 = 1_000;
/// The last packet of the client before the crash.
const LAST_CONTACT_MS: u64 = 500;
/// When the restarted server has rebuilt its state.
const RESTORED_MS: u64 = 700;
/// When it accepts connections: the restore plus a recovery slower than a whole timeout.
const SERVING_MS: u64 = RESTORED_MS + 2 * TIMEOUT_MS;

fn at(ms: u64) -> Now {
    Now { mono_ms: ms, wall_ms: 1_700_000_000_000 + ms as i64 }
}

fn config() -> Config {
    Config::with_tick_ms(100)
}

/// Plays the shell's part: everything applied so far is durable; returns what came out.
fn flush(core: &mut Core) -> Vec<Output> {
    let last = core.state().last_zxid();
    core.mark_durable(last);
    std::iter::from_fn(|| core.poll_output()).collect()
}

fn handshake(core: &mut Core, conn: u64, request: &ConnectRequest, now: Now) -> ConnectResponse {
    core.open(conn, SocketAddr::from(([127, 0, 0, 1], 1)));
    let mut w = Writer::new();
    request.write(&mut w);
    core.receive(conn, &w.into_inner(), now).unwrap();
    let outs = flush(core);
    let Some(Output::Send { frame, .. }) = outs.first() else { panic!("no ConnectResponse") };
    ConnectResponse::read(&mut Reader::new(&frame[4..])).unwrap()
}

/// A session with an ephemeral `/e`, last heard from at [`LAST_CONTACT_MS`], then a crash; the
/// state is rebuilt from the log, as recovery does. Returns the state and the session.
fn crashed_with_a_session() -> (State, ConnectResponse) {
    let mut core = Core::new(config(), at(0));
    let session = handshake(&mut core, 1, &ConnectRequest::new_session(TIMEOUT_MS as i32), at(0));
    assert_eq!(session.timeout_ms as u64, TIMEOUT_MS);
    let create = Request::Create(CreateRequest {
        op: CreateOp::Create,
        path: "/e".into(),
        data: None,
        acl: Acl::open(),
        flags: 1,
        ttl_ms: -1,
    });
    core.receive(1, &create.to_frame(1)[4..], at(10)).unwrap();
    core.receive(1, &Request::Ping.to_frame(-2)[4..], at(LAST_CONTACT_MS)).unwrap();
    flush(&mut core);
    let mut state = State::new();
    for txn in core.drain_txns() {
        state.apply(&txn).unwrap();
    }
    (state, session)
}

fn expired(outs: &[Output]) -> bool {
    outs.iter().any(|o| matches!(o, Output::Close { reason: CloseReason::SessionExpired, .. }))
}

#[test]
fn a_restored_session_gets_its_full_timeout_from_the_start_of_serving() {
    let (state, session) = crashed_with_a_session();
    let mut core = Core::with_state(config(), state, at(RESTORED_MS));
    // The timer may fire while the server is still starting; nothing can have reconnected yet,
    // so nothing expires, though a whole timeout has passed since the restore.
    core.tick(at(SERVING_MS - 1));
    assert!(core.state().sessions().contains_key(&session.session_id));

    core.start_serving(at(SERVING_MS));
    assert_eq!(core.next_deadline(), SERVING_MS + TIMEOUT_MS);
    core.tick(at(SERVING_MS + TIMEOUT_MS - 1));
    assert!(core.state().node("/e").is_some(), "alive 1 ms before a timeout after serving");
    core.tick(at(SERVING_MS + TIMEOUT_MS));
    assert!(core.state().node("/e").is_none(), "expired exactly a timeout after serving");
    assert!(core.state().sessions().is_empty());
}

#[test]
fn a_client_reconnecting_just_inside_its_timeout_finds_its_session() {
    let (state, session) = crashed_with_a_session();
    let mut core = Core::with_state(config(), state, at(RESTORED_MS));
    core.start_serving(at(SERVING_MS));
    let reconnect_ms = SERVING_MS + TIMEOUT_MS - 1;
    core.tick(at(reconnect_ms));
    let resume = ConnectRequest {
        session_id: session.session_id,
        passwd: session.passwd.clone(),
        ..ConnectRequest::new_session(TIMEOUT_MS as i32)
    };
    let resumed = handshake(&mut core, 7, &resume, at(reconnect_ms));
    assert_eq!(resumed.session_id, session.session_id, "the session survived");
    assert_eq!(resumed.timeout_ms as u64, TIMEOUT_MS);
    // The reconnect touched it: a full timeout from the reconnect, not from serving.
    core.tick(at(reconnect_ms + TIMEOUT_MS - 1));
    assert!(!expired(&flush(&mut core)));
    assert!(core.state().node("/e").is_some(), "its ephemeral survived with it");
    core.tick(at(reconnect_ms + TIMEOUT_MS));
    assert!(expired(&flush(&mut core)));
}

#[test]
fn serving_starts_once() {
    let (state, session) = crashed_with_a_session();
    let mut core = Core::with_state(config(), state, at(RESTORED_MS));
    core.start_serving(at(SERVING_MS));
    // A second call is not a way to extend every session.
    core.start_serving(at(SERVING_MS + TIMEOUT_MS / 2));
    core.tick(at(SERVING_MS + TIMEOUT_MS));
    assert!(!core.state().sessions().contains_key(&session.session_id));
}
