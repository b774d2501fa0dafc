//! Text counters (`PERF_COUNTER_TEXT`): [`TextCtrs`], the handle [`PrfData::text`] gives, and
//! the UTF-16 writing and reading behind it.

use std::sync::atomic::Ordering;

use crate::counter_type::TextType;
use crate::map::{CtrId, Object, PerfDataMap, Scope};
use crate::PrfData;

/// Sets and reads the text counters of a [`PrfData`]: made by [`PrfData::text`].
///
/// Text longer than a counter's room (its type's size, less the NUL) is cut at a character
/// boundary. It is written inside a write section of the block, as under
/// [`lock_ctrs`](PrfData::lock_ctrs), so collectors see the old text or the new, never a mix;
/// called by a thread that holds [`lock_ctrs`](PrfData::lock_ctrs), it writes inside that
/// guard's section (as [`CtrsGuard::set_text`](crate::CtrsGuard::set_text) does).
///
/// # Examples
///
/// ```
/// prfdata::prfdata_map! { pub mod m { app: "TextDoc",
///   object SERVER { name: "Server", help: name, counters {
///     VERSION: Text32 { name: "Version", help: "The build." },
///   } }
///   object SESSION { name: "Session", help: name, instances: { max: 4, name_len: 16 }, counters {
///     USER: Text16 { name: "User", help: "Who is logged in." },
///   } } } }
/// # let dir = tempfile::tempdir()?;
/// let prf = m::PrfData::activate_in(dir.path())?;
/// prf.text().set(m::VERSION, (), "1.4.2 (ünïcode)");
/// assert_eq!(prf.text().get(m::VERSION, ()), "1.4.2 (ünïcode)");
/// let s = prf.add_instance(m::SESSION, "tty1")?;
/// prf.text().set(m::USER, s, "a name much longer than fifteen units");
/// assert_eq!(prf.text().get(m::USER, s), "a name much lon");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct TextCtrs<'a, M: PerfDataMap> {
    pub(crate) prf: &'a PrfData<M>,
}

impl<M: PerfDataMap> PrfData<M> {
    /// The handle that sets and reads text counters ([`TextCtrs`]).
    ///
    /// # Examples
    ///
    /// ```
    /// prfdata::prfdata_map! { pub mod m { app: "TextHandleDoc",
    ///   object SERVER { name: "Server", help: name, counters {
    ///     STATE: Text16 { name: "State", help: "What it does." },
    ///   } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// prf.text().set(m::STATE, (), "serving");
    /// assert_eq!(prf.text().get(m::STATE, ()), "serving");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn text(&self) -> TextCtrs<'_, M> {
        TextCtrs { prf: self }
    }
}

impl<M: PerfDataMap> TextCtrs<'_, M> {
    /// Sets the text counter `ctr` at `at` (`()` for an object without instances, else the
    /// instance's id).
    ///
    /// # Examples
    ///
    /// ```
    /// prfdata::prfdata_map! { pub mod m { app: "TextSetDoc",
    ///   object SERVICE { name: "Service", help: name, counters {
    ///     STATE: Text16 { name: "State", help: "What it does." },
    ///   } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// prf.text().set(m::STATE, (), "starting");
    /// prf.text().set(m::STATE, (), "up"); // the rest of the old text is cleared
    /// assert_eq!(prf.text().get(m::STATE, ()), "up");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set<T, O>(&self, ctr: CtrId<T, O>, at: <O::Scope as Scope>::At<O>, text: &str)
    where
        T: TextType,
        O: Object<Map = M>,
    {
        let off = O::Scope::__block_of::<O>(at) + ctr.offset();
        let units = T::TEXT_LEN;
        let room = units.saturating_sub(1) as usize; // the last unit stays NUL
        let mut encoded: Vec<u16> = Vec::with_capacity(room);
        for c in text.chars() {
            let mut buf = [0u16; 2];
            let part = c.encode_utf16(&mut buf);
            if encoded.len() + part.len() > room {
                break;
            }
            encoded.extend_from_slice(part);
        }
        let lock = self.prf.lock_layout();
        let _section = lock.section(self.prf.seq());
        for i in 0..units as usize {
            let unit = encoded.get(i).copied().unwrap_or(0);
            // SAFETY: the text counter's `units` u16s lie inside its counter block (its size,
            // 2 × units, came from `M` with the offset), 2-aligned (text values are 8-aligned).
            unsafe { self.prf.block.raw.u16_at(off + 2 * i) }.store(unit, Ordering::Relaxed);
        }
    }

    /// The current text of the text counter `ctr` at `at` (empty until set).
    ///
    /// # Examples
    ///
    /// ```
    /// prfdata::prfdata_map! { pub mod m { app: "TextGetDoc",
    ///   object SESSION { name: "Session", help: name, instances: { max: 4, name_len: 16 },
    ///     counters { USER: Text16 { name: "User", help: "Who is logged in." } } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// let s = prf.add_instance(m::SESSION, "tty1")?;
    /// assert_eq!(prf.text().get(m::USER, s), "");
    /// prf.text().set(m::USER, s, "zoë");
    /// assert_eq!(prf.text().get(m::USER, s), "zoë");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get<T, O>(&self, ctr: CtrId<T, O>, at: <O::Scope as Scope>::At<O>) -> String
    where
        T: TextType,
        O: Object<Map = M>,
    {
        let off = O::Scope::__block_of::<O>(at) + ctr.offset();
        let mut out = Vec::with_capacity(T::TEXT_LEN as usize);
        for i in 0..T::TEXT_LEN as usize {
            // SAFETY: as in `set`.
            let unit = unsafe { self.prf.block.raw.u16_at(off + 2 * i) }.load(Ordering::Relaxed);
            if unit == 0 {
                break;
            }
            out.push(unit);
        }
        String::from_utf16_lossy(&out)
    }
}
