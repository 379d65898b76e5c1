use rzk_proto::jute::Writer;
use rzk_proto::{PathWatch, ReplyHeader, Stat, WatcherEvent};
use tokio::sync::oneshot::error::TryRecvError;

use super::*;

fn reply(xid: i32, zxid: i64, err: i32, body: impl FnOnce(&mut Writer)) -> Vec<u8> {
    let mut w = Writer::new();
    ReplyHeader { xid, zxid, err }.write(&mut w);
    body(&mut w);
    w.into_inner()
}

fn notification(t: rzk_proto::EventType, path: &str, zxid: i64) -> Vec<u8> {
    reply(xid::NOTIFICATION, zxid, 0, |w| {
        WatcherEvent { event_type: t, state: 3, path: path.into() }.write(w)
    })
}

fn exists(
    core: &mut Core,
    path: &str,
    watch: Option<Sink>,
) -> oneshot::Receiver<Result<Response, Error>> {
    let (tx, rx) = oneshot::channel();
    let request = Request::Exists(PathWatch { path: path.into(), watch: watch.is_some() });
    let watch =
        watch.map(|sink| Watching::Set(WatchOn { path: path.into(), kind: Kind::Data, sink }));
    core.send(
        Call { request, watch, reply: tx, permit: None, away: WhileAway::Defer },
        &mut Vec::new(),
    );
    rx
}

#[test]
fn replies_match_requests_in_order_and_a_stray_one_is_a_protocol_error() {
    let mut core = Core::new(Chroot::default());
    let mut a = exists(&mut core, "/a", None);
    let mut b = exists(&mut core, "/b", None);
    assert_eq!(core.on_frame(&reply(1, 5, -101, |_| {})), Ok(Frame::Done));
    assert_eq!(a.try_recv().unwrap(), Err(Error::NoNode));
    assert_eq!(b.try_recv(), Err(TryRecvError::Empty));
    assert!(matches!(core.on_frame(&reply(7, 6, 0, |_| {})), Err(Error::Protocol(_))));
    assert_eq!(b.try_recv().unwrap(), Err(Error::ConnectionLoss));
    assert_eq!(core.last_zxid, 5, "a stray reply does not move the zxid");
}

#[test]
fn an_exists_watch_on_a_missing_node_waits_for_its_creation() {
    let mut core = Core::new(Chroot::new(Some("/app".into())));
    let (tx, mut ev) = oneshot::channel();
    let _r = exists(&mut core, "/app/n", Some(Sink::Once(tx)));
    core.on_frame(&reply(1, 1, -101, |_| {})).unwrap();
    let mut out = Vec::new();
    core.resume(&mut out);
    let mut r = Reader::new(&out[4..]);
    let header = rzk_proto::RequestHeader::read(&mut r).unwrap();
    assert_eq!(header.xid, xid::SET_WATCHES);
    let Request::SetWatches { v2: false, watches } =
        Request::read(OpCode::SetWatches, &mut r).unwrap()
    else {
        panic!("not SetWatches")
    };
    assert_eq!(
        (watches.relative_zxid, watches.exist, watches.data.len()),
        (1, vec!["/app/n".to_owned()], 0)
    );
    core.on_frame(&notification(rzk_proto::EventType::NodeDataChanged, "/app/other", 2)).unwrap();
    assert_eq!(core.last_zxid, 1, "a notification's zxid is not a reply's");
    assert_eq!(ev.try_recv(), Err(TryRecvError::Empty));
    core.on_frame(&notification(rzk_proto::EventType::NodeCreated, "/app/n", 3)).unwrap();
    let got = ev.try_recv().unwrap();
    assert_eq!((got.event_type, got.path.as_str(), got.zxid), (EventType::NodeCreated, "/n", 3));
}

#[test]
fn a_watch_is_kept_only_when_its_request_succeeded() {
    let mut core = Core::new(Chroot::default());
    let (tx, mut ev) = oneshot::channel();
    let (tx2, _ev2) = oneshot::channel();
    let (rtx, _rx) = oneshot::channel();
    let request = Request::GetData(PathWatch { path: "/d".into(), watch: true });
    let on = WatchOn { path: "/d".into(), kind: Kind::Data, sink: Sink::Once(tx) };
    let watch = Some(Watching::Set(on));
    core.send(
        Call { request, watch, reply: rtx, permit: None, away: WhileAway::Defer },
        &mut Vec::new(),
    );
    core.on_frame(&reply(1, 1, -102, |_| {})).unwrap(); // NoAuth: no watch
    let _answer = exists(&mut core, "/d", Some(Sink::Once(tx2)));
    core.on_frame(&reply(2, 1, 0, |w| Stat::default().write(w))).unwrap();
    core.on_frame(&notification(rzk_proto::EventType::NodeDeleted, "/d", 4)).unwrap();
    assert!(ev.try_recv().is_err(), "the failed getData left no watch");
}

