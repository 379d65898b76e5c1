//! The task that supervises one ZooKeeper session at a time: it follows the library's
//! connection states, keeps the lease fresh with a heartbeat, declares the session lost when
//! disconnected past the lease (simulated expiry), and opens a new session after a loss.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rzk_client::{Client, SessionState};
use tokio::sync::{mpsc, oneshot};

use super::config::SessionConfig;
use super::snapshot::{ConnectionState, LeaseState, Publisher};

/// The first back-off between attempts to open a new session; it doubles up to
/// [`RECONNECT_BACKOFF_MAX`].
const RECONNECT_BACKOFF_MIN: Duration = Duration::from_millis(100);
const RECONNECT_BACKOFF_MAX: Duration = Duration::from_secs(2);
/// How long a close waits, at most, for the library to close the session on the server
/// (bounded by the session timeout too).
const CLOSE_WAIT_MAX: Duration = Duration::from_secs(3);

/// A request to the supervisor.
pub(super) enum Command {
    /// Close the session; answer on the sender once done.
    Close(Option<oneshot::Sender<()>>),
}

/// Connects one rzk-client session as configured.
pub(super) async fn connect_client(config: &SessionConfig) -> Result<Client, crate::Error> {
    let mut c = Client::connector().with_session_timeout(config.session_timeout);
    if let Some(t) = config.connection_timeout {
        c = c.with_connection_timeout(t);
    }
    for cred in &config.auth {
        c = c.with_auth(cred.scheme.clone(), cred.auth.clone());
    }
    if let Some(login) = &config.sasl {
        c = c.with_sasl(login.clone());
    }
    if let Some(t) = &config.transport {
        c = c.with_transport(t.0.clone());
    } else if let Some(tls) = &config.tls {
        c = c.with_transport(Arc::new(tls.clone()));
    }
    Ok(c.connect(&config.hosts).await?)
}

/// Why serving one session ended.
enum End {
    Lost,
    Close(Option<oneshot::Sender<()>>),
    Failed,
}

/// The supervisor's state; [`Supervisor::run`] is the task.
pub(super) struct Supervisor {
    pub shared: Arc<Publisher>,
    pub cmd_rx: mpsc::UnboundedReceiver<Command>,
}

impl Supervisor {
    /// Supervises sessions, starting with `first`, until closed or failed.
    pub(super) async fn run(mut self, first: Client) {
        let mut client = first;
        loop {
            let end = self.serve(client).await;
            match end {
                End::Failed => {
                    self.shared.publish(|s| {
                        s.state = ConnectionState::Failed;
                        s.client = None;
                        s.session_id = None;
                    });
                    return;
                }
                End::Close(done) => {
                    self.close(done).await;
                    return;
                }
                End::Lost => {
                    self.shared.publish(|s| {
                        s.state = ConnectionState::Lost;
                        s.client = None;
                        s.session_id = None;
                    });
                    match self.reconnect().await {
                        Ok((c, started)) => {
                            let generation = self.shared.snap.borrow().generation + 1;
                            let lease =
                                LeaseState::new(generation, started, &c, &self.shared.config);
                            self.shared.new_lease(lease);
                            self.shared.publish(|s| {
                                s.state = ConnectionState::Reconnected { new_session: true };
                                s.session_id = Some(c.session_id());
                                s.client = Some(c.clone());
                                s.generation = generation;
                            });
                            tracing::info!(
                                session = %c.session_id(),
                                generation,
                                "new session after loss"
                            );
                            client = c;
                        }
                        Err(done) => {
                            self.close(done).await;
                            return;
                        }
                    }
                }
            }
        }
    }

