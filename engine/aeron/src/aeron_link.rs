//! Aeron itself: a client on a media driver, the publication the publisher offers its
//! records on, the subscription a subscriber polls them from.
//!
//! The media driver is either external (the C or Java driver, the one Aeron recommends in
//! production, at its `aeron.dir`) or embedded in this process (a driver thread of its own
//! with a fresh directory, removed when it stops; for tests and single-host use).

use std::ffi::CString;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rusteron_media_driver::testing::EmbeddedDriver;
use rusteron_media_driver::{
    Aeron, AeronContext, AeronImage, AeronOfferError, AeronPublication, AeronSubscription, Handler,
};

use crate::book_publisher::{Offer, Transport};
use crate::driver_counts::DriverCounts;

/// Which media driver a client uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DriverPlace {
    /// One started in this process, in a directory of its own.
    Embedded,
    /// A running driver whose directory (`aeron.dir`) this is.
    External(PathBuf),
}

/// The type of the driver's system counters (`AERON_SYSTEM_COUNTER_TYPE_ID`); each one's
/// key is its id.
const SYSTEM_COUNTER_TYPE_ID: i32 = 0;

/// How long adding a publication or subscription may take before it is an error.
const ADD_TIMEOUT: Duration = Duration::from_secs(10);

fn aeron_error(what: &str, e: impl std::fmt::Display) -> io::Error {
    io::Error::other(format!("aeron: {what}: {e}"))
}

fn c_text(what: &str, text: &str) -> io::Result<CString> {
    CString::new(text).map_err(|_| aeron_error(what, "contains a NUL byte"))
}

/// A client connected to a media driver; the driver too, when it is embedded. The client
/// closes before the driver stops.
pub struct AeronNode {
    aeron: Aeron,
    dir: String,
    /// Declared last: dropped after the client.
    driver: Option<EmbeddedDriver>,
}

impl std::fmt::Debug for AeronNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AeronNode")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl AeronNode {
    /// Connects to the driver at `place`, starting it first if it is embedded.
    ///
    /// # Errors
    ///
    /// If the driver cannot start, or no driver answers in its directory.
    pub fn connect(place: &DriverPlace) -> io::Result<Self> {
        let (driver, dir) = match place {
            DriverPlace::Embedded => {
                let driver = EmbeddedDriver::launch()
                    .map_err(|e| aeron_error("starting the embedded media driver", e))?;
                let dir = driver.dir().to_owned();
                (Some(driver), dir)
            }
            DriverPlace::External(dir) => (None, dir.display().to_string()),
        };
        let context = AeronContext::new().map_err(|e| aeron_error("context", e))?;
        context
            .set_dir(&c_text("dir", &dir)?)
            .map_err(|e| aeron_error("dir", e))?;
        let aeron =
            Aeron::new(&context).map_err(|e| aeron_error(&format!("client on {dir}"), e))?;
        aeron
            .start()
            .map_err(|e| aeron_error(&format!("no media driver answers in {dir}"), e))?;
        Ok(AeronNode { aeron, dir, driver })
    }

    /// The driver's directory.
    pub fn dir(&self) -> &str {
        &self.dir
    }

    /// The driver's loss and repair counters now, from its counters file.
    pub fn driver_counts(&self) -> DriverCounts {
        let mut counts = DriverCounts::default();
        self.aeron
            .counters_reader()
            .foreach_counter_fn(|value, _id, type_id, key, _label| {
                let Some(id) = key.get(..4).and_then(|k| k.try_into().ok()) else {
                    return;
                };
                let id = i32::from_le_bytes(id);
                if type_id != SYSTEM_COUNTER_TYPE_ID {
                    return;
                }
                if let Some((_, place)) = DriverCounts::SYSTEM_COUNTERS
                    .iter()
                    .find(|(wanted, _)| *wanted == id)
                {
                    *place(&mut counts) = u64::try_from(value).unwrap_or(0);
                }
            });
        counts
    }

    /// A publication on `channel` / `stream_id`, as a [`Transport`].
    ///
    /// # Errors
    ///
    /// If the channel is not a valid Aeron URI, or the driver does not add it in time.
    pub fn into_publication(self, channel: &str, stream_id: i32) -> io::Result<AeronTransport> {
        let uri = c_text("channel", channel)?;
        let publication = self
            .aeron
            .async_add_publication(&uri, stream_id)
            .and_then(|add| add.poll_blocking(ADD_TIMEOUT))
            .map_err(|e| aeron_error(&format!("publication {channel} stream {stream_id}"), e))?;
        Ok(AeronTransport {
            publication,
            node: self,
        })
    }

    /// A subscription on `channel` / `stream_id`; images coming and going are counted.
    ///
    /// # Errors
    ///
    /// As [`AeronNode::into_publication`].
    pub fn into_subscription(self, channel: &str, stream_id: i32) -> io::Result<AeronFeed> {
        let uri = c_text("channel", channel)?;
        let images = Arc::new(ImageCounts::default());
        let subscription = add_subscription(&self.aeron, &uri, stream_id, &images)?;
        Ok(AeronFeed {
            subscription: Some(subscription),
            uri,
            stream_id,
            images,
            rejoined: 0,
            node: self,
        })
    }
}

