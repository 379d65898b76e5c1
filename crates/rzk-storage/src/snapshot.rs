//! Fuzzy snapshots: the tree written in chunks while writes continue.
//!
//! Layout of `snapshot.<start zxid, 16 hex digits>`:
//! magic, start zxid, sessions, node records in depth-first pre-order (each prefixed by a 1
//! byte), then a 0 byte, the end zxid, the node count, and a CRC-32 of everything before it.
//! The snapshot reflects every transaction up to `start_zxid` and possibly some up to
//! `end_zxid`; recovery replays the log from `start_zxid + 1`, idempotently up to `end_zxid`.
//! It is written to a `.tmp` file and renamed only after the log is durable through
//! `end_zxid`, so a snapshot never holds a write the log could lose.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use rzk_core::state::{Node, NodeMeta, RestoredNode, SessionRecord};

use rzk_proto::jute::{Reader, Writer};
use rzk_proto::{Acl, DecodeError};

use crate::backend::{Storage, StorageFile};
use crate::error::StorageError;
use crate::files::pace;

/// Magic at the start of every snapshot.
pub const SNAPSHOT_MAGIC: &[u8; 8] = b"RZKSNAP\x01";
/// Bytes buffered before a write to the file.
const FLUSH_BYTES: usize = 1024 * 1024;
/// With pacing on, the bytes of one write to the file and of one fdatasync of it. A snapshot
/// written at full speed and synced once at the end fills the device queue with tens of
/// megabytes, and every log fdatasync behind it waits. A log sync that lands behind a chunk
/// still waits for that chunk, and every reply waits for the log (a read's too: it may show
/// what the batch being synced wrote), so the chunk bounds the stall a snapshot adds to any
/// reply; smaller chunks cost more syncs. The figures behind this size are in
/// docs/BENCHMARKS.md, "Create's tail".
const PACED_CHUNK_BYTES: usize = 128 * 1024;

/// The file name of a snapshot that starts at `zxid`.
pub fn snapshot_name(start_zxid: i64) -> String {
    format!("snapshot.{start_zxid:016x}")
}

/// The start zxid of a snapshot file name (not of a `.tmp` file).
pub fn parse_snapshot_name(name: &str) -> Option<i64> {
    let hex = name.strip_prefix("snapshot.")?;
    (hex.len() == 16).then(|| i64::from_str_radix(hex, 16).ok()).flatten()
}

/// Snapshots in a directory, newest first.
pub fn list_snapshots(
    storage: &dyn Storage,
    dir: &Path,
) -> Result<Vec<(i64, PathBuf)>, StorageError> {
    let names = storage.list(dir).map_err(|e| StorageError::io("list", dir, e))?;
    let mut out: Vec<(i64, PathBuf)> =
        names.iter().filter_map(|n| Some((parse_snapshot_name(n)?, dir.join(n)))).collect();
    out.sort_by_key(|s| std::cmp::Reverse(s.0));
    Ok(out)
}

/// Streams a snapshot to a temporary file.
pub struct SnapshotWriter {
    storage: Arc<dyn Storage>,
    dir: PathBuf,
    tmp: PathBuf,
    file: Box<dyn StorageFile>,
    offset: u64,
    buf: Writer,
    crc: crc32fast::Hasher,
    start_zxid: i64,
    nodes: u64,
    /// `Some(bytes per second)` when the writer is paced.
    pace_bytes_per_sec: Option<u64>,
    started: Instant,
    unsynced: u64,
}

impl SnapshotWriter {
    /// Starts a snapshot of the state as of `start_zxid`.
    ///
    /// # Errors
    /// [`StorageError::Io`] if the temporary file cannot be created.
    pub fn begin(
        storage: Arc<dyn Storage>,
        dir: &Path,
        start_zxid: i64,
        sessions: &BTreeMap<i64, SessionRecord>,
    ) -> Result<SnapshotWriter, StorageError> {
        let tmp = dir.join(format!("{}.tmp", snapshot_name(start_zxid)));
        let _ = storage.remove(&tmp);
        let file = storage.open_write(&tmp).map_err(|e| StorageError::io("create", &tmp, e))?;
        let mut buf = Writer::with_capacity(FLUSH_BYTES + FLUSH_BYTES / 8);
        buf.raw(SNAPSHOT_MAGIC).i64(start_zxid).i32(sessions.len() as i32);
        for (id, s) in sessions {
            buf.i64(*id).i32(s.timeout_ms).raw(&s.passwd);
        }
        Ok(SnapshotWriter {
            storage,
            dir: dir.to_path_buf(),
            tmp,
            file,
            offset: 0,
            buf,
            crc: crc32fast::Hasher::new(),
            start_zxid,
            nodes: 0,
            pace_bytes_per_sec: None,
            started: Instant::now(),
            unsynced: 0,
        })
    }

