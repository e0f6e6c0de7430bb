//! The worker thread behind the loaders: it prepares batch after batch and hands them
//! over a bounded channel, so at most `prefetch` batches wait while the consumer
//! trains on the current one.

use std::sync::mpsc::{Receiver, sync_channel};
use std::thread::JoinHandle;

use crate::error::GraphResult;

/// The batches of one epoch, prepared ahead on a worker thread (see
/// [`loader`](crate::NeighborLoader)'s module documentation). Yields `Ok(batch)` in
/// order; an error ends the epoch after it is yielded. Dropping the iterator early
/// stops the worker and joins it.
#[derive(Debug)]
pub struct Batches<T> {
    rx: Option<Receiver<GraphResult<T>>>,
    worker: Option<JoinHandle<()>>,
    remaining: usize,
}

impl<T: Send + 'static> Batches<T> {
    /// Runs `make(0)`, `make(1)`, ... `make(count - 1)` on a new thread, at most
    /// `prefetch` results ahead of the consumer; stops after the first error.
    pub(crate) fn spawn<F>(count: usize, prefetch: usize, mut make: F) -> Self
    where
        F: FnMut(usize) -> GraphResult<T> + Send + 'static,
    {
        let (tx, rx) = sync_channel(prefetch.max(1));
        let worker = std::thread::Builder::new()
            .name("shade-loader".into())
            .spawn(move || {
                for i in 0..count {
                    let batch = make(i);
                    let failed = batch.is_err();
                    // The consumer hung up (the iterator was dropped): stop.
                    if tx.send(batch).is_err() || failed {
                        return;
                    }
                }
            });
        match worker {
            Ok(handle) => Batches {
                rx: Some(rx),
                worker: Some(handle),
                remaining: count,
            },
            // No thread could be started (resource limits): report it as the first
            // batch's error instead of panicking.
            Err(e) => {
                let (tx, rx) = sync_channel(1);
                let _ = tx.send(Err(crate::error::GraphError::Io {
                    op: "start",
                    path: "the loader's worker thread".into(),
                    message: e.to_string(),
                }));
                Batches {
                    rx: Some(rx),
                    worker: None,
                    remaining: 1,
                }
            }
        }
    }

    fn finish(&mut self) {
        self.rx = None;
        self.remaining = 0;
        if let Some(worker) = self.worker.take()
            && let Err(panic) = worker.join()
        {
            std::panic::resume_unwind(panic);
        }
    }
}

impl<T: Send + 'static> Iterator for Batches<T> {
    type Item = GraphResult<T>;

    fn next(&mut self) -> Option<Self::Item> {
        let rx = self.rx.as_ref()?;
        match rx.recv() {
            Ok(Ok(batch)) => {
                self.remaining = self.remaining.saturating_sub(1);
                Some(Ok(batch))
            }
            Ok(Err(e)) => {
                self.finish();
                Some(Err(e))
            }
            // The worker is done (or died: `finish` resumes its panic).
            Err(_) => {
                self.finish();
                None
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.remaining))
    }
}

impl<T> Drop for Batches<T> {
    fn drop(&mut self) {
        // Hanging up first unblocks a worker waiting on a full channel.
        self.rx = None;
        if let Some(worker) = self.worker.take() {
            // A panic is not resumed while dropping (that would abort); the consumer
            // sees it only if it reads on.
            let _ = worker.join();
        }
    }
}
