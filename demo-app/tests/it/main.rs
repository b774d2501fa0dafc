//! demo-app's integration tests, in one test binary: the demo run for real (installed with the
//! provider cdylib, publishing while it works, read through the collector), one module per
//! feature. Shared helpers come from `prfdata-testkit`.

mod demo;
mod live;
mod live_terminal;
mod two_runs;
mod warnings;
