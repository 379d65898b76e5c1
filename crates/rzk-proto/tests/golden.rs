//! Golden bytes: replies captured from Apache ZooKeeper 3.8.0 (`data/wire_probe_zk38.txt`,
//! from `shared/reference/data`) must decode with our codec and re-encode to the same bytes.
//! Requests are checked against layouts worked out by hand from `zookeeper.jute`.

use rzk_proto::jute::{Reader, Writer};
use rzk_proto::{
    Acl, ConnectRequest, ConnectResponse, CreateOp, CreateRequest, MultiOp, MultiResult, OpCode,
    ReplyHeader, Request, Response, Stat,
};

const CAPTURE: &str = include_str!("data/wire_probe_zk38.txt");

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// Which op each captured reply answers, by its label in the capture.
fn op_for(label: &str) -> Option<OpCode> {
    let table: &[(&str, OpCode)] = &[
        ("ping reply", OpCode::Ping),
        ("create(1) ok", OpCode::Create),
        ("create2(15)", OpCode::Create2),
        ("createContainer(19)", OpCode::CreateContainer),
        ("getData(4) +watch", OpCode::GetData),
        ("setData(5) (watch", OpCode::SetData),
        ("getChildren2(12)", OpCode::GetChildren2),
        ("getChildren(8)", OpCode::GetChildren),
        ("getAllChildrenNumber(104)", OpCode::GetAllChildrenNumber),
        ("getEphemerals(103)", OpCode::GetEphemerals),
        ("getACL(6)", OpCode::GetAcl),
        ("sync(9)", OpCode::Sync),
        ("addWatch(106)", OpCode::AddWatch),
        ("checkWatches(17)", OpCode::CheckWatches),
        ("removeWatches(18)", OpCode::RemoveWatches),
        ("whoAmI(107)", OpCode::WhoAmI),
        ("multi(14)", OpCode::Multi),
        ("multiRead(22)", OpCode::MultiRead),
        ("getData /zookeeper/config", OpCode::GetData),
        ("closeSession(-11)", OpCode::CloseSession),
    ];
    table.iter().find(|(prefix, _)| label.starts_with(prefix)).map(|(_, op)| *op)
}

struct Captured {
    label: String,
    bytes: Vec<u8>,
}

fn captured_replies() -> Vec<Captured> {
    CAPTURE
        .lines()
        .filter_map(|line| {
            let (label, rest) = line.trim_start().split_once(" len=")?;
            let hex = rest.split_whitespace().nth(1)?;
            if hex.len() % 2 != 0 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            Some(Captured { label: label.trim().to_string(), bytes: unhex(hex) })
        })
        .collect()
}

#[test]
fn every_captured_reply_round_trips() {
    let replies = captured_replies();
    assert_eq!(replies.len(), 39, "replies parsed from the capture");
    let mut bodies_checked = 0;
    for c in &replies {
        let mut r = Reader::new(&c.bytes);
        let header = ReplyHeader::read(&mut r).unwrap_or_else(|e| panic!("{}: {e}", c.label));
        let mut w = Writer::new();
        header.write(&mut w);
        if header.xid == -1 {
            let ev = rzk_proto::WatcherEvent::read(&mut r).unwrap();
            ev.write(&mut w);
        } else if header.err == 0 {
            if let Some(op) = op_for(&c.label) {
                let body =
                    Response::read(op, &mut r).unwrap_or_else(|e| panic!("{}: {e}", c.label));
                body.write(&mut w);
                bodies_checked += 1;
            }
        }
        assert!(r.is_empty(), "{}: {} bytes left undecoded", c.label, r.remaining());
        assert_eq!(w.into_inner(), c.bytes, "{}: re-encoding differs", c.label);
    }
    assert!(bodies_checked >= 18, "only {bodies_checked} reply bodies were checked");
}

