//! What only the `prfmon` command needs, on top of the library: argument parsing (clap), one
//! module per subcommand, the terminal chart of `watch` (ratatui), the HTTP server of `serve`
//! (hyper on tokio), standard output that ends quietly when its reader goes, and the logger that
//! writes the libraries' messages to stderr.
//!
//! | module | holds |
//! |---|---|
//! | [`cmd`] | one module per subcommand, and the options the collecting ones share |
//! | [`error`] | why a subcommand failed, said once by `main` |
//! | [`winargs`] | Windows-style switches (`/S:`, `-si`) mapped to clap's dashes |
//! | [`chart`] | the live chart of `prfmon watch`: its series, statistics and drawing |
//! | [`server`], [`token`] | `prfmon serve`'s HTTP server and its bearer token |
//! | [`stdout`] | `out!` / `outln!` / `errln!`: output with control characters escaped, quietly ended by a closed pipe |
//! | [`logger`] | `log` records to stderr as `prfmon: <message>` (`PRFMON_LOG`) |
//! | [`console`] | fd 2 taken over while `watch` draws, its lines held by the logger |
//!
//! Built with the `cli` feature (on by default); the library alone
//! (`default-features = false`) compiles none of this.

pub mod chart;
pub mod cmd;
pub mod console;
pub mod error;
pub mod logger;
pub mod server;
pub mod stdout;
pub mod token;
pub mod winargs;
