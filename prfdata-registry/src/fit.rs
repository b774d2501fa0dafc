//! Whether an installed app's names fit a map: the check behind prfdata's `activate` and the
//! provider's refusal to label counters with names that are not theirs.
//!
//! Names live at First Counter + symbolic offset (the lodctr design specification). An app rebuilt with a changed map
//! and not reinstalled would need names past its installed range (more objects or counters), or
//! would find other names at its offsets (offsets moved, texts changed): either way its counters
//! would be shown under another counter's, or another app's, name. Two checks catch it:
//!
//! - the range: First Counter + the map's highest offset must not pass the app's `Last Counter`
//!   (and First Help + it not its `Last Help`);
//! - the fingerprint: when install recorded one ([`MAP_FINGERPRINT`](crate::service::MAP_FINGERPRINT)),
//!   it must be the map's. A hand-run lodctr records none; then only the range is checked.

use crate::service::PerformanceService;

/// An installed app whose names do not fit the map (or block) at hand: what differs, and the fix.
///
/// # Examples
///
/// ```
/// use prfdata_registry::{check_names_fit, PerformanceService};
/// let installed = PerformanceService {
///     name: "App".into(),
///     first_counter: Some(1848), last_counter: Some(1852),
///     first_help: Some(1849), last_help: Some(1853),
///     ..Default::default()
/// };
/// let err = check_names_fit(&installed, 6, 0x1234).unwrap_err();
/// assert_eq!(err.needed_last_counter, 1854);
/// assert!(err.to_string().contains("reinstall"));
/// assert!(check_names_fit(&installed, 4, 0x1234).is_ok(), "no fingerprint recorded: range only");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "app {app} is installed with names {first_counter}..={last_counter} (help {first_help}..={last_help}, \
     map fingerprint {installed}) but its map needs names up to {needed_last_counter} (highest symbolic \
     offset {highest_offset}, map fingerprint {map_fingerprint:016x}): the map changed since it was \
     installed; reinstall it (PrfData::install with `replace`, or `prfmon lodctr --replace <app>.ini` \
     with the .INI of this build)",
    installed = self.installed_fingerprint.map_or_else(|| "none recorded".to_owned(), |f| format!("{f:016x}"))
)]
pub struct NamesMismatch {
    /// The app (driver) name.
    pub app: String,
    /// Its installed `First Counter`.
    pub first_counter: u32,
    /// Its installed `Last Counter`.
    pub last_counter: u32,
    /// Its installed `First Help`.
    pub first_help: u32,
    /// Its installed `Last Help`.
    pub last_help: u32,
    /// The highest symbolic offset the map names.
    pub highest_offset: u32,
    /// First Counter + that offset: the last name index the map needs (saturating).
    pub needed_last_counter: u32,
    /// The fingerprint install recorded, if any.
    pub installed_fingerprint: Option<u64>,
    /// The map's fingerprint.
    pub map_fingerprint: u64,
}

/// Checks that `installed` (an app's `Performance` values) holds names for a map whose highest
/// symbolic offset is `highest_offset` and whose fingerprint is `map_fingerprint` (see the
/// [module docs](self)). An app with no `First Counter` is not installed: nothing to check.
///
/// # Errors
///
/// [`NamesMismatch`] when the range is too small or the recorded fingerprint differs.
pub fn check_names_fit(
    installed: &PerformanceService,
    highest_offset: u32,
    map_fingerprint: u64,
) -> Result<(), NamesMismatch> {
    let Some(first_counter) = installed.first_counter else {
        return Ok(());
    };
    let last_counter = installed.last_counter.unwrap_or(first_counter);
    let first_help = installed
        .first_help
        .unwrap_or(first_counter.saturating_add(1));
    let last_help = installed.last_help.unwrap_or(first_help);
    let needed_last_counter = first_counter.saturating_add(highest_offset);
    let needed_last_help = first_help.saturating_add(highest_offset);
    let fits = needed_last_counter <= last_counter
        && needed_last_help <= last_help
        && installed
            .map_fingerprint
            .is_none_or(|f| f == map_fingerprint);
    if fits {
        return Ok(());
    }
    Err(NamesMismatch {
        app: installed.name.clone(),
        first_counter,
        last_counter,
        first_help,
        last_help,
        highest_offset,
        needed_last_counter,
        installed_fingerprint: installed.map_fingerprint,
        map_fingerprint,
    })
}
