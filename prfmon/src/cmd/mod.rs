//! One module per subcommand.

pub mod lodctr;
pub mod reg;