#[test]
fn ending_the_session_fails_requests_and_ends_watches() {
    let mut core = Core::new(Chroot::default());
    let (tx, mut ev) = oneshot::channel();
    let mut pending = exists(&mut core, "/x", Some(Sink::Once(tx)));
    let mut later = exists(&mut core, "/y", None);
    core.on_frame(&reply(1, 1, 0, |w| Stat::default().write(w))).unwrap();
    assert!(pending.try_recv().unwrap().is_ok());
    core.end(SessionState::Expired);
    assert_eq!(later.try_recv().unwrap(), Err(Error::SessionExpired));
    let got = ev.try_recv().unwrap();
    assert_eq!((got.event_type, got.session_state), (EventType::Session, SessionState::Expired));
}

#[test]
fn a_rejected_auth_ends_the_session() {
    let mut core = Core::new(Chroot::default());
    let (tx, mut rx) = oneshot::channel();
    core.auth("digest".into(), b"u:p".to_vec(), Some(tx), &mut Vec::new());
    assert_eq!(core.on_frame(&reply(xid::AUTH, 0, -115, |_| {})), Ok(Frame::AuthFailed));
    assert_eq!(rx.try_recv().unwrap(), Err(Error::AuthFailed));
}

#[test]
fn set_watches_split_at_the_size_limit() {
    let long = "x".repeat(1000);
    let live = (0..300).map(|i| (Kind::Data, format!("/{long}{i}"))).collect();
    let batches = set_watches_batches(7, live);
    assert_eq!(batches.len(), 3);
    assert_eq!(batches.iter().map(|b| b.data.len()).sum::<usize>(), 300);
    assert!(batches.iter().all(|b| b.relative_zxid == 7));
}

#[test]
fn a_resume_sends_the_credentials_before_the_watches() {
    let mut core = Core::new(Chroot::default());
    core.auth("digest".into(), b"u:p".to_vec(), None, &mut Vec::new());
    core.on_frame(&reply(xid::AUTH, 0, 0, |_| {})).unwrap();
    let (tx, _ev) = oneshot::channel();
    let _r = exists(&mut core, "/w", Some(Sink::Once(tx)));
    core.on_frame(&reply(1, 9, 0, |w| Stat::default().write(w))).unwrap();
    let mut out = Vec::new();
    core.resume(&mut out);
    let mut xids = Vec::new();
    let mut rest = &out[..];
    while let Some(len) = rzk_proto::split_frame(rest, 1 << 20).unwrap() {
        let header = rzk_proto::RequestHeader::read(&mut Reader::new(&rest[4..])).unwrap();
        xids.push(header.xid);
        rest = &rest[4 + len..];
    }
    assert_eq!(xids, [xid::AUTH, xid::SET_WATCHES]);
}

#[test]
fn a_refused_set_watches_drops_the_connection_and_minus_124_ends_the_session() {
    let mut core = Core::new(Chroot::default());
    assert!(matches!(
        core.on_frame(&reply(xid::SET_WATCHES, 0, -8, |_| {})),
        Err(Error::Protocol(_))
    ));
    assert_eq!(core.on_frame(&reply(xid::SET_WATCHES, 0, -124, |_| {})), Ok(Frame::AuthFailed));
    let mut rx = exists(&mut core, "/x", None);
    assert_eq!(core.on_frame(&reply(1, 0, -124, |_| {})), Ok(Frame::AuthFailed));
    assert_eq!(rx.try_recv().unwrap(), Err(Error::SessionClosedRequireAuth));
}

/// Sends `request` with `watch`, as a caller's call.
fn call(
    core: &mut Core,
    request: Request,
    watch: Option<Watching>,
    out: &mut Vec<u8>,
) -> oneshot::Receiver<Result<Response, Error>> {
    let (tx, rx) = oneshot::channel();
    core.send(Call { request, watch, reply: tx, permit: None, away: WhileAway::Defer }, out);
    rx
}

/// A persistent watch at `path` (no chroot), answered; its reader.
fn persistent(
    core: &mut Core,
    path: &str,
    xid: i32,
) -> tokio::sync::mpsc::Receiver<crate::WatchedEvent> {
    let (backlog, rx) = crate::watches::Backlog::new(path, 8);
    let on = WatchOn { path: path.into(), kind: Kind::Persistent, sink: Sink::Many(backlog) };
    let request = Request::AddWatch { path: path.into(), mode: 0 };
    let _answer = call(core, request, Some(Watching::Set(on)), &mut Vec::new());
    core.on_frame(&reply(xid, 1, 0, |w| {
        w.i32(0);
    }))
    .unwrap();
    rx
}

fn removal(path: &str, which: WatcherType, local: bool) -> (Request, Option<Watching>) {
    let off = WatchOff { path: path.into(), client_path: path.into(), which, local };
    let request = Request::RemoveWatches { path: path.into(), watch_type: which.wire() };
    (request, Some(Watching::Remove(off)))
}

/// The (op, path) of every request frame in `out`.
fn sent(out: &[u8]) -> Vec<(OpCode, String)> {
    let mut got = Vec::new();
    let mut rest = out;
    while let Some(len) = rzk_proto::split_frame(rest, 1 << 20).unwrap() {
        let mut r = Reader::new(&rest[4..4 + len]);
        let header = rzk_proto::RequestHeader::read(&mut r).unwrap();
        let op = OpCode::from_i32(header.op).unwrap();
        let path = match Request::read(op, &mut r).unwrap() {
            Request::RemoveWatches { path, .. } | Request::AddWatch { path, .. } => path,
            _ => String::new(),
        };
        got.push((op, path));
        rest = &rest[4 + len..];
    }
    got
}

