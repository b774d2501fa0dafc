//! `prfmon reg query | add | delete`: reg.exe's three everyday operations on the counter-name
//! registry, with reg.exe's output, prompts and exit codes (0 success, 1 failure). Changes go
//! through the registry's atomic, locked update.

use std::io::{BufRead, Write};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use prfdata::registry::{
    display_key, normalize_key, reg_cli, update, FileRegistry, Registry, RegistryError, Value,
    ValueType,
};

/// `prfmon reg ...`.
#[derive(Args, Debug)]
pub struct RegArgs {
    #[command(subcommand)]
    op: RegOp,
}

#[derive(Subcommand, Debug)]
enum RegOp {
    /// Print a key's values and subkeys: `reg query KEY [/v NAME | /ve]`.
    Query {
        /// The key, e.g. `HKLM\SOFTWARE\Microsoft\Windows NT\CurrentVersion\Perflib`.
        key: String,
        /// Print only this value (`/v NAME`).
        #[arg(long = "value", value_name = "NAME", conflicts_with = "empty_value")]
        value: Option<String>,
        /// Print only the default (unnamed) value (`/ve`).
        #[arg(long = "empty-value")]
        empty_value: bool,
    },
    /// Create a key or set a value: `reg add KEY [/v NAME | /ve] [/t TYPE] [/s SEP] [/d DATA] [/f]`.
    Add {
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
    },
    /// Delete a key (with its subkeys) or a value: `reg delete KEY [/v NAME | /ve | /va] [/f]`.
    Delete {
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
    },
}

/// Runs `prfmon reg ...`.
pub fn run(args: RegArgs) -> ExitCode {
    match execute(args.op) {
        Ok(code) => code,
        Err(e) => {
            match e {
                RegistryError::KeyNotFound(_) | RegistryError::ValueNotFound { .. } => {
                    eprintln!("{}", reg_cli::NOT_FOUND)
                }
                other => eprintln!("ERROR: {other}"),
            }
            ExitCode::FAILURE
        }
    }
}

/// Asks a Yes/No question on stdout and reads the answer from stdin, as reg.exe does.
fn confirm(question: &str) -> bool {
    print!("{question} (Yes/No)? ");
    let _ = std::io::stdout().flush();
    let mut answer = String::new();
    let _ = std::io::stdin().lock().read_line(&mut answer);
    matches!(answer.trim().chars().next(), Some('y' | 'Y'))
}

fn cancelled() -> Result<ExitCode, RegistryError> {
    println!("The operation was cancelled by the user.");
    Ok(ExitCode::FAILURE)
}

fn done() -> Result<ExitCode, RegistryError> {
    println!("{}", reg_cli::SUCCESS);
    Ok(ExitCode::SUCCESS)
}

fn value_name(value: Option<String>, empty_value: bool) -> Option<String> {
    if empty_value {
        Some(String::new())
    } else {
        value
    }
}

fn execute(op: RegOp) -> Result<ExitCode, RegistryError> {
    let registry = FileRegistry::open_default()?;
    match op {
        RegOp::Query {
            key,
            value,
            empty_value,
        } => {
            let hive = registry.snapshot()?;
            let name = value_name(value, empty_value);
            print!("{}", reg_cli::query(&hive, &key, name.as_deref())?);
            Ok(ExitCode::SUCCESS)
        }
        RegOp::Add {
            key,
            value,
            empty_value,
            ty,
            separator,
            data,
            force,
        } => {
            let key = normalize_key(&key)?;
            let Some(name) = value_name(value, empty_value) else {
                update(&registry, |hive| hive.create_key(&key))?;
                return done();
            };
            let ty: ValueType = match ty.parse() {
                Ok(t) => t,
                Err(e) => {
                    eprintln!("ERROR: {e}");
                    return Ok(ExitCode::FAILURE);
                }
            };
            let data = match Value::parse_reg_data(ty, data.as_deref().unwrap_or(""), &separator) {
                Ok(d) => d,
                Err(e) => {
                    eprintln!("ERROR: {e}");
                    return Ok(ExitCode::FAILURE);
                }
            };
            let exists = registry.snapshot()?.value(&key, &name)?.is_some();
            if exists && !force && !confirm(&format!("Value {name} exists, overwrite")) {
                return cancelled();
            }
            update(&registry, |hive| hive.set_value(&key, &name, data))?;
            done()
        }
        RegOp::Delete {
            key,
            value,
            empty_value,
            all_values,
            force,
        } => {
            let key = normalize_key(&key)?;
            let hive = registry.snapshot()?;
            if !hive.key_exists(&key) {
                return Err(RegistryError::KeyNotFound(key));
            }
            let shown = display_key(&hive.key_path(&key).unwrap_or_else(|| key.clone()));
            if all_values {
                if !force && !confirm(&format!("Delete all values under the registry key {shown}"))
                {
                    return cancelled();
                }
                update(&registry, |hive| {
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
            if let Some(name) = value_name(value, empty_value) {
                if hive.value(&key, &name)?.is_none() {
                    return Err(RegistryError::ValueNotFound { key, name });
                }
                if !force && !confirm(&format!("Delete the registry value {name}")) {
                    return cancelled();
                }
                update(&registry, |hive| {
                    if hive.delete_value(&key, &name)? {
                        Ok(())
                    } else {
                        Err(RegistryError::ValueNotFound {
                            key: key.clone(),
                            name: name.clone(),
                        })
                    }
                })?;
                return done();
            }
            if !force && !confirm(&format!("Permanently delete the registry key {shown}")) {
                return cancelled();
            }
            update(&registry, |hive| {
                if hive.delete_key(&key)? {
                    Ok(())
                } else {
                    Err(RegistryError::KeyNotFound(key.clone()))
                }
            })?;
            done()
        }
    }
}
