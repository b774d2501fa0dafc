//! Why a subcommand failed ([`CliError`]): every subcommand returns it, and `main` says it
//! once, on stderr.

use prfdata_registry::{reg_cli, RegistryError};
use prfmon::session::SessionError;

use crate::cli::stdout::errln;

/// Why a subcommand failed: one sentence, said after the subcommand's name
/// (`prfmon query: MESSAGE`, `prfmon lodctr: MESSAGE`); `reg` says reg.exe's wording there
/// (`prfmon reg: ERROR: ...`).
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The sentence.
    #[error("{0}")]
    Failed(String),
}

impl CliError {
    /// reg.exe's `ERROR: <e>`.
    pub fn reg(e: impl std::fmt::Display) -> CliError {
        CliError::Failed(format!("ERROR: {e}"))
    }

    /// Writes the error on stderr, after `who` (`prfmon query`).
    pub fn print(&self, who: &str) {
        errln!("{who}: {self}");
    }
}

impl From<String> for CliError {
    fn from(message: String) -> Self {
        CliError::Failed(message)
    }
}

impl From<&str> for CliError {
    fn from(message: &str) -> Self {
        CliError::Failed(message.to_owned())
    }
}

impl From<SessionError> for CliError {
    fn from(e: SessionError) -> Self {
        CliError::Failed(e.to_string())
    }
}

/// A registry error as reg.exe says it: its not-found message for a key or value that is not
/// there, else `ERROR: ...`.
impl From<RegistryError> for CliError {
    fn from(e: RegistryError) -> Self {
        match e {
            RegistryError::KeyNotFound(_) | RegistryError::ValueNotFound { .. } => {
                CliError::Failed(reg_cli::NOT_FOUND.to_owned())
            }
            other => CliError::reg(other),
        }
    }
}