    /// Writes at most `bytes_per_sec` on average, `PACED_CHUNK_BYTES` (128 KiB) at a time, each
    /// synced, so that a snapshot does not starve the transaction log's fdatasyncs on the same
    /// device (0: unpaced).
    /// [`SnapshotWriter::flush`] then sleeps; call it outside any lock.
    pub fn paced(mut self, bytes_per_sec: u64) -> SnapshotWriter {
        self.pace_bytes_per_sec = (bytes_per_sec > 0).then_some(bytes_per_sec);
        self
    }

    /// Adds one node. Cheap: it only encodes into a buffer, so it can run under the core's
    /// lock; [`SnapshotWriter::flush`] does the I/O outside it.
    pub fn node(&mut self, path: &str, n: &Node, acl: &[Acl]) {
        let w = &mut self.buf;
        w.raw(&[1]).string(path).buffer_opt(n.data.as_deref());
        Acl::write_vec(acl, w);
        let m = &n.meta;
        w.i64(m.czxid).i64(m.mzxid).i64(m.pzxid).i64(m.ctime).i64(m.mtime);
        w.i64(m.ephemeral_owner).i32(m.version).i32(m.cversion).i32(m.aversion);
        self.nodes += 1;
    }

    /// Bytes of the snapshot so far, buffered ones included.
    pub fn bytes(&self) -> u64 {
        self.offset + self.buf.len() as u64
    }

    /// Writes buffered bytes once enough have gathered.
    ///
    /// # Errors
    /// [`StorageError::Io`] on a failed write.
    pub fn flush(&mut self) -> Result<(), StorageError> {
        let chunk = if self.pace_bytes_per_sec.is_some() { PACED_CHUNK_BYTES } else { FLUSH_BYTES };
        if self.buf.len() >= chunk {
            self.write_buffered()?;
        }
        Ok(())
    }

    fn write_buffered(&mut self) -> Result<(), StorageError> {
        // The buffer is kept, not replaced: growing a fresh one to a MiB for every flush cost
        // a realloc chain and fresh pages each time.
        let bytes = self.buf.as_bytes();
        let written = bytes.len() as u64;
        self.crc.update(bytes);
        self.file
            .write_at(self.offset, bytes)
            .map_err(|e| StorageError::io("write", &self.tmp, e))?;
        self.buf.clear();
        self.offset += written;
        let Some(rate) = self.pace_bytes_per_sec else { return Ok(()) };
        self.unsynced += written;
        if self.unsynced >= PACED_CHUNK_BYTES as u64 {
            self.file.sync_data().map_err(|e| StorageError::io("fdatasync", &self.tmp, e))?;
            self.unsynced = 0;
        }
        pace(self.started, self.offset, rate);
        Ok(())
    }

    /// Seals the snapshot: footer, fdatasync, rename into place, directory sync. Call only
    /// once the log is durable through `end_zxid`.
    ///
    /// # Errors
    /// [`StorageError::Io`] on any failed step; the temporary file is then left behind and
    /// ignored (and purged) by recovery.
    pub fn finish(mut self, end_zxid: i64) -> Result<PathBuf, StorageError> {
        self.buf.raw(&[0]).i64(end_zxid).i64(self.nodes as i64);
        self.write_buffered()?;
        let crc = std::mem::replace(&mut self.crc, crc32fast::Hasher::new()).finalize();
        self.file
            .write_at(self.offset, &crc.to_be_bytes())
            .and_then(|_| self.file.sync_data())
            .map_err(|e| StorageError::io("fdatasync", &self.tmp, e))?;
        let path = self.dir.join(snapshot_name(self.start_zxid));
        self.storage
            .rename(&self.tmp, &path)
            .map_err(|e| StorageError::io("rename", &self.tmp, e))?;
        self.storage
            .sync_dir(&self.dir)
            .map_err(|e| StorageError::io("fsync dir", &self.dir, e))?;
        Ok(path)
    }
}

/// A snapshot read back into a tree.
#[derive(Debug)]
pub struct LoadedSnapshot {
    /// Every transaction up to here is in the snapshot (the state's last zxid).
    pub start_zxid: i64,
    /// Transactions after `start_zxid` up to here may be in it, partly.
    pub end_zxid: i64,
    /// The tree and sessions as the snapshot holds them.
    pub state: rzk_core::State,
    /// Nodes read.
    pub nodes: usize,
}

