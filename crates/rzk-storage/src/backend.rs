//! Where bytes go: a small file-system interface, a real implementation, and a crash-injecting
//! one for tests.
//!
//! The interface is exactly what the log and snapshots need: positional writes into files,
//! `sync_data` (fdatasync), atomic renames and directory syncs. [`CrashStorage`] keeps, for
//! every file and directory entry, what has been written and what has been synced, so a test
//! can "pull the plug" at any moment and see only what a real disk would have kept.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// An open file that can be written at any offset.
pub trait StorageFile: Send {
    /// Writes all of `data` at `offset`, extending the file if needed.
    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()>;
    /// Makes everything written so far durable (fdatasync).
    fn sync_data(&mut self) -> io::Result<()>;
    /// Sets the file length (extends with zeros).
    fn set_len(&mut self, len: u64) -> io::Result<()>;
}

/// A directory tree of files.
pub trait Storage: Send + Sync {
    /// Creates a directory and its parents.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// File names (not paths) in a directory.
    fn list(&self, dir: &Path) -> io::Result<Vec<String>>;
    /// The whole contents of a file.
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// Opens a file for writing, creating it (empty) if it does not exist.
    fn open_write(&self, path: &Path) -> io::Result<Box<dyn StorageFile>>;
    /// Renames a file, replacing any file at `to`.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Removes a file.
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// Makes creations, renames and removals in a directory durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
}

/// The real file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct FsStorage;

struct FsFile(fs::File);

impl StorageFile for FsFile {
    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        // One positioned write instead of a seek and a write: the log thread does this once
        // per batch, on the path of every durable reply.
        #[cfg(unix)]
        {
            std::os::unix::fs::FileExt::write_all_at(&self.0, data, offset)
        }
        #[cfg(not(unix))]
        {
            use std::io::{Seek, SeekFrom, Write};
            self.0.seek(SeekFrom::Start(offset))?;
            self.0.write_all(data)
        }
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.0.sync_data()
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }
}

impl Storage for FsStorage {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        fs::create_dir_all(dir)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut out = Vec::new();
        for e in fs::read_dir(dir)? {
            let e = e?;
            if e.file_type()?.is_file() {
                out.push(e.file_name().to_string_lossy().into_owned());
            }
        }
        out.sort();
        Ok(out)
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        let mut f = fs::File::open(path)?;
        let mut buf = Vec::new();
        f.read_to_end(&mut buf)?;
        Ok(buf)
    }

    fn open_write(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        let f = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        Ok(Box::new(FsFile(f)))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        fs::File::open(dir)?.sync_all()
    }
}

#[derive(Debug, Clone, Default)]
struct Contents {
    live: Vec<u8>,
    durable: Vec<u8>,
    /// Byte ranges written since the last sync, in order: what a crash may keep or lose.
    unsynced: Vec<(u64, usize)>,
}

#[derive(Debug, Default)]
struct Disk {
    /// File id by path, as the running process sees the namespace.
    live_names: BTreeMap<PathBuf, usize>,
    /// File id by path, as of the last directory sync.
    durable_names: BTreeMap<PathBuf, usize>,
    files: Vec<Contents>,
    syncs: u64,
    /// Fail every I/O call once this many data syncs have happened (a frozen disk).
    freeze_after_syncs: Option<u64>,
}

/// What survives a simulated power loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashMode {
    /// Only synced bytes and synced directory entries.
    SyncedOnly,
    /// Synced bytes plus, per file, a prefix of the unsynced writes chosen from `seed`, the
    /// last of them possibly cut mid-way: a torn write.
    Torn {
        /// Chooses how much of each file's unsynced tail survives.
        seed: u64,
    },
}

/// An in-memory disk that tracks written versus synced bytes and can crash.
#[derive(Debug, Clone, Default)]
pub struct CrashStorage {
    disk: Arc<Mutex<Disk>>,
}

struct CrashFile {
    disk: Arc<Mutex<Disk>>,
    id: usize,
}

fn frozen(d: &Disk) -> io::Result<()> {
    match d.freeze_after_syncs {
        Some(n) if d.syncs >= n => Err(io::Error::other("simulated disk failure")),
        _ => Ok(()),
    }
}

impl StorageFile for CrashFile {
    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        let mut d = self.disk.lock().unwrap_or_else(|e| e.into_inner());
        frozen(&d)?;
        let f = &mut d.files[self.id];
        let end = offset as usize + data.len();
        if f.live.len() < end {
            f.live.resize(end, 0);
        }
        f.live[offset as usize..end].copy_from_slice(data);
        f.unsynced.push((offset, data.len()));
        Ok(())
    }

    fn sync_data(&mut self) -> io::Result<()> {
        let mut d = self.disk.lock().unwrap_or_else(|e| e.into_inner());
        frozen(&d)?;
        d.syncs += 1;
        let f = &mut d.files[self.id];
        f.durable = f.live.clone();
        f.unsynced.clear();
        Ok(())
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        let mut d = self.disk.lock().unwrap_or_else(|e| e.into_inner());
        frozen(&d)?;
        let f = &mut d.files[self.id];
        f.live.resize(len as usize, 0);
        Ok(())
    }
}

