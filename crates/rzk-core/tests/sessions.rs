//! Session expiry with virtual time: exact to the millisecond, not rounded up to ticks.

use std::net::SocketAddr;

use rzk_core::{CloseReason, Config, Core, Now, Output};
use rzk_proto::jute::{Reader, Writer};
use rzk_proto::{ConnectRequest, ConnectResponse, Request};

fn at(ms: u64) -> Now {
    Now { mono_ms: ms, wall_ms: 1_700_000_000_000 + ms as i64 }
}

fn connect(core: &mut Core, conn: u64, timeout_ms: i32, now: Now) -> ConnectResponse {
    core.open(conn, SocketAddr::from(([127, 0, 0, 1], 1)));
    let mut w = Writer::new();
    ConnectRequest::new_session(timeout_ms).write(&mut w);
    core.receive(conn, &w.into_inner(), now).unwrap();
    durable(core);
    let Some(Output::Send { frame, .. }) = core.poll_output() else { panic!("no ConnectResponse") };
    ConnectResponse::read(&mut Reader::new(&frame[4..])).unwrap()
}

/// Plays the shell's part: everything applied so far is durable.
fn durable(core: &mut Core) {
    let last = core.state().last_zxid();
    core.mark_durable(last);
}

fn closed(core: &mut Core) -> Option<CloseReason> {
    durable(core);
    std::iter::from_fn(|| core.poll_output()).find_map(|o| match o {
        Output::Close { reason, .. } => Some(reason),
        _ => None,
    })
}

#[test]
fn expiry_is_exact_to_the_millisecond() {
    let mut core = Core::new(Config::with_tick_ms(2000), at(0));
    let resp = connect(&mut core, 1, 5_000, at(1_000));
    assert_eq!(resp.timeout_ms, 5_000, "5 s is inside [2, 20] ticks and is not rounded");
    assert_eq!(core.next_deadline(), 6_000);
    core.tick(at(5_999));
    assert_eq!(closed(&mut core), None, "alive 1 ms before its deadline");
    assert_eq!(core.state().sessions().len(), 1);

    // Any packet touches the session: a ping at 3 s moves the deadline to 8 s.
    let ping = Request::Ping.to_frame(-2);
    core.receive(1, &ping[4..], at(3_000)).unwrap();
    core.tick(at(6_000));
    assert_eq!(closed(&mut core), None, "the ping extended the session");
    core.tick(at(7_999));
    assert_eq!(closed(&mut core), None);
    core.tick(at(8_000));
    assert_eq!(closed(&mut core), Some(CloseReason::SessionExpired), "expired exactly at 8 s");
    assert!(core.state().sessions().is_empty());
}

#[test]
fn timeouts_are_clamped_to_configured_bounds() {
    let mut config = Config::with_tick_ms(2000);
    assert_eq!((config.session_timeout_ms_min, config.session_timeout_ms_max), (4_000, 40_000));
    config.session_timeout_ms_min = 1_000;
    config.session_timeout_ms_max = 9_000;
    let mut core = Core::new(config, at(0));
    assert_eq!(connect(&mut core, 1, 1, at(0)).timeout_ms, 1_000);
    assert_eq!(connect(&mut core, 2, 1_000_000_000, at(0)).timeout_ms, 9_000);
    assert_eq!(connect(&mut core, 3, 5_555, at(0)).timeout_ms, 5_555);
}

#[test]
fn a_detached_session_expires_and_takes_its_ephemerals() {
    let mut core = Core::new(Config::with_tick_ms(100), at(0));
    connect(&mut core, 1, 1_000, at(0));
    let create = Request::Create(rzk_proto::CreateRequest {
        op: rzk_proto::CreateOp::Create,
        path: "/e".into(),
        data: None,
        acl: rzk_proto::Acl::open(),
        flags: 1,
        ttl_ms: -1,
    });
    core.receive(1, &create.to_frame(1)[4..], at(10)).unwrap();
    let last = core.state().last_zxid();
    core.mark_durable(last);
    core.closed(1);
    assert!(core.state().node("/e").is_some(), "a disconnect alone keeps the session");
    core.tick(at(1_009));
    assert!(core.state().node("/e").is_some());
    core.tick(at(1_010));
    assert!(core.state().node("/e").is_none(), "expired 1000 ms after its last packet");
}

#[test]
fn no_read_sees_a_write_before_it_is_durable() {
    let mut core = Core::new(Config::with_tick_ms(100), at(0));
    connect(&mut core, 1, 1_000, at(0));
    connect(&mut core, 2, 1_000, at(0));
    let create = Request::Create(rzk_proto::CreateRequest {
        op: rzk_proto::CreateOp::Create,
        path: "/w".into(),
        data: Some(b"x".to_vec()),
        acl: rzk_proto::Acl::open(),
        flags: 0,
        ttl_ms: -1,
    });
    core.receive(1, &create.to_frame(1)[4..], at(1)).unwrap();
    let read = Request::GetData(rzk_proto::PathWatch { path: "/w".into(), watch: false });
    core.receive(2, &read.to_frame(1)[4..], at(2)).unwrap();
    // Neither the writer's acknowledgement nor the other session's read (which would show the
    // new node) leaves before the write is durable.
    assert_eq!(core.poll_output(), None);
    let zxid = core.state().last_zxid();
    core.mark_durable(zxid - 1);
    assert_eq!(core.poll_output(), None);
    core.mark_durable(zxid);
    let outs: Vec<Output> = std::iter::from_fn(|| core.poll_output()).collect();
    let conns: Vec<u64> = outs
        .iter()
        .map(|o| match o {
            Output::Send { conn, .. } => *conn,
            Output::Close { conn, .. } => *conn,
        })
        .collect();
    assert_eq!(conns, [1, 2], "the write's reply, then the read's, in order");
}
