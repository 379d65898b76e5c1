//! Framing: "need more bytes" versus "close the connection".

use rzk_proto::jute::Reader;
use rzk_proto::{four_letter_word, split_frame, DecodeError, FrameError, OpCode, Request};

#[test]
fn partial_frames_need_more_bytes() {
    let frame = Request::Sync { path: "/abc".into() }.to_frame(1);
    for cut in 0..frame.len() {
        assert_eq!(split_frame(&frame[..cut], 1 << 20), Ok(None), "cut at {cut}");
    }
    assert_eq!(split_frame(&frame, 1 << 20), Ok(Some(frame.len() - 4)));
    let mut two = frame.clone();
    two.extend_from_slice(&frame);
    assert_eq!(split_frame(&two, 1 << 20), Ok(Some(frame.len() - 4)), "one frame at a time");
}

#[test]
fn bad_lengths_close_the_connection() {
    assert_eq!(split_frame(&[0xff, 0xff, 0xff, 0xfe], 100), Err(FrameError::NegativeLength(-2)));
    assert_eq!(
        split_frame(&[0, 0, 1, 0], 100),
        Err(FrameError::TooLarge { len: 256, max_packet_bytes: 100 })
    );
    // The limit is checked on the header alone, before any body bytes are buffered.
    assert!(split_frame(&0x7fff_ffffi32.to_be_bytes(), 0xfffff).is_err());
}

#[test]
fn four_letter_words_are_recognised_only_exactly() {
    assert_eq!(four_letter_word(b"ruok"), Some("ruok"));
    assert_eq!(four_letter_word(b"mntr\n"), Some("mntr"));
    assert_eq!(four_letter_word(b"ruo"), None);
    assert_eq!(four_letter_word(b"RUOK"), None);
    assert_eq!(four_letter_word(&[0, 0, 0, 45]), None);
}

#[test]
fn truncated_and_hostile_bodies_are_errors_not_panics() {
    // A string whose length runs past the frame.
    let mut body = vec![0, 0, 0x10, 0];
    body.extend_from_slice(b"/a");
    assert!(matches!(
        Request::read(OpCode::Sync, &mut Reader::new(&body)),
        Err(DecodeError::UnexpectedEof { .. })
    ));
    // A vector claiming 2^31-1 elements must not allocate for them.
    let mut acl = Vec::new();
    acl.extend_from_slice(&[0, 0, 0, 2]);
    acl.extend_from_slice(b"/a");
    acl.extend_from_slice(&0x7fff_ffffi32.to_be_bytes());
    acl.extend_from_slice(&[0; 64]);
    assert!(Request::read(OpCode::SetAcl, &mut Reader::new(&acl)).is_err());
    // Negative lengths other than -1.
    assert_eq!(
        Request::read(OpCode::Sync, &mut Reader::new(&[0xff, 0xff, 0xff, 0xfe])),
        Err(DecodeError::NegativeLength(-2))
    );
    // An op that may not appear inside multi.
    let multi = [0, 0, 0, 11, 0, 0xff, 0xff, 0xff, 0xff];
    assert_eq!(
        Request::read(OpCode::Multi, &mut Reader::new(&multi)),
        Err(DecodeError::BadMultiOp(11))
    );
    // Internal op codes are not requests.
    assert!(Request::read(OpCode::CreateSession, &mut Reader::new(&[])).is_err());
}