impl CrashStorage {
    /// An empty disk.
    pub fn new() -> CrashStorage {
        CrashStorage::default()
    }

    /// Number of data syncs so far.
    pub fn syncs(&self) -> u64 {
        self.lock().syncs
    }

    /// Makes every I/O call fail once `n` data syncs have happened, as a dying disk would.
    pub fn freeze_after_syncs(&self, n: u64) {
        self.lock().freeze_after_syncs = Some(n);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Disk> {
        self.disk.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The disk a restarted machine would find: a new, independent storage.
    pub fn crash(&self, mode: CrashMode) -> CrashStorage {
        let d = self.lock();
        let mut rng = mode_seed(mode);
        let mut after = Disk::default();
        for (name, id) in &d.durable_names {
            let f = &d.files[*id];
            let mut bytes = f.durable.clone();
            if let CrashMode::Torn { .. } = mode {
                // Keep a random prefix of the unsynced writes, the last one maybe partially.
                let keep = (next(&mut rng) % (f.unsynced.len() as u64 + 1)) as usize;
                for (i, (off, len)) in f.unsynced.iter().take(keep).enumerate() {
                    let mut len = *len;
                    if i + 1 == keep {
                        len = (next(&mut rng) % (len as u64 + 1)) as usize;
                    }
                    let (off, end) = (*off as usize, *off as usize + len);
                    if bytes.len() < end {
                        bytes.resize(end, 0);
                    }
                    bytes[off..end].copy_from_slice(&f.live[off..end]);
                }
            }
            let new_id = after.files.len();
            after.files.push(Contents {
                live: bytes.clone(),
                durable: bytes,
                unsynced: Vec::new(),
            });
            after.live_names.insert(name.clone(), new_id);
            after.durable_names.insert(name.clone(), new_id);
        }
        CrashStorage { disk: Arc::new(Mutex::new(after)) }
    }

    /// Flips bits in a file's durable and live contents, for corruption tests.
    pub fn corrupt(&self, path: &Path, offset: usize) -> io::Result<()> {
        let mut d = self.lock();
        let id = *d.live_names.get(path).ok_or(io::ErrorKind::NotFound)?;
        let f = &mut d.files[id];
        if offset >= f.live.len() {
            return Err(io::ErrorKind::InvalidInput.into());
        }
        f.live[offset] ^= 0x5a;
        if offset < f.durable.len() {
            f.durable[offset] ^= 0x5a;
        }
        Ok(())
    }
}

fn mode_seed(mode: CrashMode) -> u64 {
    match mode {
        CrashMode::SyncedOnly => 0,
        CrashMode::Torn { seed } => seed ^ 0x9e37_79b9_7f4a_7c15,
    }
}

fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Storage for CrashStorage {
    fn create_dir_all(&self, _dir: &Path) -> io::Result<()> {
        frozen(&self.lock())
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let d = self.lock();
        Ok(d.live_names
            .keys()
            .filter(|p| p.parent() == Some(dir))
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect())
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        let d = self.lock();
        let id = *d.live_names.get(path).ok_or(io::ErrorKind::NotFound)?;
        Ok(d.files[id].live.clone())
    }

    fn open_write(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        let mut d = self.lock();
        frozen(&d)?;
        let id = match d.live_names.get(path) {
            Some(id) => *id,
            None => {
                let id = d.files.len();
                d.files.push(Contents::default());
                d.live_names.insert(path.to_path_buf(), id);
                id
            }
        };
        Ok(Box::new(CrashFile { disk: self.disk.clone(), id }))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut d = self.lock();
        frozen(&d)?;
        let id = d.live_names.remove(from).ok_or(io::ErrorKind::NotFound)?;
        d.live_names.insert(to.to_path_buf(), id);
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let mut d = self.lock();
        frozen(&d)?;
        d.live_names.remove(path).ok_or(io::ErrorKind::NotFound)?;
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut d = self.lock();
        frozen(&d)?;
        let live: Vec<(PathBuf, usize)> = d
            .live_names
            .iter()
            .filter(|(p, _)| p.parent() == Some(dir))
            .map(|(p, id)| (p.clone(), *id))
            .collect();
        d.durable_names.retain(|p, _| p.parent() != Some(dir));
        d.durable_names.extend(live);
        Ok(())
    }
}
