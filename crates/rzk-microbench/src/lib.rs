//! Fixtures shared by the criterion benchmarks in `benches/`: frames as a client sends them and
//! a [`Core`] with a connected session, so each benchmark measures one layer and nothing else.
//!
//! `cargo bench -p rzk-microbench` runs them; `scripts/test.sh` runs each once (`-- --test`).

#![forbid(unsafe_code)]

use std::net::SocketAddr;

use rzk_core::{Config, Core, Now, Output};
use rzk_proto::jute::Writer;
use rzk_proto::{Acl, ConnectRequest, CreateOp, CreateRequest, PathWatch, Request};

/// A fixed clock: the benchmarks never let a session expire.
pub fn now() -> Now {
    Now { mono_ms: 1_000, wall_ms: 1_700_000_000_000 }
}

/// The connection every fixture uses.
pub const CONN: u64 = 1;

/// A core with one connected session, everything durable and every output drained.
pub fn core_with_session() -> Core {
    let mut core = Core::new(Config::with_tick_ms(2_000), now());
    core.open(CONN, SocketAddr::from(([127, 0, 0, 1], 1)));
    let mut w = Writer::new();
    ConnectRequest::new_session(30_000).write(&mut w);
    core.receive(CONN, &w.into_inner(), now()).expect("connect");
    settle(&mut core);
    core
}

/// Plays the shell: everything applied is durable; outputs are drained. Returns the number of
/// frames sent, so callers can check they measured a reply.
pub fn settle(core: &mut Core) -> usize {
    let last = core.state().last_zxid();
    core.mark_durable(last);
    let _ = core.drain_txns().count();
    let mut frames = 0;
    while let Some(o) = core.poll_output() {
        if matches!(o, Output::Send { .. }) {
            frames += 1;
        }
    }
    frames
}

/// A create request for `path` with `data_bytes` of data.
pub fn create(path: &str, data_bytes: usize, flags: i32) -> Request {
    Request::Create(CreateRequest {
        op: CreateOp::Create,
        path: path.into(),
        data: Some(vec![b'x'; data_bytes]),
        acl: Acl::open(),
        flags,
        ttl_ms: -1,
    })
}

/// A getData request without a watch.
pub fn get_data(path: &str) -> Request {
    Request::GetData(PathWatch { path: path.into(), watch: false })
}

/// The body a connection hands the core: the frame without its length prefix.
pub fn body(req: &Request, xid: i32) -> Vec<u8> {
    req.to_frame(xid)[4..].to_vec()
}

/// Creates `/p` and `children` children under it, durable.
pub fn core_with_children(children: usize) -> Core {
    let mut core = core_with_session();
    core.receive(CONN, &body(&create("/p", 0, 0), 1), now()).expect("create /p");
    for i in 0..children {
        let path = format!("/p/child-{i:010}");
        core.receive(CONN, &body(&create(&path, 16, 0), 2), now()).expect("create child");
        if i % 1024 == 0 {
            settle(&mut core);
        }
    }
    settle(&mut core);
    core
}