#[test]
fn captured_values_decode_as_zookeeper_meant_them() {
    let replies = captured_replies();
    let find = |prefix: &str| {
        let c = replies.iter().find(|c| c.label.starts_with(prefix)).unwrap();
        let mut r = Reader::new(&c.bytes);
        let h = ReplyHeader::read(&mut r).unwrap();
        (h, r)
    };

    let (h, mut r) = find("getData(4) +watch");
    let Response::GetData { data, stat } = Response::read(OpCode::GetData, &mut r).unwrap() else {
        panic!()
    };
    assert_eq!(data.as_deref(), Some(&b"hello"[..]));
    assert_eq!((stat.version, stat.cversion, stat.data_length, stat.num_children), (0, 2, 5, 2));
    assert_eq!((h.xid, h.zxid), (9, 0xa0a));

    // A failed multi: outer err 0, per-op errors, the rest RuntimeInconsistency.
    let (h, mut r) = find("multi(14) failing");
    assert_eq!(h.err, 0);
    let Response::Multi(results) = Response::read(OpCode::Multi, &mut r).unwrap() else { panic!() };
    assert_eq!(
        results,
        [
            MultiResult::Error { err: 0 },
            MultiResult::Error { err: -110 },
            MultiResult::Error { err: -2 }
        ]
    );

    // /zookeeper/config: empty data, aversion -1.
    let (_, mut r) = find("getData /zookeeper/config");
    let Response::GetData { stat, .. } = Response::read(OpCode::GetData, &mut r).unwrap() else {
        panic!()
    };
    assert_eq!(stat, Stat { aversion: -1, ..Stat::default() });

    // Errors are header-only.
    let (h, r) = find("create(1) NodeExists");
    assert_eq!((h.err, r.remaining()), (-110, 0));
}

#[test]
fn connect_response_lengths_match_zookeeper() {
    // 37 bytes when the client sent the readOnly byte, 36 without (the C client relies on 37).
    let mut resp = ConnectResponse {
        protocol_version: 0,
        timeout_ms: 4000,
        session_id: 0x10000071ddc01c8,
        passwd: vec![7; 16],
        read_only: Some(false),
    };
    let mut w = Writer::new();
    resp.write(&mut w);
    assert_eq!(w.len(), 37);
    resp.read_only = None;
    let mut w = Writer::new();
    resp.write(&mut w);
    assert_eq!(w.len(), 36);
    let bytes = w.into_inner();
    assert_eq!(ConnectResponse::read(&mut Reader::new(&bytes)).unwrap(), resp);

    // The expired-session reply from the capture.
    let expired =
        unhex("00000000000000000000000000000000000000100000000000000000000000000000000000");
    let r = ConnectResponse::read(&mut Reader::new(&expired)).unwrap();
    assert_eq!((r.timeout_ms, r.session_id, r.passwd.len(), r.read_only), (0, 0, 16, Some(false)));
}

#[test]
fn connect_request_with_and_without_read_only() {
    // The C client's fixed 45-byte handshake and go-zookeeper's 44-byte one.
    let mut req = ConnectRequest::new_session(30_000);
    let mut w = Writer::new();
    req.write(&mut w);
    assert_eq!(w.len(), 45);
    assert_eq!(ConnectRequest::read(&mut Reader::new(&w.into_inner())).unwrap(), req);
    req.read_only = None;
    let mut w = Writer::new();
    req.write(&mut w);
    assert_eq!(w.len(), 44);
    assert_eq!(ConnectRequest::read(&mut Reader::new(&w.into_inner())).unwrap(), req);
}

