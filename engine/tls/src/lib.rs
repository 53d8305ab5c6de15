//! TLS for the engine's servers and their clients, with rustls (no OpenSSL).
//!
//! - [`server_config`] reads a certificate chain and its key from PEM files and checks them
//!   at start: a file that cannot be read, holds no certificate or key, a key that does not
//!   match the certificate, or a certificate outside its validity dates is a
//!   [`TlsConfigError`] naming the file, which the applications turn into a configuration
//!   error (exit 2) rather than a server that fails every handshake later. Only TLS 1.2 and
//!   1.3 are offered.
//! - [`client_config`] trusts a given CA file, or the host's trust store.
//! - [`random_bytes`] draws from the same secure source TLS uses, for tokens a server hands
//!   out.
//! - [`ServerSession`] drives one server-side connection from a non-blocking socket: rustls
//!   is a state machine fed with bytes, so the servers' own mio loops run the handshake and
//!   the records, as they run every other protocol machine. It never blocks and never
//!   buffers more than a bound of its own.
//!
//! What this crate must never depend on: anything of the engine's. It sits under the
//! servers (`ticklane-serve`, `ticklane-http`) and their clients.
//!
//! # Examples
//!
//! ```no_run
//! use std::path::Path;
//!
//! let config = ticklane_tls::server_config(Path::new("cert.pem"), Path::new("key.pem"))?;
//! let session = ticklane_tls::ServerSession::new(&config)?;
//! assert!(session.is_handshaking());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]

mod certificates;
mod server_session;

pub use certificates::{client_config, random_bytes, server_config, server_name, TlsConfigError};
pub use server_session::{PlainRead, ServerSession, SessionWriter};

/// rustls itself, for the types the servers and clients hold (`ServerConfig`,
/// `ClientConfig`, `StreamOwned`, `ServerName`).
pub use rustls;
