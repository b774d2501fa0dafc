//! `prfmon reg query | add | delete`: reg.exe's three everyday operations on the counter-name
//! registry, with reg.exe's switches, output, prompts and exit codes (0 success, 1 failure).
//! Changes go through the registry's atomic, locked update.
//!
//! Every reg.exe switch of the three operations is accepted with reg.exe's meaning (see
//! [`crate::cli::winargs`] for the list), except `reg query`'s search (`/f` with `/k`, `/d`, `/c`,
//! `/e`, and `/t`), which is refused with a message naming the switch. `/reg:32` and `/reg:64`
//! are accepted and change nothing: this registry has one view.

use std::io::BufRead;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use prfdata_registry::reg_cli::QueryOptions;
use prfdata_registry::{
    display_key, normalize_key, reg_cli, update, FileRegistry, Registry, RegistryError, Value,
    ValueType,
};

use crate::cli::error::CliError;
use crate::cli::stdout::{out, outln};
use prfmon::perfstats::keys::{self, query_text, QueryError};
use prfmon::remote::{RegQuery, RemoteError};

/// `prfmon reg ...`.
#[derive(Args, Debug)]
pub struct RegArgs {
    #[command(subcommand)]
    op: RegOp,
}

/// `/reg:32` or `/reg:64`: accepted, one view.
#[derive(Args, Debug)]
struct View {
    /// The registry view (`/reg:32`, `/reg:64`); this registry has one view, so both name it.
    #[arg(long = "reg-view", value_name = "32|64", value_parser = ["32", "64"], action = clap::ArgAction::Append)]
    reg_view: Vec<String>,
}

/// `reg query`'s search switches, which prfmon refuses.
#[derive(Args, Debug)]
struct Search {
    /// `/f DATA`: search (refused).
    #[arg(long = "search", value_name = "DATA", hide = true)]
    search: Option<String>,
    /// `/k`: search key names only (refused).
    #[arg(long = "keys-only", hide = true)]
    keys_only: bool,
    /// `/d`: search data only (refused).
    #[arg(long = "data-only", hide = true)]
    data_only: bool,
    /// `/c`: case-sensitive search (refused).
    #[arg(long = "case-sensitive", hide = true)]
    case_sensitive: bool,
    /// `/e`: exact matches only (refused).
    #[arg(long = "exact", hide = true)]
    exact: bool,
    /// `/t TYPE`: search values of one type (refused).
    #[arg(long = "type", value_name = "TYPE", hide = true)]
    ty: Option<String>,
}

impl Search {
    /// The first search switch given, as reg.exe spells it.
    fn first(&self) -> Option<&'static str> {
        [
            (self.search.is_some(), "/f"),
            (self.keys_only, "/k"),
            (self.data_only, "/d"),
            (self.case_sensitive, "/c"),
            (self.exact, "/e"),
            (self.ty.is_some(), "/t"),
        ]
        .into_iter()
        .find(|(given, _)| *given)
        .map(|(_, switch)| switch)
    }
}

#[derive(Subcommand, Debug)]
enum RegOp {
    /// Print a key's values and subkeys:
    /// `reg query KEY [/v NAME | /ve] [/s] [/se SEP] [/z] [/reg:32 | /reg:64]`.
    Query(QueryOp),
    /// Create a key or set a value:
    /// `reg add KEY [/v NAME | /ve] [/t TYPE] [/s SEP] [/d DATA] [/f] [/reg:32 | /reg:64]`.
    Add(AddOp),
    /// Delete a key (with its subkeys) or a value:
    /// `reg delete KEY [/v NAME | /ve | /va] [/f] [/reg:32 | /reg:64]`.
    Delete(DeleteOp),
}

/// `reg query`'s arguments.
#[derive(Args, Debug)]
struct QueryOp {
    /// The key, e.g. `HKLM\SOFTWARE\Microsoft\Windows NT\CurrentVersion\Perflib`.
    key: String,
    /// Print only this value (`/v NAME`).
    #[arg(long = "value", value_name = "NAME", conflicts_with = "empty_value")]
    value: Option<String>,
    /// Print only the default (unnamed) value (`/ve`).
    #[arg(long = "empty-value")]
    empty_value: bool,
    /// Every key below too, depth first (`/s`).
    #[arg(long = "recursive")]
    recursive: bool,
    /// The character shown between REG_MULTI_SZ entries (`/se SEP`, default `\0`).
    #[arg(long = "separator", value_name = "SEP")]
    separator: Option<String>,
    /// Show each type's number after its name (`/z`).
    #[arg(long = "type-numbers")]
    type_numbers: bool,
    #[command(flatten)]
    search: Search,
    #[command(flatten)]
    view: View,
    /// `\\HOST\KEY` (or `--computer HOST:PORT`) reads the key on HOST's `prfmon serve`.
    #[command(flatten)]
    remote: super::RemoteArgs,
}

