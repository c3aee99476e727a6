//! The broker's address and credentials, parsed once, shown without the secret.

use std::fmt;
use std::str::FromStr;

/// How the client authenticates to the broker (NATS user and password, or token).
#[derive(Clone, PartialEq, Eq)]
enum Credentials {
    UserPassword { user: String, password: String },
    Token(String),
}

/// A NATS broker address: `nats://host:port`, `nats://user:password@host:port` or
/// `nats://token@host:port`. Displayed (logs, errors, JSON output) with the password or token
/// replaced by `***`.
#[derive(Clone, PartialEq, Eq)]
pub struct QueueUrl {
    /// `scheme://host:port`, without credentials.
    server: String,
    credentials: Option<Credentials>,
}

/// Why an address was refused.
#[derive(Debug, thiserror::Error)]
#[error("bad job queue address: {0} (expected nats://[user:password@ or token@]host:port)")]
pub struct BadQueueUrl(String);

impl FromStr for QueueUrl {
    type Err = BadQueueUrl;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (scheme, rest) = s.split_once("://").ok_or_else(|| BadQueueUrl("no scheme".into()))?;
        if !matches!(scheme, "nats" | "tls") {
            return Err(BadQueueUrl(format!("scheme {scheme:?}")));
        }
        // The last '@' ends the credentials: a password may contain '@', a host cannot.
        let (userinfo, host) = match rest.rsplit_once('@') {
            Some((userinfo, host)) => (Some(userinfo), host),
            None => (None, rest),
        };
        if host.is_empty() || host.contains('/') {
            return Err(BadQueueUrl("no host, or a path after it".into()));
        }
        let credentials = match userinfo {
            None => None,
            Some("") => return Err(BadQueueUrl("empty credentials before '@'".into())),
            Some(info) => Some(match info.split_once(':') {
                Some((user, password)) if !user.is_empty() => {
                    Credentials::UserPassword { user: user.into(), password: password.into() }
                }
                Some(_) => return Err(BadQueueUrl("a password without a user".into())),
                None => Credentials::Token(info.into()),
            }),
        };
        Ok(Self { server: format!("{scheme}://{host}"), credentials })
    }
}

impl fmt::Display for QueueUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (scheme, host) = self.server.split_once("://").unwrap_or(("nats", &self.server));
        match &self.credentials {
            None => write!(f, "{}", self.server),
            Some(Credentials::UserPassword { user, .. }) => write!(f, "{scheme}://{user}:***@{host}"),
            Some(Credentials::Token(_)) => write!(f, "{scheme}://***@{host}"),
        }
    }
}

impl fmt::Debug for QueueUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "QueueUrl({self})")
    }
}

impl QueueUrl {
    /// The address with its credentials, as given (to hand to a process the caller starts).
    pub fn with_secret(&self) -> String {
        let (scheme, host) = self.server.split_once("://").unwrap_or(("nats", &self.server));
        match &self.credentials {
            None => self.server.clone(),
            Some(Credentials::UserPassword { user, password }) => format!("{scheme}://{user}:{password}@{host}"),
            Some(Credentials::Token(token)) => format!("{scheme}://{token}@{host}"),
        }
    }

    /// Connection options carrying the credentials, and the server to connect to.
    pub(super) fn connect_options(&self) -> (async_nats::ConnectOptions, &str) {
        let options = match &self.credentials {
            None => async_nats::ConnectOptions::new(),
            Some(Credentials::UserPassword { user, password }) => {
                async_nats::ConnectOptions::with_user_and_password(user.clone(), password.clone())
            }
            Some(Credentials::Token(token)) => async_nats::ConnectOptions::with_token(token.clone()),
        };
        (options, &self.server)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_parsed_and_never_shown() {
        let plain: QueueUrl = "nats://127.0.0.1:4222".parse().unwrap();
        assert_eq!(plain.to_string(), "nats://127.0.0.1:4222");
        assert_eq!(plain.with_secret(), "nats://127.0.0.1:4222");

        let user: QueueUrl = "nats://seq:p@ss:w0rd@broker:4222".parse().unwrap();
        assert_eq!(user.to_string(), "nats://seq:***@broker:4222");
        assert_eq!(format!("{user:?}"), "QueueUrl(nats://seq:***@broker:4222)");
        assert_eq!(user.with_secret(), "nats://seq:p@ss:w0rd@broker:4222");
        assert_eq!(user.connect_options().1, "nats://broker:4222");

        let token: QueueUrl = "tls://s3cr3t@broker:4222".parse().unwrap();
        assert_eq!(token.to_string(), "tls://***@broker:4222");
        assert!(!format!("{token:?}").contains("s3cr3t"));
        assert_eq!(token.with_secret(), "tls://s3cr3t@broker:4222");
    }

    #[test]
    fn malformed_addresses_are_refused() {
        for bad in
            ["127.0.0.1:4222", "http://broker:4222", "nats://", "nats://@broker", "nats://:pw@broker", "nats://b/x"]
        {
            assert!(bad.parse::<QueueUrl>().is_err(), "{bad} was accepted");
        }
    }
}
