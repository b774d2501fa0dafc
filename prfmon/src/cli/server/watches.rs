//! The watches remote peers start through `/reg` (`POST` of a `StartStat` value, the Windows 95
//! "HOWTO: access the performance registry" sequence), held by the server itself: one lease of
//! this process per `StartStat` in the app's watch table ([`prfdata::watch`]), so that they end
//! when the server does, and recorded with the peer's address, so that
//!
//! - a peer holds at most [`PER_PEER`] of them (across all apps); a peer is what
//!   [`peer_key`] makes of its address: an IPv4 address, or an IPv6 address's /64 prefix (one
//!   host's share of a network, RFC 4291), so that one host cannot take a fresh key per
//!   connection. Clients behind one address (a NAT, a proxy, every local user of a loopback
//!   server) are one peer: they share its leases and may `StopStat` each other's;
//! - peers together hold at most [`SHARE`] of one app's [`SLOTS`] slots: the rest stays for
//!   local consumers (`typeperf`, `watch`, another collector), whatever the peers do;
//! - a `StopStat` ends a watch the same peer started, and no other;
//! - a watch not read again (`StatData`) within [`PERFSTATS_TTL`] ends, as a local one does.

use std::net::IpAddr;
use std::time::Instant;

use prfdata::watch::{Lease, WatchError, WatchSet, WatchTable};
use prfmon::perfstats::PERFSTATS_TTL;

/// The slots of an app's watch table.
const SLOTS: usize = WatchTable::SLOTS;

/// The most watch leases one peer ([`peer_key`]) holds through serve.
pub const PER_PEER: usize = 4;

/// The most slots of one app's watch table that remote peers hold through serve: a quarter.
pub const SHARE: usize = SLOTS / 4;

/// Why a remote `StartStat` or `StopStat` is refused; the text names apps and stats, never a
/// local path (the full reason of a table error is logged here).
#[derive(Debug, thiserror::Error)]
pub enum PeerWatchError {
    /// The server has no token and no `--allow-remote-watch`.
    #[error(
        "this prfmon serve is read-only: StartStat and StopStat over HTTP need the server's \
         bearer token (--token-file) or --allow-remote-watch"
    )]
    ReadOnly,
    /// The peer holds [`PER_PEER`] leases already.
    #[error(
        "peer {peer} already holds {PER_PEER} watch leases, the most one peer may hold here; \
         StopStat one first"
    )]
    TooMany {
        /// The peer ([`peer_key`]: an IPv6 peer's /64 prefix).
        peer: IpAddr,
    },
    /// Peers hold [`SHARE`] of the app's slots already.
    #[error(
        "{app}: remote peers already hold {SHARE} of its {SLOTS} watch slots, serve's share; \
         the rest is kept for local consumers"
    )]
    ShareTaken {
        /// The app.
        app: String,
    },
    /// A `StopStat` of a stat this peer holds no watch on.
    #[error("StopStat ends only the watches this peer started; it holds none on {stat}")]
    NotYours {
        /// The stat.
        stat: String,
    },
    /// The app's watch table refused (not running, full, unusable).
    #[error("{app}: {}", table_reason(.source))]
    Table {
        /// The app.
        app: String,
        /// Why (logged, not sent).
        source: WatchError,
    },
}

/// What a table error means, without its path.
fn table_reason(e: &WatchError) -> &'static str {
    match e {
        WatchError::NotActive { .. } => "the app is not running (it has no watch table)",
        WatchError::Full { .. } => "its watch table is full",
        _ => "its watch table cannot be used now",
    }
}

impl PeerWatchError {
    /// The HTTP status of the refusal.
    pub fn status(&self) -> u16 {
        match self {
            Self::ReadOnly | Self::NotYours { .. } => 403,
            Self::TooMany { .. } => 429,
            Self::ShareTaken { .. } | Self::Table { .. } => 503,
        }
    }
}

/// The bits of an IPv6 address that name a peer: the /64 prefix, the subnet one host is given.
const IPV6_PEER_PREFIX: u32 = 64;

