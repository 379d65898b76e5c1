//! The request decoder on arbitrary bytes: it must never panic, and anything it accepts must
//! re-encode to something that decodes to the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rzk_proto::jute::Reader;
use rzk_proto::{split_frame, ConnectRequest, OpCode, Request, RequestHeader};

fuzz_target!(|data: &[u8]| {
    let _ = ConnectRequest::read(&mut Reader::new(data));
    let mut rest = data;
    while let Ok(Some(len)) = split_frame(rest, 1 << 20) {
        let frame = &rest[4..4 + len];
        rest = &rest[4 + len..];
        let mut r = Reader::new(frame);
        let Ok(header) = RequestHeader::read(&mut r) else { continue };
        let Some(op) = OpCode::from_i32(header.op) else { continue };
        let Ok(req) = Request::read(op, &mut r) else { continue };
        let again = req.to_frame(header.xid);
        let mut r2 = Reader::new(&again[4..]);
        let h2 = RequestHeader::read(&mut r2).expect("re-encoded header");
        let op2 = OpCode::from_i32(h2.op).expect("re-encoded op");
        let req2 = Request::read(op2, &mut r2).expect("re-encoded request decodes");
        assert_eq!(req, req2);
    }
});