/// `reg add`'s arguments.
#[derive(Args, Debug)]
struct AddOp {
    /// The key.
    key: String,
    /// The value's name (`/v NAME`); without it only the key is created.
    #[arg(long = "value", value_name = "NAME", conflicts_with = "empty_value")]
    value: Option<String>,
    /// Set the default (unnamed) value (`/ve`).
    #[arg(long = "empty-value")]
    empty_value: bool,
    /// REG_SZ, REG_EXPAND_SZ, REG_DWORD or REG_MULTI_SZ (`/t TYPE`).
    #[arg(long = "type", value_name = "TYPE", default_value = "REG_SZ")]
    ty: String,
    /// The separator between REG_MULTI_SZ entries (`/s SEP`, default the two characters \0).
    #[arg(long = "separator", value_name = "SEP", default_value = "\\0")]
    separator: String,
    /// The data (`/d DATA`); REG_DWORD in decimal or 0x hex.
    #[arg(long = "data", value_name = "DATA", allow_hyphen_values = true)]
    data: Option<String>,
    /// Overwrite an existing value without asking (`/f`).
    #[arg(long = "force")]
    force: bool,
    #[command(flatten)]
    view: View,
}

/// `reg delete`'s arguments.
#[derive(Args, Debug)]
struct DeleteOp {
    /// The key.
    key: String,
    /// Delete only this value (`/v NAME`).
    #[arg(long = "value", value_name = "NAME", conflicts_with_all = ["empty_value", "all_values"])]
    value: Option<String>,
    /// Delete only the default (unnamed) value (`/ve`).
    #[arg(long = "empty-value", conflicts_with = "all_values")]
    empty_value: bool,
    /// Delete every value of the key, keeping the key and its subkeys (`/va`).
    #[arg(long = "all-values")]
    all_values: bool,
    /// Delete without asking (`/f`).
    #[arg(long = "force")]
    force: bool,
    #[command(flatten)]
    view: View,
}

/// Runs `prfmon reg ...`.
pub fn run(args: RegArgs) -> Result<ExitCode, CliError> {
    check_switches(&args.op).map_err(CliError::Failed)?;
    match args.op {
        RegOp::Query(q) => query_on(q),
        RegOp::Add(a) => add(&FileRegistry::open_default()?, a),
        RegOp::Delete(d) => delete(&FileRegistry::open_default()?, d),
    }
}

/// Refuses what this reg does not do, naming the switch; checks the switches reg.exe checks.
fn check_switches(op: &RegOp) -> Result<(), String> {
    let view = match op {
        RegOp::Query(q) => {
            if let Some(switch) = q.search.first() {
                return Err(format!(
                    "ERROR: {switch} (search) is not supported by prfmon reg query: list the \
                     keys with /s and filter the output (e.g. with grep)."
                ));
            }
            if q.separator.as_ref().is_some_and(|s| s.chars().count() != 1) {
                return Err("ERROR: Invalid syntax. /se takes one character.".into());
            }
            &q.view
        }
        RegOp::Add(AddOp { view, .. }) | RegOp::Delete(DeleteOp { view, .. }) => view,
    };
    if view.reg_view.len() > 1 {
        return Err(
            "ERROR: Invalid syntax. /reg:32 and /reg:64 may be given once, and not both.".into(),
        );
    }
    Ok(())
}

/// Asks a Yes/No question on stdout and reads the answer from stdin, as reg.exe does.
fn confirm(question: &str) -> bool {
    out!("{question} (Yes/No)? ");
    let mut answer = String::new();
    let _ = std::io::stdin().lock().read_line(&mut answer);
    matches!(answer.trim().chars().next(), Some('y' | 'Y'))
}

fn cancelled() -> Result<ExitCode, CliError> {
    outln!("The operation was cancelled by the user.");
    Ok(ExitCode::FAILURE)
}

fn done() -> Result<ExitCode, CliError> {
    outln!("{}", reg_cli::SUCCESS);
    Ok(ExitCode::SUCCESS)
}

fn value_name(value: Option<String>, empty_value: bool) -> Option<String> {
    empty_value.then(String::new).or(value)
}

/// `reg query \\HOST\KEY`: the machine (`HOST` or `HOST:PORT`) and the key; `None` for a
/// key of this machine.
fn remote_key(key: &str) -> Option<(&str, &str)> {
    let rest = key.strip_prefix("\\\\")?;
    let (host, key) = rest.split_once('\\').unwrap_or((rest, ""));
    Some((host, key))
}

/// `reg query` on another machine; reg.exe's messages and exit codes.
fn query_remote(
    remote: &super::RemoteArgs,
    machine: &super::RemoteMachine,
    query: &RegQuery,
) -> Result<ExitCode, CliError> {
    let client = remote.connect(&machine.address).map_err(CliError::reg)?;
    match client.reg_query(query) {
        Ok(text) => {
            out!("{}", with_machine(&text, &machine.label));
            Ok(ExitCode::SUCCESS)
        }
        Err(RemoteError::NotFound { .. }) => Err(CliError::Failed(reg_cli::NOT_FOUND.into())),
        Err(e) => Err(CliError::reg(e)),
    }
}