#[test]
fn request_layouts_match_jute() {
    // create("/a", "x", OPEN_ACL_UNSAFE, PERSISTENT) with xid 1, op 1.
    let create = Request::Create(CreateRequest {
        op: CreateOp::Create,
        path: "/a".into(),
        data: Some(b"x".to_vec()),
        acl: Acl::open(),
        flags: 0,
        ttl_ms: -1,
    });
    let expected = unhex(concat!(
        "00000032", // frame length 50
        "00000001",
        "00000001", // xid 1, op create
        "00000002",
        "2f61", // path "/a"
        "00000001",
        "78", // data "x"
        "00000001",
        "0000001f", // one ACL, perms ALL
        "00000005",
        "776f726c64", // scheme "world"
        "00000006",
        "616e796f6e65", // id "anyone"
        "00000000",     // flags
    ));
    assert_eq!(create.to_frame(1), expected);

    // multi: check + delete, terminated by {-1, true, -1}.
    let multi = Request::Multi(vec![
        MultiOp::Check { path: "/a".into(), version: 3 },
        MultiOp::Delete { path: "/a".into(), version: -1 },
    ]);
    let expected = unhex(concat!(
        "00000037", // frame length 55
        "00000002", "0000000e", "0000000d", "00", "ffffffff", "00000002", "2f61", "00000003",
        "00000002", "00", "ffffffff", "00000002", "2f61", "ffffffff", "ffffffff", "01", "ffffffff",
    ));
    assert_eq!(multi.to_frame(2), expected);

    // Null data is a -1 length, and survives decoding.
    let null = Request::SetData { path: "/a".into(), data: None, version: -1 };
    let frame = null.to_frame(3);
    assert_eq!(&frame[18..22], &[0xff; 4]);
    let mut r = Reader::new(&frame[12..]);
    assert_eq!(Request::read(OpCode::SetData, &mut r).unwrap(), null);
}

#[test]
fn every_request_round_trips() {
    let c = CreateRequest {
        op: CreateOp::Ttl,
        path: "/t".into(),
        data: None,
        acl: Acl::open(),
        flags: 5,
        ttl_ms: 1000,
    };
    let requests = vec![
        Request::Create(c.clone()),
        Request::Delete { path: "/a".into(), version: 1 },
        Request::Exists(rzk_proto::PathWatch { path: "/a".into(), watch: true }),
        Request::GetData(rzk_proto::PathWatch { path: "/a".into(), watch: false }),
        Request::SetData { path: "/a".into(), data: Some(vec![1, 2]), version: -1 },
        Request::GetAcl { path: "/a".into() },
        Request::SetAcl { path: "/a".into(), acl: Acl::read_only(), version: 0 },
        Request::GetChildren(rzk_proto::PathWatch { path: "/".into(), watch: true }),
        Request::GetChildren2(rzk_proto::PathWatch { path: "/".into(), watch: false }),
        Request::Sync { path: "/".into() },
        Request::Ping,
        Request::Multi(vec![
            MultiOp::Create(c),
            MultiOp::SetData { path: "/t".into(), data: Some(vec![]), version: 0 },
        ]),
        Request::MultiRead(vec![
            MultiOp::GetData { path: "/a".into() },
            MultiOp::GetChildren { path: "/".into() },
        ]),
        Request::CheckWatches { path: "/a".into(), watch_type: 2 },
        Request::RemoveWatches { path: "/a".into(), watch_type: 3 },
        Request::Auth { auth_type: 0, scheme: "digest".into(), auth: b"u:p".to_vec() },
        Request::SetWatches {
            v2: true,
            watches: rzk_proto::SetWatches {
                relative_zxid: 9,
                data: vec!["/a".into()],
                exist: vec![],
                child: vec!["/".into()],
                persistent: vec!["/p".into()],
                persistent_recursive: vec!["/r".into()],
            },
        },
        Request::GetEphemerals { prefix: "/".into() },
        Request::GetAllChildrenNumber { path: "/".into() },
        Request::AddWatch { path: "/a".into(), mode: 1 },
        Request::WhoAmI,
        Request::CloseSession,
    ];
    for req in requests {
        let frame = req.to_frame(5);
        let len =
            rzk_proto::split_frame(&frame, rzk_proto::DEFAULT_MAX_PACKET_BYTES).unwrap().unwrap();
        assert_eq!(len + 4, frame.len());
        let mut r = Reader::new(&frame[4..]);
        let h = rzk_proto::RequestHeader::read(&mut r).unwrap();
        let op = OpCode::from_i32(h.op).unwrap();
        assert_eq!(Request::read(op, &mut r).unwrap(), req, "{op:?}");
        assert!(r.is_empty(), "{op:?}: trailing bytes");
    }
}
