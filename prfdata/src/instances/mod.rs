//! The writer's side of the instance tables (the app, holding the block's optex), and the
//! [`Instances`] handle on them.
//!
//! - [`table`]: one object's table: live list, slots, free list; O(1) add and remove.
//! - [`tree`]: the links between tables: a child's parent link, each parent's count of live
//!   children, removal refused while children live, whole-subtree removal, and the counts
//!   derived again after a writer died.

mod handle;
mod table;
mod tree;

pub use handle::{Instance, Instances};

pub(crate) use table::{Corrupt, NewInstance, SlotRef};
pub(crate) use tree::Tables;
