//! Which objects of one block a Collect returns: the ones the query asks for, and the objects
//! of every parent their live instances name, transitively.
//!
//! A child instance points at its parent by `ParentObjectTitleIndex` and
//! `ParentObjectInstance` (the parent's position among its object's instances). NT's own
//! providers return the parent object whenever they return the child (asked for Thread alone,
//! perflib returns Process too), so that the link never points at an object the buffer lacks
//! and PDH can name the instance `parent/child`. The same holds here for an index list naming
//! a child object alone, for a `Costly` query whose costly child has a non-costly parent, for
//! `Global` when a non-costly child has a costly parent, and for parents of parents.
//!
//! Parents are per instance (any object with instances may be one), so the closure follows the
//! links of the instances live in the window being serialised: it is computed inside that same
//! sequence window, and a kept window's selection agrees with the links its bytes carry. Links
//! that do not resolve (the parent's slot is not live with the generation the child recorded)
//! add nothing; the serialiser writes no parent for them.

use prfdata::reader::{BlockView, ReadError};

use crate::query::Query;

/// The objects of one block to serialise, in block order, refilled for each window.
///
/// # Examples
///
/// ```no_run
/// use prfdata::reader::BlockReader;
/// use prfdata_provider::query::Query;
/// use prfdata_provider::select::Selection;
/// use prfdata_provider::serialize::TitleBase;
/// let reader = BlockReader::open("PrfDataDemo")?;
/// let titles = TitleBase { first_counter: 1848, first_help: 1849 };
/// let mut selection = Selection::default();
/// // The worker object alone (1848 + 18), and the pool object its workers' parents are in.
/// reader.read_with(std::time::Duration::from_millis(20), |view| {
///     selection.select(view, &Query::Items(vec![1866]), titles)
/// })?;
/// println!("{:?}", selection.objects());
/// # Ok::<(), prfdata::reader::ReadError>(())
/// ```
#[derive(Debug, Default)]
pub struct Selection {
    objects: Vec<usize>,
    chosen: Vec<bool>,
    pending: Vec<usize>,
}

impl Selection {
    /// The chosen object indexes, ascending.
    #[inline]
    pub fn objects(&self) -> &[usize] {
        &self.objects
    }

    /// Whether object `index` is chosen.
    #[inline]
    pub fn contains(&self, index: usize) -> bool {
        self.chosen.get(index).copied().unwrap_or(false)
    }

    /// Chooses, in `view`'s window, the objects `query` asks for (their names from `titles`) and
    /// every object a parent of their live instances is in, transitively.
    ///
    /// Costs nothing beyond the query when every object with instances is asked for (as `Global`
    /// usually does); otherwise one read of each chosen object's parent links.
    ///
    /// # Errors
    ///
    /// What the view returns for an invalid live value.
    pub fn select(
        &mut self,
        view: &BlockView<'_>,
        query: &Query,
        titles: TitleBase,
    ) -> Result<(), ReadError> {
        let infos = view.reader().objects();
        self.chosen.clear();
        self.chosen.resize(infos.len(), false);
        self.pending.clear();
        let mut unchosen_instanced = 0usize;
        for (k, info) in infos.iter().enumerate() {
            let wanted = query.wants(titles.name(info.name_offset), info.costly);
            self.chosen[k] = wanted;
            match (wanted, info.instanced) {
                (true, true) => self.pending.push(k),
                (false, true) => unchosen_instanced += 1,
                _ => {}
            }
        }
        // Parents are instances: once every object with instances is chosen, no link can add
        // another object.
        while unchosen_instanced > 0 {
            let Some(k) = self.pending.pop() else {
                break;
            };
            let table = view.instances(k)?;
            for pos in 0..table.len() {
                let Some(link) = table.parent(pos)? else {
                    continue;
                };
                let p = link.object as usize;
                if self.chosen[p] || view.parent_position(link).is_none() {
                    continue;
                }
                self.chosen[p] = true;
                unchosen_instanced -= 1;
                self.pending.push(p);
            }
        }
        self.objects.clear();
        self.objects
            .extend((0..infos.len()).filter(|&k| self.chosen[k]));
        Ok(())
    }
}

/// The name and help indexes an app was given by lodctr.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TitleBase {
    /// `First Counter` of the app's `Performance` key.
    pub first_counter: u32,
    /// `First Help`.
    pub first_help: u32,
}

impl TitleBase {
    /// The name index of a symbolic offset.
    pub fn name(&self, offset: u32) -> u32 {
        self.first_counter.wrapping_add(offset)
    }
    /// The help index of a symbolic offset.
    pub fn help(&self, offset: u32) -> u32 {
        self.first_help.wrapping_add(offset)
    }
}
