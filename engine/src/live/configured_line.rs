//! `ticklane run --config FILE`: a configured line with everything that runs beside it, the
//! way the binary runs it and a test can without a process. In order: the admin server
//! (so that `/health` says Starting through the stagger), the browser view, the staggered
//! start, the feed line's sockets, the subscriber server, then the line itself until it
//! ends or the stop flag is set; the servers stop after it (the subscriber server
//! gracefully, the others when their handles drop).
//!
//! Nothing here prints: what a person is told as the run goes is handed to the caller as
//! [`RunNotice`]s, and the end as a [`ConfiguredLineRun`].

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use crate::admin::{AdminServer, AdminState, FeedHandles, ServerCounters, ServerLimits};
use crate::config::{
    ConfigError, Conflict, FeedConfig, Instance, Place, RunConfig, ServeSection, TlsFiles,
};
use crate::health::Health;
use crate::overload::{OverloadConfig, SubscriberConfig, SubscriberHub};
use crate::serve::accounts::verifier::AccountsSource;
use crate::serve::accounts::AccountTable;
use crate::serve::audit::AuditLog;
use crate::serve::{
    start_secure_server, AccountsConfig, GuardCounters, GuardedAdmission, ServeConfig, ServeCounts,
    ServeHandle, ServeSecurity, SnapshotImages,
};
use crate::serve_guard::{AdmissionConfig, AdmissionCounts};
use crate::snapshot::{SnapshotError, SnapshotReader, SnapshotWriter};
use crate::web::{WebLimits, WebSecurity, WebServer, WebState};
use ticklane_feed::net::NetError;

use super::{
    process_seed, run_served_line, stagger_delay, stagger_start, ConsumerHandles, LineHandles,
    LineRun, LineSource, StreamConsumer,
};
use crate::dependency::{Dependency, DependencyKind};

/// The addresses given on the command line, each over the file's own key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConfiguredLineOptions {
    /// The admin server (`admin.listen`).
    pub admin: Option<SocketAddr>,
    /// The browser view (`web.listen`).
    pub web: Option<SocketAddr>,
    /// The subscriber server (`serve.listen`).
    pub serve: Option<SocketAddr>,
}

/// What a run says as it goes, in this order (each at most once).
pub enum RunNotice<'a> {
    /// A MoldUDP64 line with no retransmission server: its gaps are declared lost.
    NoRequestServer,
    /// The admin server listens at this address; admin calls need the token if it is set.
    Admin {
        /// Where it listens.
        addr: SocketAddr,
        /// Whether a token is configured (without one, admin calls are off).
        token: bool,
    },
    /// The browser view listens at this address.
    Web {
        /// Where it listens.
        addr: SocketAddr,
        /// Whether it speaks HTTPS (`web.tls_cert`).
        tls: bool,
        /// Whether a browser must log in (`serve.accounts`).
        logins: bool,
    },
    /// This instance waits out its staggered start before it connects.
    Staggered {
        /// The instance (`engine.instance`).
        instance: &'a Instance,
        /// How long it waits.
        delay: Duration,
    },
    /// The subscriber server listens at this address.
    Serve(SocketAddr),
    /// The line's sockets are open and it starts.
    Ready(&'a LineSource),
}

/// How a configured run ended.
pub struct ConfiguredLineRun {
    /// The line's run: books, reports, latency.
    pub run: LineRun,
    /// The subscriber server's final counts and its admission's, if it ran.
    pub served: Option<(ServeCounts, AdmissionCounts)>,
    /// Whether the line had no way to recover a gap (a MoldUDP64 line with no retransmission
    /// server), which its summary says.
    pub unrecoverable: bool,
}