/// reg.exe prints a remote key with its machine: `\\HOST\HKEY_LOCAL_MACHINE\...`.
fn with_machine(text: &str, machine: &str) -> String {
    text.split_inclusive('\n')
        .map(|line| {
            if line.starts_with("HKEY_") {
                format!("\\\\{machine}\\{line}")
            } else {
                line.to_owned()
            }
        })
        .collect()
}

/// `reg query`: on the machine `\\HOST\KEY` or `--computer` names (`\\THIS-MACHINE\KEY` is
/// `KEY` here), else here.
fn query_on(q: QueryOp) -> Result<ExitCode, CliError> {
    let (host, key) = match remote_key(&q.key) {
        Some((host, k)) => (Some(host), k),
        None => (None, q.key.as_str()),
    };
    let machines: Vec<&str> = host.into_iter().collect();
    let machine = q.remote.machine(&machines).map_err(CliError::reg)?;
    let query = RegQuery {
        key: key.to_owned(),
        value: value_name(q.value, q.empty_value),
        recurse: q.recursive,
        separator: q.separator,
        type_numbers: q.type_numbers,
    };
    if let Some(machine) = machine {
        return query_remote(&q.remote, &machine, &query);
    }
    let registry = FileRegistry::open_default()?;
    let options = QueryOptions {
        value: query.value.as_deref(),
        recurse: query.recurse,
        separator: query.separator.as_deref().unwrap_or("\\0"),
        type_numbers: query.type_numbers,
    };
    self::query(&registry, &query.key, &options)
}

/// `reg query KEY` here (the PerfStats keys from a collection made for it).
fn query(
    registry: &FileRegistry,
    key: &str,
    options: &QueryOptions<'_>,
) -> Result<ExitCode, CliError> {
    let view = if keys::needs_view(key) {
        Some(keys::view(registry).map_err(CliError::reg)?)
    } else {
        None
    };
    match query_text(registry, key, options, view.as_ref()) {
        Ok(text) => out!("{text}"),
        Err(QueryError::Registry(e)) => return Err(e.into()),
        Err(e) => return Err(CliError::reg(e)),
    }
    Ok(ExitCode::SUCCESS)
}

/// `reg add KEY [/v NAME /t TYPE /s SEP /d DATA] [/f]`; `data` is the data and its
/// separator.
fn add(registry: &FileRegistry, a: AddOp) -> Result<ExitCode, CliError> {
    let key = normalize_key(&a.key)?;
    let Some(name) = value_name(a.value, a.empty_value) else {
        update(registry, |hive| hive.create_key(&key))?;
        return done();
    };
    let ty: ValueType = a.ty.parse().map_err(CliError::reg)?;
    let data = a.data.as_deref().unwrap_or("");
    let data = Value::parse_reg_data(ty, data, &a.separator).map_err(CliError::reg)?;
    let exists = registry.snapshot()?.value(&key, &name)?.is_some();
    if exists && !a.force && !confirm(&format!("Value {name} exists, overwrite")) {
        return cancelled();
    }
    update(registry, |hive| hive.set_value(&key, &name, data))?;
    done()
}

/// `reg delete KEY [/v NAME | /ve | /va] [/f]`.
fn delete(registry: &FileRegistry, d: DeleteOp) -> Result<ExitCode, CliError> {
    let force = d.force;
    let key = normalize_key(&d.key)?;
    let hive = registry.snapshot()?;
    if !hive.key_exists(&key) {
        return Err(RegistryError::KeyNotFound(key).into());
    }
    let shown = display_key(&hive.key_path(&key).unwrap_or_else(|| key.clone()));
    if d.all_values {
        if !force && !confirm(&format!("Delete all values under the registry key {shown}")) {
            return cancelled();
        }
        update(registry, |hive| {
            let names: Vec<String> = hive
                .values(&key)?
                .unwrap_or_default()
                .iter()
                .map(|(n, _)| n.clone())
                .collect();
            for n in names {
                hive.delete_value(&key, &n)?;
            }
            Ok::<_, RegistryError>(())
        })?;
        return done();
    }
    if let Some(name) = value_name(d.value, d.empty_value) {
        if hive.value(&key, &name)?.is_none() {
            return Err(RegistryError::ValueNotFound { key, name }.into());
        }
        if !force && !confirm(&format!("Delete the registry value {name}")) {
            return cancelled();
        }
        update(registry, |hive| {
            let not_found = || RegistryError::ValueNotFound {
                key: key.clone(),
                name: name.clone(),
            };
            hive.delete_value(&key, &name)?
                .then_some(())
                .ok_or_else(not_found)
        })?;
        return done();
    }
    if !force && !confirm(&format!("Permanently delete the registry key {shown}")) {
        return cancelled();
    }
    update(registry, |hive| {
        let not_found = || RegistryError::KeyNotFound(key.clone());
        hive.delete_key(&key)?.then_some(()).ok_or_else(not_found)
    })?;
    done()
}