/// Adds a subscription whose images joining and leaving are counted in `images`.
fn add_subscription(
    aeron: &Aeron,
    uri: &CString,
    stream_id: i32,
    images: &Arc<ImageCounts>,
) -> io::Result<AeronSubscription> {
    let (up, down) = (Arc::clone(images), Arc::clone(images));
    let available = Handler::new(move |_: AeronSubscription, _: AeronImage| {
        up.joined.fetch_add(1, Ordering::Relaxed);
    });
    let unavailable = Handler::new(move |_: AeronSubscription, _: AeronImage| {
        down.lost.fetch_add(1, Ordering::Relaxed);
    });
    aeron
        .async_add_subscription(uri, stream_id, Some(&available), Some(&unavailable))
        .and_then(|add| add.poll_blocking(ADD_TIMEOUT))
        .map_err(|e| {
            aeron_error(
                &format!("subscription {} stream {stream_id}", uri.to_string_lossy()),
                e,
            )
        })
}

/// The publisher's side: offers each record as one Aeron message. Holds its client (and
/// embedded driver), which close after the publication.
pub struct AeronTransport {
    publication: AeronPublication,
    node: AeronNode,
}

impl std::fmt::Debug for AeronTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AeronTransport").finish_non_exhaustive()
    }
}

impl AeronTransport {
    /// Whether some subscriber is connected.
    pub fn is_connected(&self) -> bool {
        self.publication.is_connected()
    }
}

impl Transport for AeronTransport {
    fn linger(&mut self, wait: Duration) {
        // An embedded driver goes with this process: it stays up while subscribers may
        // still be reading the stream's end (an external one keeps the publication's data
        // for its own linger after the client closes).
        if self.node.driver.is_some() && self.publication.is_connected() {
            std::thread::sleep(wait);
        }
    }

    fn driver_counts(&self) -> Option<DriverCounts> {
        Some(self.node.driver_counts())
    }

    fn offer(&mut self, record: &[u8]) -> Offer {
        // An administrative action (a term rotating) clears at once: tried again here.
        for _ in 0..8 {
            match self.publication.offer(record) {
                Ok(_) => return Offer::Sent,
                Err(AeronOfferError::AdminAction) => continue,
                Err(AeronOfferError::BackPressured) => return Offer::BackPressured,
                Err(AeronOfferError::NotConnected) => return Offer::NotConnected,
                Err(_) => return Offer::Closed,
            }
        }
        Offer::BackPressured
    }
}

/// Images that joined and left a subscription (a publisher's stream reaching it, and
/// going: the publisher ended, or this subscriber fell so far behind that Aeron dropped it).
#[derive(Debug, Default)]
pub struct ImageCounts {
    /// Images that became available.
    pub joined: AtomicU64,
    /// Images that became unavailable.
    pub lost: AtomicU64,
}

/// The subscriber's side.
pub struct AeronFeed {
    /// `None` only between a rejoin's close and its new subscription.
    subscription: Option<AeronSubscription>,
    uri: CString,
    stream_id: i32,
    images: Arc<ImageCounts>,
    rejoined: u64,
    node: AeronNode,
}

impl std::fmt::Debug for AeronFeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AeronFeed").finish_non_exhaustive()
    }
}

impl AeronFeed {
    /// Hands each message waiting (at most `limit`) to `each`; returns how many came.
    ///
    /// # Errors
    ///
    /// If the subscription is closed.
    pub fn poll(&self, limit: usize, mut each: impl FnMut(&[u8])) -> io::Result<usize> {
        let Some(subscription) = &self.subscription else {
            return Err(aeron_error("poll", "the subscription is closed"));
        };
        subscription
            .poll_fn(|bytes, _| each(bytes), limit)
            .map(|n| usize::try_from(n).unwrap_or(0))
            .map_err(|e| aeron_error("poll", e))
    }

    /// Closes the subscription and adds it again, so that the stream comes from where the
    /// publisher is now.
    ///
    /// This is how a subscriber that fell behind comes back. Once a paused receiver is
    /// further behind the publisher than its receiver window, every packet that arrives is
    /// beyond the window and dropped, so no gap is ever seen and NAKed, and the image
    /// stays (it hears the publisher) without delivering anything: only a new image, which
    /// joins at the publisher's position, moves again. What it missed comes back through
    /// the publisher's refresh cycle.
    ///
    /// # Errors
    ///
    /// As [`AeronNode::into_subscription`].
    pub fn rejoin(&mut self) -> io::Result<()> {
        if let Some(old) = self.subscription.take() {
            old.close()
                .map_err(|e| aeron_error("closing the subscription", e))?;
        }
        self.subscription = Some(add_subscription(
            &self.node.aeron,
            &self.uri,
            self.stream_id,
            &self.images,
        )?);
        self.rejoined += 1;
        Ok(())
    }

    /// Images joined and lost so far.
    pub fn images(&self) -> (u64, u64) {
        (
            self.images.joined.load(Ordering::Relaxed),
            self.images.lost.load(Ordering::Relaxed),
        )
    }

    /// The driver's loss and repair counters now.
    pub fn driver_counts(&self) -> DriverCounts {
        self.node.driver_counts()
    }

    /// Rejoins so far.
    pub fn rejoined(&self) -> u64 {
        self.rejoined
    }

    /// Whether a publisher's stream is connected.
    pub fn is_connected(&self) -> bool {
        self.subscription
            .as_ref()
            .is_some_and(AeronSubscription::is_connected)
    }
}