    /// Connects a new session with a doubling back-off until it works or a close is requested.
    async fn reconnect(&mut self) -> Result<(Client, Instant), Option<oneshot::Sender<()>>> {
        let mut backoff = RECONNECT_BACKOFF_MIN;
        loop {
            let started = crate::clock::now();
            let attempt = connect_client(&self.shared.config);
            tokio::select! {
                biased;
                r = attempt => match r {
                    Ok(c) => return Ok((c, started)),
                    Err(e) => tracing::debug!(error = %e, "reconnect failed"),
                },
                cmd = self.cmd_rx.recv() => match cmd {
                    Some(Command::Close(done)) => return Err(done),
                    None => return Err(None),
                },
            }
            tokio::select! {
                biased;
                _ = tokio::time::sleep(backoff) => {}
                cmd = self.cmd_rx.recv() => match cmd {
                    Some(Command::Close(done)) => return Err(done),
                    None => return Err(None),
                },
            }
            backoff = (backoff * 2).min(RECONNECT_BACKOFF_MAX);
        }
    }

    /// Publishes `Closed`, then waits (bounded) for the library to close the session.
    async fn close(&mut self, done: Option<oneshot::Sender<()>>) {
        let generation_client = self.shared.snap.borrow().client.clone();
        let watcher = generation_client.as_ref().map(|c| c.state_watcher());
        drop(generation_client);
        self.shared.publish(|s| {
            s.state = ConnectionState::Closed;
            s.client = None;
            s.session_id = None;
        });
        // Every clone of the client must be dropped for the library to send CloseSession;
        // recipe drivers drop theirs when they see Closed. Wait (bounded) for the library.
        if let Some(mut w) = watcher {
            let bound = self.shared.lease.borrow().timeout.min(CLOSE_WAIT_MAX);
            let _ = tokio::time::timeout(bound, async {
                while !w.peek_state().is_terminated() {
                    w.changed().await;
                }
            })
            .await;
        }
        if let Some(done) = done {
            let _ = done.send(());
        }
    }

    /// Serves one session: connection states, heartbeats, simulated expiry, commands.
    async fn serve(&mut self, client: Client) -> End {
        let shared = self.shared.clone();
        let generation = shared.snap.borrow().generation;
        let mut states = client.state_watcher();
        let mut connected = true;
        let mut beat = tokio::time::interval(shared.heartbeat);
        beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let inflight = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let send_beat = |client: &Client| {
            if inflight.swap(true, std::sync::atomic::Ordering::AcqRel) {
                return;
            }
            let sent = crate::clock::now();
            let fut = client.check_stat("/");
            let shared = shared.clone();
            let inflight = inflight.clone();
            tokio::spawn(async move {
                if fut.await.is_ok() {
                    shared.ack(generation, sent);
                }
                inflight.store(false, std::sync::atomic::Ordering::Release);
            });
        };
        loop {
            let expiry = (!connected && shared.config.simulate_expiry)
                .then(|| shared.lease.borrow().deadline());
            tokio::select! {
                biased;
                st = states.changed() => match st {
                    SessionState::Disconnected => {
                        if connected {
                            connected = false;
                            tracing::debug!(generation, "suspended");
                            shared.publish(|s| {
                                s.state = ConnectionState::Suspended;
                                s.suspensions += 1;
                            });
                        }
                    }
                    SessionState::SyncConnected | SessionState::ConnectedReadOnly => {
                        if !connected {
                            connected = true;
                            tracing::debug!(generation, "reconnected");
                            shared.renegotiated(generation, &client);
                            shared.publish(|s| {
                                s.state = ConnectionState::Reconnected { new_session: false };
                                s.reconnects += 1;
                            });
                            send_beat(&client);
                        }
                    }
                    SessionState::Expired | SessionState::Closed => {
                        tracing::info!(generation, state = %st, "session lost");
                        return End::Lost;
                    }
                    SessionState::AuthFailed => return End::Failed,
                },
                _ = beat.tick(), if connected => send_beat(&client),
                _ = sleep_until(expiry), if expiry.is_some() => {
                    if crate::clock::now() >= shared.lease.borrow().deadline() {
                        tracing::info!(generation, "simulated expiry: disconnected past the lease");
                        return End::Lost;
                    }
                }
                cmd = self.cmd_rx.recv() => match cmd {
                    Some(Command::Close(done)) => return End::Close(done),
                    None => return End::Close(None),
                },
            }
        }
    }
}

/// Sleeps until `at`, or forever for `None`.
pub(crate) async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await,
        None => std::future::pending().await,
    }
}
