//! prfmon's integration tests, in one test binary: one module per feature, with real processes
//! (the `prfmon` binary, provider hosts, apps that publish counters), real registries and
//! blocks in temp folders, and the real provider library loaded through `dlopen`.
//!
//! Helpers: [`common`] (running `prfmon`, the deliberately bad test providers and the C
//! provider), [`prfdata_app`] (an app installed with the real provider, run as this binary
//! re-executed), [`sampling_app`] (the app of the `typeperf` and `watch` tests),
//! [`serve_common`] (the app, `prfmon serve` and an HTTP client for the `serve` tests),
//! [`hostile_http`] (a lying server for the remote client's tests),
//! [`privilege`] (files owned by another user, for the trust tests). What other crates' tests
//! need too is in `prfdata-testkit`.
//!
//! A module that re-executes this binary as a child names its entry test with
//! `prfdata_testkit::test_path!`, and a test that loads a provider into this process holds
//! `prfdata_testkit::ProcessEnv` for as long as the provider reads the environment.

mod common;
mod hostile_http;
mod prfdata_app;
mod privilege;
mod sampling_app;
mod serve_common;

mod absence;
mod apps_appear;
mod apps_follow;
mod bad_providers;
mod block_faults;
mod broken_pipe;
mod collector;
mod control_chars;
mod disabled_providers;
mod docs;
mod dword_rule;
mod dynamic;
mod elapsed_time;
mod end_to_end;
mod event_log;
mod histogram;
mod host_user;
mod hostile_files;
mod hostile_names;
mod interrupt;
mod isolation;
mod large_answer;
mod list;
mod lodctr;
mod logging;
mod membership;
mod metrics_cost;
mod metrics_units;
mod on_demand_bound;
mod parents;
mod query_decode;
mod readme_walk;
mod reg;
mod registry_journal;
mod registry_privacy;
mod remote;
mod remote_limits;
mod serve;
mod serve_attacks;
mod serve_auth;
mod serve_large;
mod serve_peers;
mod serve_prometheus;
mod shm_folder;
mod stale_provider;
mod stats;
mod trust;
mod typeperf;
mod watch;
mod watch_leases;
mod watch_messages;
mod watch_no_terminal;
mod windows_switches;
