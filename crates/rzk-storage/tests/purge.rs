//! Autopurge runs beside a snapshot being written: it must not delete that snapshot's `.tmp`
//! file, and a file that disappears under it (renamed by the snapshot, or removed by another
//! purge) is already what it wanted.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rzk_storage::snapshot::snapshot_name;
use rzk_storage::{purge, CrashStorage, Storage, StorageFile};

const DIR: &str = "/data";

fn touch(storage: &dyn Storage, name: &str) {
    let mut f = storage.open_write(&Path::new(DIR).join(name)).unwrap();
    f.write_at(0, b"x").unwrap();
    f.sync_data().unwrap();
}

fn names(storage: &dyn Storage) -> Vec<String> {
    let mut n = storage.list(Path::new(DIR)).unwrap();
    n.sort();
    n
}

#[test]
fn a_tmp_newer_than_the_newest_snapshot_is_kept() {
    let storage = CrashStorage::new();
    storage.create_dir_all(Path::new(DIR)).unwrap();
    for zxid in [0x10, 0x20, 0x30] {
        touch(&storage, &snapshot_name(zxid));
    }
    // Abandoned by a crash before the newest snapshot was sealed.
    let abandoned = format!("{}.tmp", snapshot_name(0x18));
    // Being written right now.
    let in_progress = format!("{}.tmp", snapshot_name(0x40));
    touch(&storage, &abandoned);
    touch(&storage, &in_progress);

    let removed = purge(&storage, Path::new(DIR), Path::new(DIR), 1).unwrap();

    let left = names(&storage);
    assert_eq!(left, vec![snapshot_name(0x30), in_progress.clone()], "removed {removed:?}");
    assert_eq!(removed.len(), 3);
}

/// Removes the named file itself, then reports NotFound: what purge sees when the snapshot
/// thread renames its `.tmp` between purge's listing and its remove.
struct RacingStorage {
    inner: CrashStorage,
    vanishes: Mutex<Option<PathBuf>>,
}

impl Storage for RacingStorage {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.inner.list(dir)
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.inner.read(path)
    }
    fn open_write(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        self.inner.open_write(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        let mut v = self.vanishes.lock().unwrap();
        if v.as_deref() == Some(path) {
            *v = None;
            self.inner.remove(path)?;
            return Err(io::Error::new(io::ErrorKind::NotFound, "gone meanwhile"));
        }
        self.inner.remove(path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.inner.sync_dir(dir)
    }
}

#[test]
fn a_file_gone_meanwhile_is_not_an_error() {
    let storage = RacingStorage { inner: CrashStorage::new(), vanishes: Mutex::new(None) };
    storage.create_dir_all(Path::new(DIR)).unwrap();
    for zxid in [0x10, 0x20] {
        touch(&storage, &snapshot_name(zxid));
    }
    let old = Path::new(DIR).join(snapshot_name(0x10));
    *storage.vanishes.lock().unwrap() = Some(old.clone());

    let removed = purge(&storage, Path::new(DIR), Path::new(DIR), 1).unwrap();

    assert!(storage.vanishes.lock().unwrap().is_none(), "the race was not exercised");
    assert!(!removed.contains(&old), "purge claims a removal it did not make");
    assert_eq!(names(&storage), vec![snapshot_name(0x20)]);
}
