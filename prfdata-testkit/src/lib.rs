//! Test helpers shared by the workspace's crates (dev-only, never published): what more than
//! one crate's tests need to run the real thing, with every wait bounded.
//!
//! | module | for |
//! |---|---|
//! | [`artifacts`] | the files cargo built with the tests: the provider library ([`provider_library`]), any test cdylib ([`cdylib`]), a workspace binary ([`target_binary`]) |
//! | [`wait`] | [`bounded`] work on another thread, [`wait_until`] a condition holds, [`WAIT`] |
//! | [`process`] | real child processes: [`finish`] one (bounded) into a [`Run`], stop one when dropped ([`ChildGuard`]), re-execute this test binary as an app ([`self_command`], [`test_path!`]) that says it is ready through a file ([`ready`]), run one in a pid namespace of its own ([`in_new_pid_namespace`]) |
//! | [`at_exit`] | folders a `static` holds, removed when the test process exits ([`remove_at_exit`]) |
//! | [`sandbox`] | a temp registry and block folder ([`Sandbox`]) with maps installed against the real provider, the environment for a child, names for the counter-name registry |
//! | [`process_env`] | `PRFDATA_REGISTRY` / `PRFDATA_SHM_DIR` of this process, for an in-process provider, held by one test at a time ([`ProcessEnv`]) |
//! | [`layers`] | a crate's imports against the layer order ARCHITECTURE.md draws ([`layers::check`]) |
//! | [`histogram_app`] | an app with two histograms (one sharded) |
//! | [`sample`] | a small valid PERF_OBJECT_TYPE, for consumer-side examples and tests |
//! | [`values`] | reproducible values of the histogram tests' distributions ([`values::Mix`], [`values::values`]) |
//!
//! # Examples
//!
//! ```no_run
//! // In an integration test: an app installed with the real provider, then `prfmon` run on it.
//! use prfdata_testkit::{finish, Sandbox, WAIT};
//!
//! prfdata::prfdata_map! {
//!     pub mod app {
//!         app: "TestkitDoc",
//!         object SERVICE = 0 {
//!             name: "Testkit Doc", help: "A test app.", detail: Novice, default: QUEUE,
//!             instances: none, costly: false,
//!             counters {
//!                 QUEUE = 2: RawCount { name: "Queue", help: "Waiting.", detail: Novice, scale: 0 },
//!             }
//!         }
//!     }
//! }
//!
//! let sandbox = Sandbox::new();
//! sandbox.install(&app::MAP);
//! let prf = app::PrfData::activate_in(&sandbox.shm)?;
//! let mut prfmon = std::process::Command::new("prfmon");
//! sandbox.apply_env(&mut prfmon).args(["query", "Testkit Doc"]);
//! let run = finish(prfmon.stdout(std::process::Stdio::piped()).spawn()?, WAIT);
//! assert_eq!(run.code, 0, "{}", run.stderr);
//! # drop(prf);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod artifacts;
pub mod at_exit;
pub mod histogram_app;
pub mod layers;
pub mod probe;
pub mod process;
pub mod process_env;
pub mod sample;
pub mod sandbox;
pub mod tmux;
pub mod values;
pub mod wait;

pub use artifacts::{cdylib, provider_library, target_binary};
pub use at_exit::remove_at_exit;
pub use process::{finish, in_new_pid_namespace, ready, self_command, ChildGuard, Run};
pub use process_env::ProcessEnv;
pub use sandbox::Sandbox;
pub use wait::{bounded, wait_until, WAIT};
