//! One module per subcommand, and what the collecting subcommands share.

pub mod decode;
pub mod list;
pub mod lodctr;
pub mod query;
pub mod reg;
pub mod serve;
pub mod typeperf;
pub mod watch;

use prfdata::registry::FileRegistry;
use prfmon::collector::{CollectorOptions, Isolation};
use prfmon::names::Names;

/// The collector options of the collecting subcommands: providers in host processes, or in
/// this process with `--in-process`.
pub fn collector_options(in_process: bool) -> CollectorOptions {
    let isolation = if in_process {
        Isolation::InProcess
    } else {
        Isolation::HostProcess
    };
    CollectorOptions {
        isolation,
        ..Default::default()
    }
}

/// The names of `lang` from `registry`; a language that cannot be read gives numbers only,
/// with a warning.
pub fn load_names(registry: &FileRegistry, lang: &str) -> Names {
    Names::load(registry, lang).unwrap_or_else(|e| {
        eprintln!("prfmon: no names for language {lang}: {e}");
        Names::default()
    })
}

/// Turns the words of a query into the value Collect gets: `Global` and `Costly` (any case)
/// as themselves, numbers as they are, object names looked up in `names`: the whole text as one
/// name first (`"PrfData Demo Worker"`), else word by word.
pub fn query_value(words: &[String], names: &Names) -> Result<String, String> {
    let joined = words.join(" ");
    let trimmed = joined.trim();
    if trimmed.is_empty() || trimmed.eq_ignore_ascii_case("global") {
        return Ok("Global".into());
    }
    if trimmed.eq_ignore_ascii_case("costly") {
        return Ok("Costly".into());
    }
    if trimmed.starts_with("Foreign") {
        return Ok(trimmed.to_owned());
    }
    if let Some(i) = names.index_of(trimmed) {
        return Ok(i.to_string());
    }
    let mut indexes = Vec::new();
    for word in trimmed.split_whitespace() {
        match names.index_of(word) {
            Some(i) => indexes.push(i.to_string()),
            None => return Err(format!("no object named `{word}`")),
        }
    }
    Ok(indexes.join(" "))
}