/// Why a configured run could not start, or failed.
#[derive(Debug, thiserror::Error)]
pub enum ConfiguredLineError {
    /// The configuration refuses what was asked (exit 2).
    #[error("{0}")]
    Config(#[from] ConfigError),
    /// The snapshot file could not be created or opened.
    #[error("{what}snapshot {}", path.display())]
    Snapshot {
        /// Who opened it (empty for the line's own writer).
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: SnapshotError,
    },
    /// A server could not start (its address cannot be bound, say).
    #[error("{what} ({keys})")]
    Server {
        /// Which server.
        what: &'static str,
        /// The key and flag that name its address.
        keys: &'static str,
        /// Why (the error names the address).
        #[source]
        source: io::Error,
    },
    /// The feed's sockets could not be opened.
    #[error("{0}")]
    Feed(#[from] NetError),
    /// The line failed to run (a thread could not start, the books could not be allocated).
    #[error("{0}")]
    Line(#[from] io::Error),
    /// A server's certificate or key, checked at load, no longer serves at start (exit 2,
    /// as at load).
    #[error("{keys}: {error}")]
    Tls {
        /// The section's keys (`serve.tls_cert / serve.tls_key`).
        keys: &'static str,
        /// What is wrong with the files.
        error: Box<crate::serve::tls::TlsConfigError>,
    },
    /// The accounts file, checked at load, no longer loads at start (exit 2, as at load).
    #[error("serve.accounts: {0}")]
    Accounts(Box<crate::serve::accounts::AccountsError>),
    /// The audit file cannot be opened for appending.
    #[error("serve.audit_log: {path}: {source}")]
    Audit {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The subscriber server's thread failed.
    #[error("stopping the subscriber server")]
    ServeStop(#[source] io::Error),
    /// The update stream's consumer (the Aeron publisher) could not start.
    #[error("{0}")]
    Consumer(#[source] io::Error),
    /// The configuration asks for a consumer this build leaves out (`[aeron]` without the
    /// `aeron` feature): a usage error (exit 2).
    #[error("{0}")]
    NotBuilt(String),
}

/// Runs the configured line with its servers until it ends or `stop` is set, telling
/// `notice` what happens as it goes. `health` is the process's, made before the run (so
/// that a signal during the stagger already drains it); `stop` is the shutdown flag the
/// signal handler sets. `consumer`, when given, is started beside the subscriber server
/// and told when the line has ended.
///
/// # Errors
///
/// [`ConfiguredLineError`]: a configuration conflict (`--web` or `--serve` without
/// `snapshot.path`) before anything starts; a snapshot, server or feed that cannot be
/// opened; a line that could not run.
pub fn run_configured_line(
    config: &RunConfig,
    options: ConfiguredLineOptions,
    health: Arc<Health>,
    stop: &Arc<AtomicBool>,
    notice: &mut dyn FnMut(RunNotice<'_>),
    consumer: Option<&mut dyn StreamConsumer>,
) -> Result<ConfiguredLineRun, ConfiguredLineError> {
    let admin_listen = options.admin.or(config.admin.listen);
    let web_listen = options.web.or(config.web.listen);
    let serve_listen = options.serve.or(config.serve.listen);
    // The flags read the snapshot, as the file's own keys do (those are refused when the
    // file is read): refused before anything starts.
    if config.snapshot.path.is_none() {
        if options.web.is_some() {
            return Err(without_snapshot(config, Conflict::WebWithoutSnapshot).into());
        }
        if options.serve.is_some() {
            return Err(without_snapshot(config, Conflict::ServeWithoutSnapshot).into());
        }
    }
    // A consumer that does not run for this file is as good as none.
    let mut consumer = consumer.filter(|c| c.wanted(config));
    if consumer.is_some() && config.snapshot.path.is_none() {
        return Err(without_snapshot(config, Conflict::AeronWithoutSnapshot).into());
    }
    let pipeline = config.pipeline()?;
    let feed = config.feed_config()?;
    let snapshot = match &config.snapshot.path {
        Some(path) => Some(
            SnapshotWriter::create(path, config.snapshot.capacity, config.snapshot.depth).map_err(
                |source| ConfiguredLineError::Snapshot {
                    what: "",
                    path: path.clone(),
                    source,
                },
            )?,
        ),
        None => None,
    };
    let unrecoverable = matches!(&feed, FeedConfig::Mold(c) if c.request_server.is_none());
    if unrecoverable {
        notice(RunNotice::NoRequestServer);
    }
    let mut handles = LineHandles::new(&config.feed_name, &feed);
    // A consumer that is a dependency (the Aeron publication) has its handle from the
    // start, beside the line's, so that the admin server reports and commands it.
    let consumer_dependency = consumer
        .as_deref()
        .filter(|c| c.wanted(config))
        .and_then(StreamConsumer::dependency)
        .map(|suffix| {
            let dependency = Arc::new(Dependency::new(
                format!("{}.{suffix}", config.feed_name),
                DependencyKind::Publication,
            ));
            handles.dependencies.push(Arc::clone(&dependency));
            dependency
        });
    // Started before the stagger and the line, so that /health says Starting meanwhile; its
    // thread is never one of the pinned stages. Stopped when this returns.
    // The servers' counters reach `/metrics` as each server starts.
    let servers = Arc::new(ServerCounters::default());
    let _admin = match admin_listen {
        Some(listen) => {
            let admin = start_admin(listen, config, &health, &handles, &servers)?;
            notice(RunNotice::Admin {
                addr: admin.local_addr(),
                token: config.admin.token.is_some(),
            });
            Some(admin)
        }
        None => None,
    };
    // One hub for the browser view and the subscriber server: the line's publisher has one
    // fanout, and each server takes its own subscription from the hub.
    let (hub, fanout) = if web_listen.is_some() || serve_listen.is_some() || consumer.is_some() {
        let (hub, fanout) = SubscriberHub::new(view_hub_config());
        (Some(hub), Some(fanout))
    } else {
        (None, None)
    };
    // One audit trail for both servers (each record says which wrote it).
    let audit = open_audit(config)?;
    if let Some(audit) = &audit {
        let _ = servers.audit.set(Arc::clone(audit));
    }
    let _web = match (web_listen, &hub) {
        (Some(listen), Some(hub)) => {
            let web = start_web(listen, config, &health, hub.clone(), audit.clone())?;
            let _ = servers.web.set(web.counters());
            notice(RunNotice::Web {
                addr: web.local_addr(),
                tls: config.web.tls.is_some(),
                logins: config.serve.accounts.is_some(),
            });
            Some(web)
        }
        _ => None,
    };
    let engine = &config.engine;
    let delay = stagger_delay(
        engine.instance.index(),
        engine.stagger_step,
        engine.stagger_cap,
        process_seed(engine.instance.seed()),
    );
    if !delay.is_zero() {
        notice(RunNotice::Staggered {
            instance: &engine.instance,
            delay,
        });
    }
    stagger_start(Some(&health), delay, stop);
    let source = LineSource::open(&feed, &pipeline)?;
    if let (Some(consumer), Some(hub), Some(path)) =
        (consumer.as_deref_mut(), &hub, &config.snapshot.path)
    {
        consumer
            .start(
                config,
                hub.clone(),
                path,
                ConsumerHandles {
                    metrics: &servers.stage,
                    dependency: consumer_dependency.as_ref(),
                    health: &health,
                },
            )
            .map_err(|e| match e.kind() {
                io::ErrorKind::Unsupported => ConfiguredLineError::NotBuilt(e.to_string()),
                _ => ConfiguredLineError::Consumer(e),
            })?;
    }
    let server = match (serve_listen, hub) {
        (Some(listen), Some(hub)) => {
            let served = start_subscriber_server(listen, config, stop, hub, audit.clone())?;
            let _ = servers.serve.set(served.server.counters());
            notice(RunNotice::Serve(served.server.local_addr()));
            Some(served)
        }
        _ => None,
    };
    notice(RunNotice::Ready(&source));
    let run = run_served_line(
        source,
        pipeline,
        snapshot,
        OverloadConfig::default(),
        stop,
        &handles,
        Some(health),
        fanout,
    )?;
    if let Some(consumer) = consumer {
        consumer.line_ended();
    }
    let served = match server {
        Some(served) => Some((
            served
                .server
                .stop()
                .map_err(ConfiguredLineError::ServeStop)?,
            served.admission.load(),
        )),
        None => None,
    };
    Ok(ConfiguredLineRun {
        run,
        served,
        unrecoverable,
    })
}

/// A flag or key that reads the snapshot (`--web`, `--serve`) on a file without
/// `snapshot.path`: a usage error naming the file, as the file's own keys get.
pub fn without_snapshot(config: &RunConfig, conflict: Conflict) -> ConfigError {
    ConfigError::Conflict {
        place: Place {
            path: config.file().to_path_buf(),
            at: None,
        },
        conflict,
    }
}

/// The admin server on `listen`, serving the line's health, counters and dependencies.
fn start_admin(
    listen: SocketAddr,
    config: &RunConfig,
    health: &Arc<Health>,
    handles: &LineHandles,
    servers: &Arc<ServerCounters>,
) -> Result<AdminServer, ConfiguredLineError> {
    let state = Arc::new(AdminState {
        health: Arc::clone(health),
        feeds: vec![FeedHandles {
            name: handles.name.clone(),
            line: Arc::clone(&handles.counters),
            dependencies: handles.dependencies.clone(),
            // Overload control runs only when there is a snapshot to publish into.
            overload: config
                .snapshot
                .path
                .is_some()
                .then(|| Arc::clone(&handles.overload)),
            latency: Some(Arc::clone(&handles.latency)),
        }],
        token: config.admin.token.clone(),
        servers: Arc::clone(servers),
    });
    AdminServer::start(listen, state, ServerLimits::default()).map_err(|source| {
        ConfiguredLineError::Server {
            what: "admin server",
            keys: "admin.listen or --admin",
            source,
        }
    })
}

/// The browser view on `listen`, reading the snapshot the line writes and one subscription
/// on the hub whose fanout the line's publisher gets; HTTPS with `[web] tls_cert`, logins
/// with `[serve] accounts`.
fn start_web(
    listen: SocketAddr,
    config: &RunConfig,
    health: &Arc<Health>,
    hub: SubscriberHub,
    audit: Option<Arc<AuditLog>>,
) -> Result<WebServer, ConfiguredLineError> {
    let Some(path) = &config.snapshot.path else {
        return Err(without_snapshot(config, Conflict::WebWithoutSnapshot).into());
    };
    let snapshot = SnapshotReader::open(path).map_err(|source| ConfiguredLineError::Snapshot {
        what: "browser view: ",
        path: path.clone(),
        source,
    })?;
    let state = WebState {
        health: Arc::clone(health),
        snapshot,
        hub: Some(hub),
    };
    let security = WebSecurity {
        tls: config
            .web
            .tls
            .as_ref()
            .map(TlsFiles::load)
            .transpose()
            .map_err(|e| ConfiguredLineError::Tls {
                keys: "web.tls_cert / web.tls_key",
                error: Box::new(e),
            })?,
        accounts: config
            .serve
            .accounts
            .as_ref()
            .map(|path| accounts(path, &config.serve))
            .transpose()?,
        session_length: config.web.session_length,
        audit,
    };
    WebServer::start_secure(listen, state, WebLimits::default(), security).map_err(|source| {
        ConfiguredLineError::Server {
            what: "browser view",
            keys: "web.listen or --web",
            source,
        }
    })
}

/// The hub the browser view and the subscriber server share. The view drains its
/// subscription every 10 ms; this queue holds that long of an unpaced simulator's events, so
/// it is rarely cut loose (and refreshes when it is).
fn view_hub_config() -> SubscriberConfig {
    SubscriberConfig {
        queue_events: 32 * 1024,
        reserved_events: 4 * 1024,
        ..SubscriberConfig::default()
    }
}

/// The running subscriber server and its admission's counts.
struct Served {
    server: ServeHandle,
    admission: Arc<GuardCounters>,
}

/// The subscriber server on `listen` behind the reconnect-storm defences
/// ([`GuardedAdmission`] with the `[serve]` keys' settings; the server's login timeout is
/// theirs), with the file's heartbeat, idle timeout and write-queue marks, reading images
/// from the line's snapshot. It begins its graceful stop as soon as `stop` is set.
fn start_subscriber_server(
    listen: SocketAddr,
    config: &RunConfig,
    stop: &Arc<AtomicBool>,
    hub: SubscriberHub,
    audit: Option<Arc<AuditLog>>,
) -> Result<Served, ConfiguredLineError> {
    let Some(path) = config.snapshot.path.as_ref() else {
        return Err(without_snapshot(config, Conflict::ServeWithoutSnapshot).into());
    };
    let reader = SnapshotReader::open(path).map_err(|source| ConfiguredLineError::Snapshot {
        what: "",
        path: path.clone(),
        source,
    })?;
    let keys = &config.serve;
    // Per process, from the OS: servers restarted together must not hand their clients the
    // same retry-afters (a fleet's clients would come back in step), and the per-client
    // tables' slot hash must not be keyed by a constant anyone can read in the source.
    let seed = os_seed();
    let admission = GuardedAdmission::new(AdmissionConfig {
        seed: seed.rotate_left(32),
        ..keys.admission
    });
    let counters = admission.counters();
    let serve_config = ServeConfig {
        // Its drain fits inside the process's own bound, so a client that stops reading is
        // cut before the drain watchdog exits 4 over the (already closed) snapshot.
        drain_timeout: ServeConfig::new(listen)
            .drain_timeout
            .min(config.engine.shutdown_timeout / 2),
        login_timeout: Duration::from_millis(u64::from(admission.config().login_timeout_ms)),
        heartbeat_ms: keys.heartbeat_ms,
        idle_timeout: keys.idle_timeout,
        high_water: keys.high_water_bytes,
        low_water: keys.low_water_bytes,
        busy_retry_after_ms: (
            keys.admission.retry_after.min_ms,
            keys.admission.retry_after.max_ms,
        ),
        tls_handshake_timeout: keys.tls_handshake_timeout,
        seed,
        wait: config.engine.wait,
        ..ServeConfig::new(listen)
    };
    let security = ServeSecurity {
        tls: keys
            .tls
            .as_ref()
            .map(TlsFiles::load)
            .transpose()
            .map_err(|e| ConfiguredLineError::Tls {
                keys: "serve.tls_cert / serve.tls_key",
                error: Box::new(e),
            })?,
        accounts: keys
            .accounts
            .as_ref()
            .map(|path| accounts(path, keys))
            .transpose()?,
        audit,
    };
    let server = start_secure_server(
        serve_config,
        security,
        Some(hub),
        Box::new(SnapshotImages::new(reader)),
        Box::new(admission),
        Arc::clone(stop),
    )
    .map_err(|source| ConfiguredLineError::Server {
        what: "subscriber server",
        keys: "serve.listen or --serve",
        source,
    })?;
    Ok(Served {
        server,
        admission: counters,
    })
}

/// The audit trail `serve.audit_log` names, opened for appending.
fn open_audit(config: &RunConfig) -> Result<Option<Arc<AuditLog>>, ConfiguredLineError> {
    let Some(path) = &config.serve.audit_log else {
        return Ok(None);
    };
    AuditLog::open(path)
        .map(|log| Some(Arc::new(log)))
        .map_err(|source| ConfiguredLineError::Audit {
            path: path.clone(),
            source,
        })
}

/// The accounts `serve.accounts` names, reloaded on `SIGHUP` (from now on the signal
/// reloads them rather than end the process) and at `serve.accounts_reload_interval_ms`.
fn accounts(path: &Path, keys: &ServeSection) -> Result<AccountsConfig, ConfiguredLineError> {
    let table = AccountTable::load(path).map_err(|e| ConfiguredLineError::Accounts(Box::new(e)))?;
    let reload_requested = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGHUP, Arc::clone(&reload_requested))?;
    Ok(AccountsConfig {
        table: Arc::new(table),
        source: AccountsSource {
            path: path.to_owned(),
            reload_interval: keys.accounts_reload_interval,
            reload_requested,
        },
        failure_delay: keys.login_failure_delay,
    })
}

/// A seed this process draws from the OS (std's hasher keys are random per process).
fn os_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
}
