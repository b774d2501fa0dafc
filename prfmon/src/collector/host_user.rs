//! The less privileged user provider hosts run as (`--host-user NAME`) when root collects.
//!
//! A provider library is code from the application's vendor; a root collector that loads it
//! runs it as root. With a [`HostUser`], each provider host process takes that user's
//! supplementary groups, group and user (`setgroups`, `setgid`, `setuid`, in that order,
//! between `fork` and `exec`, so before anything is loaded) and then loads its library
//! through the descriptor the collector checked and opened ([`crate::trust`]). The host can
//! read only what that user can: a library readable by root alone fails to load with an error
//! that says so, and a block must be readable by that user for its data to come through.
//!
//! Only root can give processes to another user, so [`HostUser::lookup`] refuses when the
//! calling process is not root.
//!
//! # Examples
//!
//! ```
//! use prfmon::collector::host_user::{HostUser, HostUserError};
//! match HostUser::lookup("nobody") {
//!     Ok(user) => assert_eq!(user.name(), "nobody"),
//!     Err(HostUserError::NotRoot { .. } | HostUserError::Unknown { .. }) => {}
//!     Err(e) => panic!("{e}"),
//! }
//! ```

/// A `--host-user` that cannot be used.
///
/// # Examples
///
/// ```
/// let e = prfmon::collector::host_user::HostUserError::Unknown { name: "nosuchuser".into() };
/// assert!(e.to_string().contains("nosuchuser"));
/// ```
#[derive(Debug, thiserror::Error)]
pub enum HostUserError {
    /// The collector is not root.
    #[error(
        "--host-user {name}: only a collector running as root can run provider hosts as another \
         user (this one runs as uid {euid}); run it as root, or without --host-user (the hosts \
         then run as uid {euid})"
    )]
    NotRoot {
        /// The user asked for.
        name: String,
        /// The collector's effective uid.
        euid: u32,
    },
    /// No such user.
    #[error("--host-user {name}: no such user (neither a name nor a uid in the user database)")]
    Unknown {
        /// The user asked for.
        name: String,
    },
    /// The user database could not be read.
    #[error("--host-user {name}: cannot look the user up: {source}")]
    Lookup {
        /// The user asked for.
        name: String,
        /// Why.
        source: nix::Error,
    },
}

/// A user provider hosts run as: its uid, primary group and supplementary groups, looked up
/// once.
///
/// # Examples
///
/// See the [module docs](self).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostUser {
    name: String,
    uid: u32,
    gid: u32,
    groups: Vec<u32>,
}

impl HostUser {
    /// Looks `name` (a user name, or a numeric uid) up in the user database, with its groups.
    ///
    /// # Errors
    ///
    /// [`HostUserError::NotRoot`] when this process is not root (checked first),
    /// [`HostUserError::Unknown`], [`HostUserError::Lookup`].
    ///
    /// # Examples
    ///
    /// See the [module docs](self).
    pub fn lookup(name: &str) -> Result<Self, HostUserError> {
        let euid = rustix::process::geteuid().as_raw();
        if euid != 0 {
            return Err(HostUserError::NotRoot {
                name: name.to_owned(),
                euid,
            });
        }
        let lookup = |source| HostUserError::Lookup {
            name: name.to_owned(),
            source,
        };
        let mut user = nix::unistd::User::from_name(name).map_err(lookup)?;
        if user.is_none() {
            if let Ok(uid) = name.parse::<u32>() {
                user =
                    nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)).map_err(lookup)?;
            }
        }
        let Some(user) = user else {
            return Err(HostUserError::Unknown {
                name: name.to_owned(),
            });
        };
        let Ok(c_name) = std::ffi::CString::new(user.name.as_bytes()) else {
            return Err(HostUserError::Unknown {
                name: name.to_owned(),
            });
        };
        let groups = nix::unistd::getgrouplist(&c_name, user.gid).map_err(lookup)?;
        Ok(Self {
            name: user.name,
            uid: user.uid.as_raw(),
            gid: user.gid.as_raw(),
            groups: groups.into_iter().map(|g| g.as_raw()).collect(),
        })
    }

    /// The user's name.
    ///
    /// # Examples
    ///
    /// See the [module docs](self).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its uid.
    ///
    /// # Examples
    ///
    /// ```
    /// if let Ok(u) = prfmon::collector::host_user::HostUser::lookup("nobody") {
    ///     assert_ne!(u.uid(), 0);
    /// }
    /// ```
    pub fn uid(&self) -> u32 {
        self.uid
    }

    /// Its primary group.
    ///
    /// # Examples
    ///
    /// ```
    /// if let Ok(u) = prfmon::collector::host_user::HostUser::lookup("nobody") {
    ///     assert!(u.groups().contains(&u.gid()));
    /// }
    /// ```
    pub fn gid(&self) -> u32 {
        self.gid
    }

    /// Its supplementary groups (the primary group among them, as `getgrouplist` gives).
    pub fn groups(&self) -> &[u32] {
        &self.groups
    }
}
