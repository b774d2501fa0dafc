//! Platforms without a backend yet: prfdata does not build there.
compile_error!("prfdata has a Linux backend only; add a backend module in src/sys/ for this target");
