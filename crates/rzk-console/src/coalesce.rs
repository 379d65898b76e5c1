//! One read in flight for a page that reads the whole tree (the overview, the sessions), shared
//! by every request that asked before it began. Each open page refreshes on every change under
//! `/`, so without this N open pages would walk the tree N times per change; with it the walk
//! runs at most once at a time. **Invariant:** a request is answered only by a read that began
//! after it arrived, so it never shows the tree as it was before the change that sent it.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

/// The last read of one page and when it began.
pub(crate) struct Coalesced<T> {
    last: tokio::sync::Mutex<Option<(Instant, Arc<T>)>>,
}

impl<T> Default for Coalesced<T> {
    fn default() -> Self {
        Coalesced { last: tokio::sync::Mutex::new(None) }
    }
}

impl<T> Coalesced<T> {
    /// The result of a `read` that began after this call: the last one, if it did, else a new
    /// one, run while every later caller waits for it. Cancellation safe: a caller dropped
    /// while it reads leaves the last result as it was, and the next caller reads.
    pub(crate) async fn get<F: Future<Output = T>>(&self, read: impl FnOnce() -> F) -> Arc<T> {
        let asked = Instant::now();
        let mut last = self.last.lock().await;
        if let Some((began, value)) = &*last {
            if *began >= asked {
                return value.clone();
            }
        }
        let began = Instant::now();
        let value = Arc::new(read().await);
        *last = Some((began, value.clone()));
        value
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn callers_share_a_read_that_began_after_they_asked() {
        let pages = Arc::new(Coalesced::<Instant>::default());
        let reads = Arc::new(AtomicUsize::new(0));
        let mut asks = Vec::new();
        for _ in 0..20 {
            let (pages, reads) = (pages.clone(), reads.clone());
            asks.push(tokio::spawn(async move {
                let asked = Instant::now();
                let began = pages
                    .get(|| async move {
                        reads.fetch_add(1, Ordering::SeqCst);
                        let began = Instant::now();
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        began
                    })
                    .await;
                assert!(*began >= asked, "answered by a read that began before it asked");
            }));
        }
        for a in asks {
            a.await.unwrap();
        }
        // Twenty at once: one read for the first, one for all who asked while it ran.
        let n = reads.load(Ordering::SeqCst);
        assert!((1..=2).contains(&n), "{n} reads for 20 callers");
        let again = AtomicUsize::new(0);
        pages
            .get(|| async {
                again.fetch_add(1, Ordering::SeqCst);
                Instant::now()
            })
            .await;
        assert_eq!(again.load(Ordering::SeqCst), 1, "a caller after the last read reads again");
    }
}
