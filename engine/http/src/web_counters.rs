//! The browser view's counters: live atomics the server adds to ([`WebCounters`], shared
//! with `/metrics`), and a copy at one moment ([`WebCounts`], for the run summary and
//! tests). Each counter is declared once, below, with what it counts.
#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicU64, Ordering};

macro_rules! web_counters {
    ($($(#[$doc:meta])* $name:ident,)*) => {
        /// Live counters of the browser view; each is one relaxed atomic.
        #[derive(Debug, Default)]
        pub struct WebCounters {
            $($name: AtomicU64,)*
        }

        /// A copy of [`WebCounters`] at one moment.
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct WebCounts {
            $($(#[$doc])* pub $name: u64,)*
        }

        impl WebCounters {
            /// The counts now.
            pub fn load(&self) -> WebCounts {
                WebCounts {
                    $($name: self.$name.load(Ordering::Relaxed),)*
                }
            }
        }

        /// One counter, named.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[allow(non_camel_case_types)]
        pub(crate) enum Counter {
            $($name,)*
        }

        impl WebCounters {
            fn cell(&self, counter: Counter) -> &AtomicU64 {
                match counter {
                    $(Counter::$name => &self.$name,)*
                }
            }
        }
    };
}

web_counters! {
    /// Pages served (the books' page, or the login page to a browser without a session).
    pages,
    /// WebSocket connections accepted.
    sockets,
    /// Connections refused with 503 (over `max_clients`).
    refused,
    /// Book messages sent.
    books_sent,
    /// TLS handshakes completed.
    tls_established,
    /// TLS handshakes that failed (a client that does not speak TLS, or refuses the
    /// certificate).
    tls_failed,
    /// TLS handshakes not completed within the request deadline.
    tls_timed_out,
    /// Logins accepted (a session opened).
    logins_accepted,
    /// Logins refused: unknown account or wrong password (one count, as for the
    /// subscriber server).
    logins_not_authorised,
    /// Logins refused: the account's concurrent sessions were all in use.
    logins_session_limit,
    /// Logins refused for now: the verifier's queue or the session table was full.
    logins_busy,
    /// Requests for the books' socket or the session's state with no session cookie.
    no_session,
    /// Requests whose session cookie names no live session (forged, expired or logged
    /// out).
    unknown_session,
    /// Socket requests from another site's page (an `Origin` that is not the view's).
    cross_origin,
    /// Symbols a browser asked for that its account may not see, or past its limit.
    entitlement_refused,
    /// Books a browser watched that a change of the accounts file took away.
    entitlement_withdrawn,
    /// Sessions ended by logging out.
    logouts,
    /// Sessions ended by reaching their length.
    sessions_expired,
    /// Sessions ended because their account left the accounts file.
    sessions_withdrawn,
    /// Sessions live now (a gauge).
    sessions,
}

impl WebCounters {
    /// Adds one to `counter`.
    pub(crate) fn bump(&self, counter: Counter) {
        self.cell(counter).fetch_add(1, Ordering::Relaxed);
    }

    /// Sets the gauge `counter` to `value`.
    pub(crate) fn set(&self, counter: Counter, value: usize) {
        self.cell(counter).store(value as u64, Ordering::Relaxed);
    }
}
