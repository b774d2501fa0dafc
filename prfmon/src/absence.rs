//! Why an installed object is not in a collection, said the same way by every command (`query`,
//! `list`, `typeperf`, `watch`): which service is installed, which app publishes nothing now,
//! and what to start.
//!
//! A prfdata app's service is named after the app, and its provider reads the app's block
//! (`<PRFDATA_SHM_DIR>/<app>.blk`): no block means no process of the app runs; a block whose
//! members are all dead means the app exited (killed) without removing it.

use std::fmt;
use std::path::PathBuf;

use prfdata::reader::BlockReader;
use prfdata_wire::snapshot::DataSnapshot;

use crate::collector::reenable_command;
use crate::session::Machine;

/// Why an object (or every object of a service) is missing from a collection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Absence {
    /// No installed service's name range holds the object (or the machine is remote, where the
    /// ranges are not known).
    NotInstalled {
        /// The services whose providers are disabled (one of them may be its provider).
        disabled: Vec<String>,
    },
    /// The service's provider is disabled.
    Disabled {
        /// The service.
        service: String,
    },
    /// The service is installed, and no block of its app is there.
    NotRunning {
        /// The service (and app).
        service: String,
        /// The block the app would publish.
        block: PathBuf,
    },
    /// The app's block is there, but every process that published it has exited.
    Exited {
        /// The service (and app).
        service: String,
        /// The block left behind.
        block: PathBuf,
    },
    /// The app's block has a live process, yet its provider returned nothing (its messages, on
    /// stderr before this one, say why).
    ProviderFailed {
        /// The service (and app).
        service: String,
    },
    /// Another machine (`--computer`), whose installed services are not known here, returned
    /// the object from none of its services.
    NotReturned {
        /// The machine, as the user named it.
        computer: String,
        /// The services that returned objects there (its `Prfmon-Services` header).
        answered: Vec<String>,
    },
}

impl fmt::Display for Absence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Absence::NotInstalled { disabled } if disabled.is_empty() => write!(
                f,
                "no installed service's name range holds it: is its app installed?"
            ),
            Absence::NotInstalled { disabled } => write!(
                f,
                "no installed service's name range holds it, and the providers of {} are \
                 disabled: re-enable its provider with: {}",
                disabled.join(", "),
                match disabled.as_slice() {
                    [one] => reenable_command(one),
                    _ => reenable_command("SERVICE"),
                }
            ),
            Absence::Disabled { service } => write!(
                f,
                "the provider of service {service} is disabled (Disable Performance Counters \
                 under {}) and is not collected; re-enable it with: {}",
                prfdata_registry::paths::performance(service),
                reenable_command(service)
            ),
            Absence::NotRunning { service, block } => write!(
                f,
                "service {service} is installed, but no process of app {service} publishes \
                 counters now (no block at {}): start the app",
                block.display()
            ),
            Absence::Exited { service, block } => write!(
                f,
                "service {service} is installed, but app {service} exited (its block at {} has \
                 no live process): start the app again",
                block.display()
            ),
            Absence::ProviderFailed { service } => write!(
                f,
                "service {service} is installed and app {service} runs, but its provider \
                 returned nothing (see the messages above)"
            ),
            Absence::NotReturned { computer, answered } => write!(
                f,
                "no service of {computer} returned it (the services that answered: {}): is its \
                 app installed and running there? prfmon list on that machine says why",
                if answered.is_empty() {
                    "none".to_owned()
                } else {
                    answered.join(", ")
                }
            ),
        }
    }
}

impl Absence {
    /// The absence in a few words, for a line that has little room (`watch`'s legend title):
    /// the app and what to do; none when no installed service holds the object.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::absence::Absence;
    /// let idle = Absence::NotRunning { service: "App".into(), block: "/dev/shm/App.blk".into() };
    /// assert_eq!(idle.brief().as_deref(), Some("app App is not running: start the app"));
    /// assert_eq!(Absence::NotInstalled { disabled: vec![] }.brief(), None);
    /// ```
    pub fn brief(&self) -> Option<String> {
        Some(match self {
            Absence::NotInstalled { .. } => return None,
            Absence::Disabled { service } => format!(
                "the provider of {service} is disabled: {}",
                reenable_command(service)
            ),
            Absence::NotRunning { service, .. } => {
                format!("app {service} is not running: start the app")
            }
            Absence::Exited { service, .. } => {
                format!("app {service} exited: start the app again")
            }
            Absence::ProviderFailed { service } => {
                format!("the provider of {service} returned nothing")
            }
            Absence::NotReturned { computer, .. } => {
                format!("no service of {computer} returned it")
            }
        })
    }
}