/// Parses and verifies a snapshot file's bytes, building the tree as it goes.
///
/// # Errors
/// [`StorageError::Corrupt`] naming the file and the offset of the problem, or
/// [`StorageError::Restore`] when the nodes do not form a tree.
pub fn load(path: &Path, bytes: &[u8]) -> Result<LoadedSnapshot, StorageError> {
    let corrupt = |offset: usize, why: String| StorageError::corrupt(path, offset as u64, why);
    if bytes.len() < SNAPSHOT_MAGIC.len() + 4 || &bytes[..8] != SNAPSHOT_MAGIC {
        return Err(corrupt(0, "not a snapshot (bad magic)".into()));
    }
    let (body, crc) = bytes.split_at(bytes.len() - 4);
    let crc = u32::from_be_bytes([crc[0], crc[1], crc[2], crc[3]]);
    if crc32fast::hash(body) != crc {
        return Err(corrupt(body.len(), "checksum mismatch".into()));
    }
    let mut r = Reader::new(&body[8..]);
    let restore = |source| StorageError::Restore { file: path.to_path_buf(), source };
    let mut parse = || -> Result<Result<LoadedSnapshot, StorageError>, DecodeError> {
        let start_zxid = r.read_i64()?;
        let n = r.read_i32()?;
        let mut sessions = BTreeMap::new();
        for _ in 0..n.max(0) {
            let id = r.read_i64()?;
            let timeout_ms = r.read_i32()?;
            let mut passwd = [0u8; 16];
            passwd.copy_from_slice(r.read_bytes(16)?);
            sessions.insert(id, SessionRecord { timeout_ms, passwd });
        }
        // About 90 bytes per node on disk: a good first guess for the table size.
        let mut builder = rzk_core::State::builder(start_zxid, sessions, body.len() / 90);
        let mut nodes = 0usize;
        while r.read_bytes(1)?[0] == 1 {
            // Field order is the file's: path, data, ACL, then the metadata.
            let path = r.read_string()?;
            let data = r.read_buffer_opt()?;
            let acl = Acl::read_vec(&mut r)?;
            let meta = NodeMeta {
                czxid: r.read_i64()?,
                mzxid: r.read_i64()?,
                pzxid: r.read_i64()?,
                ctime: r.read_i64()?,
                mtime: r.read_i64()?,
                ephemeral_owner: r.read_i64()?,
                version: r.read_i32()?,
                cversion: r.read_i32()?,
                aversion: r.read_i32()?,
                acl,
            };
            let node = RestoredNode { path, data, meta };
            if let Err(e) = builder.push(node) {
                return Ok(Err(restore(e)));
            }
            nodes += 1;
        }
        let end_zxid = r.read_i64()?;
        let count = r.read_i64()?;
        if count != nodes as i64 {
            return Err(DecodeError::UnexpectedEof { needed: count as usize, remaining: nodes });
        }
        Ok(builder
            .finish()
            .map(|state| LoadedSnapshot { start_zxid, end_zxid, state, nodes })
            .map_err(restore))
    };
    let result = parse();
    match result {
        Ok(inner) => inner,
        Err(e) => Err(corrupt(body.len() - r.remaining(), e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::CrashStorage;
    use rzk_core::state::State;

    /// A paced snapshot reaches the device in chunks of about 128 KiB (plus the one node that
    /// crossed the line), each synced before the next is written: what a log sync queued
    /// behind the snapshot waits for. The bound is written out, not taken from the constant,
    /// so that raising the chunk back to a MiB fails here.
    #[test]
    fn a_paced_snapshot_is_written_and_synced_in_small_chunks() {
        let storage = CrashStorage::new();
        let dir = Path::new("/snap");
        storage.create_dir_all(dir).unwrap();
        let state = State::new();
        let root = state.node("/").expect("the root");
        let mut w = SnapshotWriter::begin(Arc::new(storage.clone()), dir, 0, &BTreeMap::new())
            .unwrap()
            // Fast enough that pacing never sleeps here; the chunking is what is under test.
            .paced(u64::MAX / 2);
        let syncs_before = storage.syncs();
        let long = "n".repeat(200);
        for i in 0..20_000 {
            w.node(&format!("/{long}{i}"), root, &[]);
            w.flush().unwrap();
        }
        let written = w.bytes();
        let syncs = storage.syncs() - syncs_before;
        let bytes_per_sync_max = 128 * 1024 + 400;
        let at_least = written / bytes_per_sync_max;
        assert!(written > 4 * 1024 * 1024, "{written} bytes: enough for several MiB");
        assert!(syncs >= at_least, "{syncs} syncs for {written} bytes: at least {at_least}");
    }
}
