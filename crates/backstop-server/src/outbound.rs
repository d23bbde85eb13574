//! Where the service may send a request of its own (a `[[notify]]` target, a pack's
//! `status_url`): never to a link-local address (where clouds serve instance metadata and
//! credentials) or a known metadata host, never to an unspecified or broadcast address, and to
//! a loopback address only when `[outbound] allow_loopback = true` (local development). A URL
//! is checked as written when the config and packs are checked, and again at each send with
//! its host resolved, so a name that points somewhere forbidden is refused too. Redirects are
//! never followed.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, ToSocketAddrs};

/// The outbound policy: `[outbound]` in the config.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outbound {
    /// Whether loopback addresses (127.0.0.0/8, `::1`, `localhost`) may be contacted.
    pub allow_loopback: bool,
}

/// Hosts that serve cloud instance metadata by name.
const METADATA_HOSTS: [&str; 3] = ["metadata.google.internal", "metadata", "metadata.azure.com"];

impl Outbound {
    /// Whether `url`, as written, names a host the service may contact: `Err` says why not.
    /// A host given by name is checked again, resolved, at send ([`Outbound::check_resolved`]).
    ///
    /// # Errors
    /// The URL has no host, or names a forbidden one.
    pub fn check_url(self, url: &str) -> Result<(), String> {
        let host = host_of(url)?;
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = bare.parse::<IpAddr>() {
            return self.check_ip(ip);
        }
        let name = host.trim_end_matches('.').to_ascii_lowercase();
        if METADATA_HOSTS.contains(&name.as_str()) {
            return Err(format!(
                "`{host}` serves cloud instance metadata; it is never contacted"
            ));
        }
        if (name == "localhost" || name.ends_with(".localhost")) && !self.allow_loopback {
            return Err(format!(
                "`{host}` is this machine (loopback): set `[outbound] allow_loopback = true` \
                 to contact it (local development only)"
            ));
        }
        Ok(())
    }

    /// [`Outbound::check_url`], and every address the host resolves to. It resolves a name:
    /// call it off the async workers.
    ///
    /// # Errors
    /// The URL is refused as written, its host does not resolve, or an address it resolves to
    /// is forbidden.
    pub fn check_resolved(self, url: &str) -> Result<(), String> {
        self.check_url(url)?;
        let host = host_of(url)?;
        let port = url_port(url);
        let addresses = (host.trim_start_matches('[').trim_end_matches(']'), port)
            .to_socket_addrs()
            .map_err(|_| format!("`{host}` does not resolve"))?;
        for address in addresses {
            self.check_ip(address.ip())?;
        }
        Ok(())
    }

    fn check_ip(self, ip: IpAddr) -> Result<(), String> {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
            v4 @ IpAddr::V4(_) => v4,
        };
        let why = match ip {
            IpAddr::V4(v4) => forbidden_v4(v4, self.allow_loopback),
            IpAddr::V6(v6) => forbidden_v6(v6, self.allow_loopback),
        };
        why.map_or(Ok(()), |why| {
            Err(format!("{ip} is {why}; it is not contacted"))
        })
    }
}

fn forbidden_v4(ip: Ipv4Addr, allow_loopback: bool) -> Option<&'static str> {
    if ip.is_link_local() {
        Some("link-local (where clouds serve instance metadata)")
    } else if ip == Ipv4Addr::new(100, 100, 100, 200) {
        Some("a cloud metadata address")
    } else if ip.is_unspecified() || ip.is_broadcast() {
        Some("not a host")
    } else if ip.is_loopback() && !allow_loopback {
        Some("loopback (set `[outbound] allow_loopback = true` for local development)")
    } else {
        None
    }
}

fn forbidden_v6(ip: Ipv6Addr, allow_loopback: bool) -> Option<&'static str> {
    if ip.is_unicast_link_local() {
        Some("link-local")
    } else if ip == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) {
        Some("a cloud metadata address")
    } else if ip.is_unspecified() || ip.is_multicast() {
        Some("not a host")
    } else if ip.is_loopback() && !allow_loopback {
        Some("loopback (set `[outbound] allow_loopback = true` for local development)")
    } else {
        None
    }
}

/// The host of an absolute URL, as written (an IPv6 literal keeps its brackets).
fn host_of(url: &str) -> Result<String, String> {
    let uri: axum::http::Uri = url.parse().map_err(|_| format!("`{url}` is not a URL"))?;
    uri.host()
        .map(str::to_owned)
        .ok_or_else(|| format!("`{url}` names no host"))
}

/// The port of an absolute URL, or its scheme's.
fn url_port(url: &str) -> u16 {
    let uri: Option<axum::http::Uri> = url.parse().ok();
    uri.as_ref()
        .and_then(axum::http::Uri::port_u16)
        .unwrap_or_else(|| {
            if uri
                .and_then(|u| u.scheme_str().map(str::to_owned))
                .as_deref()
                == Some("http")
            {
                80
            } else {
                443
            }
        })
}

#[cfg(test)]
mod tests {
    use super::Outbound;

    #[test]
    fn metadata_link_local_and_unasked_loopback_are_refused() {
        let strict = Outbound::default();
        let local = Outbound {
            allow_loopback: true,
        };
        for url in [
            "http://169.254.169.254/latest/meta-data/",
            "http://[fe80::1]/x",
            "http://metadata.google.internal/computeMetadata/v1/",
            "http://100.100.100.200/",
            "http://[fd00:ec2::254]/",
            "http://0.0.0.0:9000/",
            "http://[::ffff:169.254.169.254]/",
        ] {
            assert!(strict.check_url(url).is_err(), "{url}");
            assert!(
                local.check_url(url).is_err(),
                "{url} even with loopback allowed"
            );
        }
        for url in [
            "http://127.0.0.1:9000/x",
            "http://localhost/x",
            "http://[::1]/x",
        ] {
            assert!(strict.check_url(url).is_err(), "{url}");
            assert_eq!(local.check_url(url), Ok(()), "{url}");
        }
        assert_eq!(
            strict.check_url("https://hooks.example.com/backstop"),
            Ok(())
        );
        assert_eq!(
            strict.check_url("https://10.0.0.5/x"),
            Ok(()),
            "a private network is a choice"
        );
        assert!(strict.check_resolved("http://localhost:9/x").is_err());
        assert!(local.check_resolved("http://127.0.0.1:9/x").is_ok());
    }
}