/// The brief reasons ([`Absence::brief`]) why the installed objects named `objects` that
/// `collected` lacks are missing from it (a collection of `machine`), each once.
pub fn briefs<'a>(
    machine: &Machine,
    collected: &DataSnapshot,
    objects: impl IntoIterator<Item = &'a str>,
) -> Vec<String> {
    let mut said: Vec<String> = Vec::new();
    for object in objects {
        let brief = machine
            .names
            .index_of(object)
            .filter(|i| !collected.objects.iter().any(|o| o.name_index == *i))
            .and_then(|i| explain(machine, i).brief());
        if let Some(brief) = brief.filter(|b| !said.contains(b)) {
            said.push(brief);
        }
    }
    said
}

/// Why the object or counter with name index `index` is missing from a collection of
/// `machine`.
///
/// # Examples
///
/// ```
/// use prfmon::absence::{explain, Absence};
/// let machine = prfmon::session::Machine::from_hive(&prfdata_registry::perflib::new_hive(), "009");
/// assert_eq!(explain(&machine, 1848), Absence::NotInstalled { disabled: vec![] });
/// ```
pub fn explain(machine: &Machine, index: u32) -> Absence {
    match machine.apps.locate(index) {
        Some((service, _)) => explain_service(machine, service),
        None => Absence::NotInstalled {
            disabled: machine.disabled.iter().map(|s| s.name.clone()).collect(),
        },
    }
}

/// Why an object is missing from a collection of another machine, `computer`, whose
/// collections came from the services `answered` (the `Prfmon-Services` header of
/// each, in any order, repeated): those services, each once.
///
/// # Examples
///
/// ```
/// use prfmon::absence::{not_returned, Absence};
/// let answered = ["A".to_owned(), "B".to_owned(), "A".to_owned()];
/// let absence = not_returned("db1", answered.iter());
/// assert_eq!(absence, Absence::NotReturned { computer: "db1".into(), answered: vec!["A".into(), "B".into()] });
/// ```
pub fn not_returned<'a>(computer: &str, answered: impl IntoIterator<Item = &'a String>) -> Absence {
    let mut services: Vec<String> = Vec::new();
    for service in answered {
        if !services.contains(service) {
            services.push(service.clone());
        }
    }
    Absence::NotReturned {
        computer: computer.to_owned(),
        answered: services,
    }
}

/// Why installed `service` published nothing in a collection of `machine`.
pub fn explain_service(machine: &Machine, service: &str) -> Absence {
    let service = service.to_owned();
    if machine.disabled.iter().any(|s| s.name == service) {
        return Absence::Disabled { service };
    }
    let Ok(block) = prfdata::block_path(&service) else {
        return Absence::ProviderFailed { service };
    };
    if !block.exists() {
        return Absence::NotRunning { service, block };
    }
    let members = BlockReader::open_path(&service, &block).and_then(|r| r.members());
    match members {
        Ok(members) if !members.iter().any(|m| m.is_alive()) => Absence::Exited { service, block },
        _ => Absence::ProviderFailed { service },
    }
}

/// The installed services (of `machine`'s name ranges) that have no object among
/// `collected` (name indexes), each with why.
pub fn silent_services(machine: &Machine, collected: &[u32]) -> Vec<Absence> {
    let apps = &machine.apps;
    apps.sets(&apps.all_titles())
        .keys()
        .filter(|service| {
            !collected
                .iter()
                .any(|i| apps.locate(*i).is_some_and(|(s, _)| s == service.as_str()))
        })
        .map(|service| explain_service(machine, service))
        .collect()
}

/// The hint for a counter path whose object `object` (a name) matched nothing and has no near
/// name: why, when the name is installed; else that no object of a similar name is available.
pub fn hint_for_object(machine: &Machine, object: &str) -> String {
    match machine.names.index_of(object).map(|i| explain(machine, i)) {
        Some(absence) if !matches!(absence, Absence::NotInstalled { .. }) => absence.to_string(),
        _ => "no object of a similar name is available".to_owned(),
    }
}