/// A removal answered by the server removes the waiters of its kinds, each told so; one the
/// server refuses leaves them, as in the Java client.
#[test]
fn a_removal_follows_the_servers_answer() {
    let mut core = Core::new(Chroot::default());
    let (tx, mut data) = oneshot::channel();
    let _r = exists(&mut core, "/n", Some(Sink::Once(tx)));
    core.on_frame(&reply(1, 1, 0, |w| Stat::default().write(w))).unwrap();
    let mut persistent = persistent(&mut core, "/n", 2);
    let (request, watch) = removal("/n", WatcherType::Data, false);
    let mut refused = call(&mut core, request.clone(), watch, &mut Vec::new());
    core.on_frame(&reply(3, 1, -121, |_| {})).unwrap();
    assert_eq!(refused.try_recv().unwrap(), Err(Error::NoWatcher));
    assert_eq!(data.try_recv(), Err(TryRecvError::Empty), "a refused removal keeps the watch");
    let (_, watch) = removal("/n", WatcherType::Data, false);
    let mut done = call(&mut core, request, watch, &mut Vec::new());
    core.on_frame(&reply(4, 1, 0, |_| {})).unwrap();
    assert!(done.try_recv().unwrap().is_ok());
    assert_eq!(data.try_recv().unwrap().event_type, EventType::DataWatchRemoved);
    // A Data removal leaves the persistent watch here, as the Java client 3.8 does.
    core.on_frame(&notification(rzk_proto::EventType::NodeDataChanged, "/n", 5)).unwrap();
    assert_eq!(persistent.try_recv().unwrap().event_type, EventType::NodeDataChanged);
}

/// A local removal takes the waiters out when sent and succeeds whatever the server says;
/// made with no connection, it is done at once and answered.
#[test]
fn a_local_removal_is_done_here_first() {
    let mut core = Core::new(Chroot::default());
    let mut events = persistent(&mut core, "/p", 1);
    let (request, watch) = removal("/p", WatcherType::Any, true);
    let mut answer = call(&mut core, request, watch, &mut Vec::new());
    let ev = events.try_recv().unwrap();
    assert_eq!((ev.event_type, ev.path.as_str()), (EventType::PersistentWatchRemoved, "/p"));
    core.on_frame(&notification(rzk_proto::EventType::NodeDataChanged, "/p", 3)).unwrap();
    core.on_frame(&reply(2, 3, -4, |_| {})).unwrap(); // ConnectionLoss from the server
    assert!(answer.try_recv().unwrap().is_ok());
    assert!(events.try_recv().is_err(), "nothing after the removal");

    let mut events = persistent(&mut core, "/q", 3);
    for (path, expect) in [("/q", Ok(Response::Empty)), ("/q", Err(Error::NoWatcher))] {
        let (tx, mut rx) = oneshot::channel();
        let (request, watch) = removal(path, WatcherType::Any, true);
        core.remove_unsent(Call {
            request,
            watch,
            reply: tx,
            permit: None,
            away: WhileAway::Defer,
        });
        assert_eq!(rx.try_recv().unwrap(), expect);
    }
    assert_eq!(events.try_recv().unwrap().event_type, EventType::PersistentWatchRemoved);
}

/// A dropped persistent watcher removes the server's watch only once no waiter of any kind
/// is left on its path and no request is about to set one; a watcher found dropped while an
/// event is delivered does the same.
#[test]
fn a_dropped_watcher_removes_the_servers_watch_when_nothing_else_watches() {
    let mut core = Core::new(Chroot::default());
    drop(persistent(&mut core, "/a", 1));
    let (tx, _data) = oneshot::channel();
    let _r = exists(&mut core, "/a", Some(Sink::Once(tx)));
    let mut out = Vec::new();
    core.dropped("/a", &mut out);
    assert!(out.is_empty(), "a getData setting a watch on /a is in flight");
    core.on_frame(&reply(2, 1, 0, |w| Stat::default().write(w))).unwrap();
    drop(persistent(&mut core, "/a", 3));
    core.dropped("/a", &mut out);
    assert!(out.is_empty(), "a one-shot watch on /a waits");

    drop(persistent(&mut core, "/b", 4));
    core.dropped("/b", &mut out);
    core.dropped("/b", &mut out);
    assert_eq!(sent(&out), [(OpCode::RemoveWatches, "/b".to_owned())], "once for two reports");
    core.on_frame(&reply(5, 1, -121, |_| {})).unwrap();

    let mut out = Vec::new();
    drop(persistent(&mut core, "/c", 6));
    core.on_frame(&notification(rzk_proto::EventType::NodeDataChanged, "/c", 7)).unwrap();
    core.remove_orphans(&mut out);
    assert_eq!(sent(&out), [(OpCode::RemoveWatches, "/c".to_owned())]);
}
