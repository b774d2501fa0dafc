//! The writer's side of the instance tables (the app, holding the block's optex).
//!
//! - [`table`]: one object's table: live list, slots, free list; O(1) add and remove.
//! - [`tree`]: the links between tables: a child's parent link, each parent's count of live
//!   children, removal refused while children live, whole-subtree removal, and the counts
//!   derived again after a writer died.

mod table;
mod tree;

pub(crate) use table::{Corrupt, NewInstance, SlotRef};
pub(crate) use tree::Tables;