/// The peer that `ip` counts as: an IPv4 address (an IPv4-mapped IPv6 one taken as IPv4) as
/// it is, an IPv6 address with all but its first [`IPV6_PEER_PREFIX`] bits cleared.
pub fn peer_key(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => {
            let mask = u128::MAX << (128 - IPV6_PEER_PREFIX);
            IpAddr::V6(std::net::Ipv6Addr::from_bits(v6.to_bits() & mask))
        }
        v4 => v4,
    }
}

/// One lease held for a peer.
struct Held {
    peer: IpAddr,
    app: String,
    set: WatchSet,
    lease: Lease,
    renewed: Instant,
}

/// The leases held for remote peers (at most [`SHARE`] per app).
#[derive(Default)]
pub struct PeerWatches {
    held: Vec<Held>,
}

impl PeerWatches {
    /// Ends the leases not renewed within [`PERFSTATS_TTL`] and those of apps that exited.
    fn prune(&mut self) {
        self.held
            .retain(|h| h.renewed.elapsed() < PERFSTATS_TTL && h.lease.table().is_current());
    }

    /// `StartStat` for `peer`: a lease on `set` in `app`'s table.
    pub fn start(&mut self, peer: IpAddr, app: &str, set: WatchSet) -> Result<(), PeerWatchError> {
        self.prune();
        let peer = peer_key(peer);
        if self.held.iter().filter(|h| h.peer == peer).count() >= PER_PEER {
            return Err(PeerWatchError::TooMany { peer });
        }
        if self.held.iter().filter(|h| h.app == app).count() >= SHARE {
            return Err(PeerWatchError::ShareTaken { app: app.into() });
        }
        let table_error = |source: WatchError| {
            log::warn!("remote StartStat for {peer} on {app}: {source}");
            PeerWatchError::Table {
                app: app.into(),
                source,
            }
        };
        let lease = WatchTable::open(app)
            .and_then(|t| t.lease(&set, PERFSTATS_TTL))
            .map_err(table_error)?;
        self.held.push(Held {
            peer,
            app: app.into(),
            set,
            lease,
            renewed: Instant::now(),
        });
        Ok(())
    }

    /// `StopStat` for `peer`: ends one of its leases on exactly `set` in `app`.
    pub fn stop(
        &mut self,
        peer: IpAddr,
        app: &str,
        set: WatchSet,
        stat: &str,
    ) -> Result<(), PeerWatchError> {
        self.prune();
        let peer = peer_key(peer);
        let mine = self
            .held
            .iter()
            .position(|h| h.peer == peer && h.app == app && h.set == set);
        match mine {
            // Dropping the lease frees its slot, and the app is told.
            Some(i) => {
                self.held.swap_remove(i);
                Ok(())
            }
            None => Err(PeerWatchError::NotYours { stat: stat.into() }),
        }
    }

    /// `StatData` for `peer`: renews its leases on exactly `set` in `app`.
    pub fn renew(&mut self, peer: IpAddr, app: &str, set: WatchSet) {
        self.prune();
        let peer = peer_key(peer);
        for h in self
            .held
            .iter_mut()
            .filter(|h| h.peer == peer && h.app == app && h.set == set)
        {
            if h.lease.renew(&set, PERFSTATS_TTL).is_ok() {
                h.renewed = Instant::now();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ipv6_peer_is_its_64_prefix_and_an_ipv4_peer_its_address() {
        let key = |s: &str| peer_key(s.parse().unwrap()).to_string();
        assert_eq!(key("2001:db8:1:2:aaaa:bbbb:cccc:dddd"), "2001:db8:1:2::");
        assert_eq!(key("2001:db8:1:2::1"), key("2001:db8:1:2:ffff::9"));
        assert_ne!(key("2001:db8:1:2::1"), key("2001:db8:1:3::1"));
        assert_eq!(key("192.0.2.7"), "192.0.2.7");
        assert_ne!(key("192.0.2.7"), key("192.0.2.8"));
        assert_eq!(key("::ffff:192.0.2.7"), "192.0.2.7");
        assert_eq!(key("::1"), "::");
    }
}
