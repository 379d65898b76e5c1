//! The binary form of transactions in the log. Big-endian jute primitives; see
//! `docs/storage-format.md`.

use rzk_core::{Txn, TxnOp};
use rzk_proto::jute::{Reader, Writer};
use rzk_proto::{Acl, DecodeError};

/// Version byte at the start of every record payload.
pub const RECORD_VERSION: u8 = 1;

const CREATE_SESSION: u8 = 1;
const CLOSE_SESSION: u8 = 2;
const CREATE: u8 = 3;
const DELETE: u8 = 4;
const SET_DATA: u8 = 5;
const SET_ACL: u8 = 6;
const CHECK: u8 = 7;
const MULTI: u8 = 8;
const ERROR: u8 = 9;
/// CloseSession with the paths it deleted; tag 2 is read as one that names none.
const CLOSE_SESSION_PATHS: u8 = 10;

/// A transaction with the first zxid of the sync batch it was written in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedTxn {
    /// The transaction.
    pub txn: Txn,
    /// First zxid of its batch: tells a torn tail from corruption during recovery.
    pub batch_first_zxid: i64,
}

/// Encodes a log record payload.
pub fn encode(txn: &Txn, batch_first_zxid: i64, w: &mut Writer) {
    w.raw(&[RECORD_VERSION]);
    w.i64(txn.zxid).i64(txn.time_ms).i64(txn.session_id).i64(batch_first_zxid);
    encode_op(&txn.op, w);
}

fn encode_op(op: &TxnOp, w: &mut Writer) {
    match op {
        TxnOp::CreateSession { timeout_ms, passwd } => {
            w.raw(&[CREATE_SESSION]).i32(*timeout_ms).raw(passwd);
        }
        TxnOp::CloseSession { paths } => {
            w.raw(&[CLOSE_SESSION_PATHS]).string_vec(paths);
        }
        TxnOp::Create { path, data, acl, ephemeral_owner, parent_cversion } => {
            w.raw(&[CREATE]).string(path).buffer_opt(data.as_deref());
            Acl::write_vec(acl, w);
            w.i64(*ephemeral_owner).i32(*parent_cversion);
        }
        TxnOp::Delete { path } => {
            w.raw(&[DELETE]).string(path);
        }
        TxnOp::SetData { path, data, version } => {
            w.raw(&[SET_DATA]).string(path).buffer_opt(data.as_deref()).i32(*version);
        }
        TxnOp::SetAcl { path, acl, aversion } => {
            w.raw(&[SET_ACL]).string(path);
            Acl::write_vec(acl, w);
            w.i32(*aversion);
        }
        TxnOp::Check { path } => {
            w.raw(&[CHECK]).string(path);
        }
        TxnOp::Multi(ops) => {
            w.raw(&[MULTI]).i32(ops.len() as i32);
            for op in ops {
                encode_op(op, w);
            }
        }
        TxnOp::Error { err } => {
            w.raw(&[ERROR]).i32(*err);
        }
    }
}

fn read_byte(r: &mut Reader<'_>) -> Result<u8, DecodeError> {
    let b = r.read_bytes(1)?;
    Ok(b[0])
}

/// Decodes a log record payload.
pub fn decode(payload: &[u8]) -> Result<LoggedTxn, DecodeError> {
    let mut r = Reader::new(payload);
    let version = read_byte(&mut r)?;
    if version != RECORD_VERSION {
        return Err(DecodeError::UnknownOpCode(i32::from(version)));
    }
    let zxid = r.read_i64()?;
    let time_ms = r.read_i64()?;
    let session_id = r.read_i64()?;
    let batch_first_zxid = r.read_i64()?;
    let op = decode_op(&mut r, true)?;
    Ok(LoggedTxn { txn: Txn { zxid, time_ms, session_id, op }, batch_first_zxid })
}

fn decode_op(r: &mut Reader<'_>, allow_multi: bool) -> Result<TxnOp, DecodeError> {
    let tag = read_byte(r)?;
    Ok(match tag {
        CREATE_SESSION => {
            let timeout_ms = r.read_i32()?;
            let mut passwd = [0u8; 16];
            passwd.copy_from_slice(r.read_bytes(16)?);
            TxnOp::CreateSession { timeout_ms, passwd }
        }
        CLOSE_SESSION => TxnOp::CloseSession { paths: Vec::new() },
        CLOSE_SESSION_PATHS => TxnOp::CloseSession { paths: r.read_string_vec()? },
        CREATE => TxnOp::Create {
            path: r.read_string()?,
            data: r.read_buffer_opt()?,
            acl: Acl::read_vec(r)?,
            ephemeral_owner: r.read_i64()?,
            parent_cversion: r.read_i32()?,
        },
        DELETE => TxnOp::Delete { path: r.read_string()? },
        SET_DATA => TxnOp::SetData {
            path: r.read_string()?,
            data: r.read_buffer_opt()?,
            version: r.read_i32()?,
        },
        SET_ACL => TxnOp::SetAcl {
            path: r.read_string()?,
            acl: Acl::read_vec(r)?,
            aversion: r.read_i32()?,
        },
        CHECK => TxnOp::Check { path: r.read_string()? },
        MULTI if allow_multi => {
            let n = r.read_i32()?;
            if n < 0 {
                return Err(DecodeError::NegativeLength(n));
            }
            let mut ops = Vec::with_capacity((n as usize).min(r.remaining()));
            for _ in 0..n {
                ops.push(decode_op(r, false)?);
            }
            TxnOp::Multi(ops)
        }
        ERROR => TxnOp::Error { err: r.read_i32()? },
        other => return Err(DecodeError::UnknownOpCode(i32::from(other))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn logged(op: TxnOp) -> LoggedTxn {
        LoggedTxn { txn: Txn { zxid: 9, time_ms: 1, session_id: 7, op }, batch_first_zxid: 8 }
    }

    #[test]
    fn a_close_names_its_paths_and_an_old_close_reads_as_naming_none() {
        let close = logged(TxnOp::CloseSession { paths: vec!["/a/e1".into(), "/b".into()] });
        let mut w = Writer::new();
        encode(&close.txn, close.batch_first_zxid, &mut w);
        assert_eq!(decode(w.as_bytes()).unwrap(), close);
        // The record a server wrote before the paths were logged.
        let mut old = Writer::new();
        old.raw(&[RECORD_VERSION]).i64(9).i64(1).i64(7).i64(8).raw(&[CLOSE_SESSION]);
        assert_eq!(decode(old.as_bytes()).unwrap(), logged(TxnOp::CloseSession { paths: vec![] }));
    }
}
