//! The server core on arbitrary frames from several connections: it must never panic, and
//! its zxids must only grow.
#![no_main]

use std::net::SocketAddr;

use libfuzzer_sys::fuzz_target;
use rzk_core::{Config, Core, Now};
use rzk_proto::jute::Writer;
use rzk_proto::ConnectRequest;

fuzz_target!(|data: &[u8]| {
    let mut config = Config::with_tick_ms(100);
    config.extended_types_enabled = true;
    let mut now = Now { mono_ms: 0, wall_ms: 1_700_000_000_000 };
    let mut core = Core::new(config, now);
    let peer: SocketAddr = "127.0.0.1:9".parse().unwrap();
    // Three connections with valid sessions; then the input is split into frames, each
    // prefixed by a byte choosing the connection (or a clock tick, or a close).
    for conn in 1..=3u64 {
        core.open(conn, peer);
        let mut w = Writer::new();
        ConnectRequest::new_session(1000)
        .write(&mut w);
        core.receive(conn, &w.into_inner(), now).expect("valid handshake");
    }
    let mut last_zxid = core.state().last_zxid();
    let mut rest = data;
    while rest.len() >= 2 {
        let (selector, len) = (rest[0], rest[1] as usize);
        rest = &rest[2..];
        let frame = &rest[..len.min(rest.len())];
        rest = &rest[frame.len()..];
        match selector % 8 {
            0..=3 => {
                let conn = u64::from(selector % 4);
                if core.receive(conn, frame, now).is_err() {
                    core.closed(conn);
                }
            }
            4 => {
                now.mono_ms += u64::from(selector) * 10;
                now.wall_ms += i64::from(selector) * 10;
                core.tick(now);
            }
            5 => core.closed(u64::from(selector % 3) + 1),
            6 => {
                let conn = u64::from(selector) + 10;
                core.open(conn, peer);
                let _ = core.receive(conn, frame, now);
            }
            _ => {
                let txns: Vec<_> = core.drain_txns().collect();
                if let Some(t) = txns.last() {
                    core.mark_durable(t.zxid);
                }
            }
        }
        while core.poll_output().is_some() {}
        assert!(core.state().last_zxid() >= last_zxid, "zxid went backwards");
        last_zxid = core.state().last_zxid();
    }
});
