//! Counter paths in PDH syntax: parse, print, and expand against the counters available.
//!
//! ```text
//! \\HOST\Object(Parent/Instance#2)\Counter
//! └──┬─┘└──┬──┘ └─┬──┘ └──┬───┘└┬┘ └──┬──┘
//!  machine object parent  name index counter      (all but object and counter optional)
//! ```
//!
//! Wildcards: `\Object(*)\Counter` (every instance), `\Object(*)\*` (every instance, every
//! counter), `\Object\*` (every counter of an object without instances), and `*` as a parent
//! (`\Object(*/Instance)\Counter`).
//!
//! # Parsing rule
//!
//! PDH escapes nothing, so object, counter and instance names may contain spaces, `/`, `%`, `#`
//! and `.` (`\PrfData Demo Service\Jobs/sec`, `\PrfData Demo Worker(fast-1)\% Busy`). A path is
//! cut as follows, and [`parse`] reports the column of whatever does not fit:
//!
//! 1. A leading `\\` introduces the machine name, which runs to the next `\`.
//! 2. The **counter** is everything after the **last** `\`: it may contain `(`, `)`, `/` and `#`,
//!    but not `\`.
//! 3. Between the `\` that starts the object and that last `\` is the object part. If it holds
//!    a `(`, the **object** name is the text before the **first** `(`, and the **instance** is
//!    everything from there to the `)` that must end the object part. Instance text may therefore
//!    contain parentheses and even `\` (`\Process(foo (1))\X` is instance `foo (1)`); an object
//!    name may not contain `(`.
//! 4. In the instance, the **parent** is the text before the **first** `/`, and the **index** is
//!    a final `#` followed only by digits. So an instance name may contain `/` only when a parent
//!    is given, and a name that itself ends in `#digits` is written with an explicit `#0`
//!    (`job#12#0`), which [`CounterPath`]'s `Display` does.
//!
//! `Display` prints a path so that [`parse`] reads back the same path, for every path [`parse`]
//! returns.
//!
//! # Matching
//!
//! [`expand`] matches a path against a plain list of what a collection offers ([`Available`]),
//! comparing object, counter, parent and instance names case-insensitively as PDH does. Instance
//! names follow PDH: instances with the same parent and name are told apart by an index in order
//! of appearance (`svchost`, `svchost#1`, `svchost#2`), which [`pdh_instance_names`] assigns; a
//! path without `#n` means index 0. A path without a parent matches the instance under any parent.
//! A path that matches nothing is a [`PathError::NoMatch`] listing near matches.
//!
//! # Examples
//!
//! ```
//! use prfmon::pdh::path::{expand, parse, pdh_instance_names, Available};
//!
//! let path = parse(r"\PrfData Demo Worker(*)\% Busy")?;
//! let names = pdh_instance_names(&[(None, "fast"), (None, "slow"), (None, "fast")]);
//! let available: Vec<Available> = names
//!     .into_iter()
//!     .map(|name| Available::new("PrfData Demo Worker", "% Busy", Some(name)))
//!     .collect();
//! let found: Vec<String> = expand(&path, &available)?.iter().map(|m| m.path.to_string()).collect();
//! assert_eq!(found, [
//!     r"\PrfData Demo Worker(fast)\% Busy",
//!     r"\PrfData Demo Worker(slow)\% Busy",
//!     r"\PrfData Demo Worker(fast#1)\% Busy",
//! ]);
//! # Ok::<(), prfmon::pdh::path::PathError>(())
//! ```

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::histogram::{Percentile, PercentileError};
use crate::names::near::{distance, nearness};

/// How many near matches a [`PathError::NoMatch`] lists at most: enough to show the likely fix,
/// few enough for one terminal screen.
const MAX_NEAR: usize = 8;

/// A name or the wildcard `*`, as one component of a [`CounterPath`].
///
/// Serialised as its path text: `"*"` or the name.
///
/// # Examples
///
/// ```
/// use prfmon::pdh::path::Pattern;
///
/// assert!(Pattern::from("*").is_wildcard());
/// assert!(Pattern::from("Jobs/sec").matches("JOBS/SEC"));
/// assert_eq!(Pattern::from("Jobs/sec").to_string(), "Jobs/sec");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum Pattern {
    /// `*`: every name.
    Wildcard,
    /// One name, compared case-insensitively.
    Exact(String),
}

impl Pattern {
    /// Whether this is the wildcard `*`.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::pdh::path::Pattern;
    ///
    /// assert!(Pattern::Wildcard.is_wildcard());
    /// assert!(!Pattern::Exact("x".into()).is_wildcard());
    /// ```
    pub fn is_wildcard(&self) -> bool {
        matches!(self, Pattern::Wildcard)
    }

    /// Whether `name` matches: always for the wildcard, else equal ignoring case.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::pdh::path::Pattern;
    ///
    /// assert!(Pattern::Wildcard.matches("anything"));
    /// assert!(Pattern::from("% Busy").matches("% BUSY"));
    /// assert!(!Pattern::from("% Busy").matches("% Idle"));
    /// ```
    pub fn matches(&self, name: &str) -> bool {
        match self {
            Pattern::Wildcard => true,
            Pattern::Exact(exact) => eq_ignore_case(exact, name),
        }
    }
}

impl From<&str> for Pattern {
    /// `"*"` is the wildcard; anything else a name.
    fn from(text: &str) -> Self {
        Pattern::from(text.to_owned())
    }
}

impl From<String> for Pattern {
    /// `"*"` is the wildcard; anything else a name.
    fn from(text: String) -> Self {
        if text == "*" {
            Pattern::Wildcard
        } else {
            Pattern::Exact(text)
        }
    }
}

impl From<Pattern> for String {
    fn from(pattern: Pattern) -> Self {
        pattern_text(&pattern).to_owned()
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(pattern_text(self))
    }
}

/// The instance part of a path: `(Parent/Name#Index)`.
///
/// # Examples
///
/// ```
/// use prfmon::pdh::path::{InstanceSel, Pattern};
///
/// let sel = InstanceSel::named("fast").with_parent("pool").with_index(2);
/// assert_eq!(sel.to_string(), "pool/fast#2");
/// assert_eq!(InstanceSel::all().name, Pattern::Wildcard);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct InstanceSel {
    /// The parent instance's name; `None` matches any parent (or none).
    pub parent: Option<Pattern>,
    /// The instance's name, or `*`.
    pub name: Pattern,
    /// Which of the instances with this parent and name (`#n`; 0 when absent). Ignored for `*`.
    pub index: u32,
}

impl InstanceSel {
    /// The instance `name` (index 0, any parent).
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::pdh::path::InstanceSel;
    ///
    /// assert_eq!(InstanceSel::named("_Total").to_string(), "_Total");
    /// ```
    pub fn named(name: impl Into<String>) -> Self {
        InstanceSel {
            parent: None,
            name: Pattern::Exact(name.into()),
            index: 0,
        }
    }

    /// Every instance: `*`.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::pdh::path::InstanceSel;
    ///
    /// assert_eq!(InstanceSel::all().to_string(), "*");
    /// ```
    pub fn all() -> Self {
        InstanceSel {
            parent: None,
            name: Pattern::Wildcard,
            index: 0,
        }
    }

    /// This selection under parent `parent` (`"*"`: any parent that is given).
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::pdh::path::InstanceSel;
    ///
    /// assert_eq!(InstanceSel::named("0").with_parent("Idle").to_string(), "Idle/0");
    /// ```
    pub fn with_parent(self, parent: impl Into<Pattern>) -> Self {
        InstanceSel {
            parent: Some(parent.into()),
            ..self
        }
    }

    /// This selection with index `index` (`#index`).
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::pdh::path::InstanceSel;
    ///
    /// assert_eq!(InstanceSel::named("svchost").with_index(1).to_string(), "svchost#1");
    /// ```
    pub fn with_index(self, index: u32) -> Self {
        InstanceSel { index, ..self }
    }

    /// Whether an available instance is selected.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::pdh::path::{InstanceName, InstanceSel};
    ///
    /// let second = InstanceName { parent: None, name: "svchost".into(), index: 1 };
    /// assert!(InstanceSel::named("SVCHOST").with_index(1).matches(&second));
    /// assert!(!InstanceSel::named("svchost").matches(&second));
    /// assert!(InstanceSel::all().matches(&second));
    /// ```
    pub fn matches(&self, instance: &InstanceName) -> bool {
        self.matches_parts(instance.parent.as_deref(), &instance.name, instance.index)
    }

    /// [`InstanceSel::matches`] on an instance's parts: its parent's name, its name and its
    /// index among its namesakes.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::pdh::path::InstanceSel;
    ///
    /// assert!(InstanceSel::named("0").with_parent("Idle").matches_parts(Some("idle"), "0", 0));
    /// assert!(!InstanceSel::named("0").with_parent("Idle").matches_parts(None, "0", 0));
    /// ```
    pub fn matches_parts(&self, parent: Option<&str>, name: &str, index: u32) -> bool {
        self.parent_matches(parent) && self.name_matches(name, index)
    }

    /// The parent part of [`InstanceSel::matches_parts`].
    pub(crate) fn parent_matches(&self, parent: Option<&str>) -> bool {
        match (&self.parent, parent) {
            (None, _) => true,
            (Some(want), Some(have)) => want.matches(have),
            (Some(_), None) => false,
        }
    }

    /// The name and index part of [`InstanceSel::matches_parts`].
    pub(crate) fn name_matches(&self, name: &str, index: u32) -> bool {
        (self.name.is_wildcard() || self.index == index) && self.name.matches(name)
    }
}

impl fmt::Display for InstanceSel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parent = self.parent.as_ref().map(pattern_text);
        write_instance(f, parent, pattern_text(&self.name), self.index)
    }
}

/// A pattern as path text (`*` for the wildcard).
fn pattern_text(pattern: &Pattern) -> &str {
    match pattern {
        Pattern::Wildcard => "*",
        Pattern::Exact(name) => name,
    }
}

/// Writes an instance selection as a path spells it: `parent/name#index`.
fn write_instance(
    f: &mut impl fmt::Write,
    parent: Option<&str>,
    name: &str,
    index: u32,
) -> fmt::Result {
    if let Some(parent) = parent {
        write!(f, "{parent}/")?;
    }
    f.write_str(name)?;
    // A name that ends in `#digits` needs its index spelled out, even 0, to read back.
    let ambiguous = split_index(name).is_some();
    if index != 0 || ambiguous {
        write!(f, "#{index}")?;
    }
    Ok(())
}

/// Writes the path `\\machine\object(instance)\counter` from its parts, exactly as a
/// [`CounterPath`] without wildcards prints (`instance`: parent, name, index).
pub(crate) fn write_path(
    f: &mut impl fmt::Write,
    machine: Option<&str>,
    object: &str,
    instance: Option<(Option<&str>, &str, u32)>,
    counter: &str,
) -> fmt::Result {
    if let Some(machine) = machine {
        write!(f, r"\\{machine}")?;
    }
    write!(f, r"\{object}")?;
    if let Some((parent, name, index)) = instance {
        f.write_char('(')?;
        write_instance(f, parent, name, index)?;
        f.write_char(')')?;
    }
    write!(f, r"\{counter}")
}

/// A counter path: `\\HOST\Object(Parent/Instance#Index)\Counter`.
///
/// # Examples
///
/// ```
/// use prfmon::pdh::path::{CounterPath, InstanceSel};
///
/// let path = CounterPath::new("PrfData Demo Worker", "% Busy")
///     .with_instance(InstanceSel::named("fast-1"))
///     .with_machine("HOST");
/// assert_eq!(path.to_string(), r"\\HOST\PrfData Demo Worker(fast-1)\% Busy");
/// assert_eq!(path.to_string().parse::<CounterPath>()?, path);
/// # Ok::<(), prfmon::pdh::path::PathError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CounterPath {
    /// The machine (`\\HOST`), or `None` for the local one.
    pub machine: Option<String>,
    /// The object's name.
    pub object: String,
    /// The instance, or `None` for an object without instances.
    pub instance: Option<InstanceSel>,
    /// The counter's name, or `*`.
    pub counter: Pattern,
}

impl CounterPath {
    /// The path `\object\counter` (`counter` may be `"*"`).
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::pdh::path::CounterPath;
    ///
    /// assert_eq!(CounterPath::new("Memory", "*").to_string(), r"\Memory\*");
    /// ```
    pub fn new(object: impl Into<String>, counter: impl Into<Pattern>) -> Self {
        CounterPath {
            machine: None,
            object: object.into(),
            instance: None,
            counter: counter.into(),
        }
    }

    /// This path with an instance.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::pdh::path::{CounterPath, InstanceSel};
    ///
    /// let path = CounterPath::new("Process", "% Processor Time").with_instance(InstanceSel::all());
    /// assert_eq!(path.to_string(), r"\Process(*)\% Processor Time");
    /// ```
    pub fn with_instance(self, instance: InstanceSel) -> Self {
        CounterPath {
            instance: Some(instance),
            ..self
        }
    }

    /// This path on machine `machine`.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::pdh::path::CounterPath;
    ///
    /// assert_eq!(CounterPath::new("Memory", "Available Bytes").with_machine("db1").to_string(),
    ///            r"\\db1\Memory\Available Bytes");
    /// ```
    pub fn with_machine(self, machine: impl Into<String>) -> Self {
        CounterPath {
            machine: Some(machine.into()),
            ..self
        }
    }

    /// Whether the path has a wildcard (and so may expand to several counters).
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::pdh::path::parse;
    ///
    /// assert!(parse(r"\Process(*)\ID Process")?.is_wildcard());
    /// assert!(parse(r"\Thread(*/0)\ID Thread")?.is_wildcard());
    /// assert!(!parse(r"\Memory\Available Bytes")?.is_wildcard());
    /// # Ok::<(), prfmon::pdh::path::PathError>(())
    /// ```
    pub fn is_wildcard(&self) -> bool {
        self.counter.is_wildcard()
            || self.instance.as_ref().is_some_and(|sel| {
                sel.name.is_wildcard() || sel.parent.as_ref().is_some_and(Pattern::is_wildcard)
            })
    }
}

impl CounterPath {
    /// The counter read as a histogram's percentile, `Name:pQ`: the histogram's name and Q (or
    /// why the text after the last `:` is no percentile), when the counter is a name whose last
    /// `:` is followed by `p` and a digit or `.`; `None` otherwise (`*`, no `:`, `Name:x`).
    ///
    /// The path keeps the counter as written: matching ([`crate::sampler`]) tries it as a
    /// counter name first, and only then, when no counter has that exact name, as this
    /// percentile of the histogram `Name`. So a counter whose own name ends in `:p99` keeps
    /// its meaning.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::pdh::{parse, Percentile};
    ///
    /// let path = parse(r"\\box\PrfData Demo Service\Job latency:p99.9")?;
    /// let (name, q) = path.percentile().unwrap();
    /// assert_eq!((name, q), ("Job latency", "p99.9".parse::<Percentile>()));
    /// assert!(parse(r"\Svc\Job latency:p0")?.percentile().unwrap().1.is_err());
    /// assert!(parse(r"\Svc\Ratio 1:2")?.percentile().is_none());
    /// assert!(parse(r"\Svc(*)\*")?.percentile().is_none());
    /// # Ok::<(), prfmon::pdh::PathError>(())
    /// ```
    pub fn percentile(&self) -> Option<(&str, Result<Percentile, PercentileError>)> {
        let Pattern::Exact(counter) = &self.counter else {
            return None;
        };
        split_percentile(counter)
    }
}

/// `Name:pQ` → (`Name`, Q parsed): see [`CounterPath::percentile`].
pub(crate) fn split_percentile(
    counter: &str,
) -> Option<(&str, Result<Percentile, PercentileError>)> {
    let (name, suffix) = counter.rsplit_once(':')?;
    let after_p = suffix.strip_prefix('p')?;
    let looks_numeric = after_p.starts_with(|c: char| c.is_ascii_digit() || c == '.');
    (!name.is_empty() && looks_numeric).then(|| (name, suffix.parse()))
}

impl fmt::Display for CounterPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let instance = self.instance.as_ref().map(|sel| {
            let parent = sel.parent.as_ref().map(pattern_text);
            (parent, pattern_text(&sel.name), sel.index)
        });
        let counter = pattern_text(&self.counter);
        write_path(f, self.machine.as_deref(), &self.object, instance, counter)
    }
}

impl FromStr for CounterPath {
    type Err = PathError;

    /// [`parse`].
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        parse(text)
    }
}

/// A counter path that could not be parsed, or that matches nothing.
///
/// Columns count characters from 1.
///
/// # Examples
///
/// ```
/// use prfmon::pdh::path::{parse, PathError};
///
/// let err = parse(r"\Process(svchost\% Processor Time").unwrap_err();
/// assert!(matches!(err, PathError::UnclosedInstance(_, 9)));
/// assert_eq!(
///     err.to_string(),
///     r"counter path `\Process(svchost\% Processor Time`: the `(` at column 9 has no `)` before the `\` of the counter"
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// The path does not start with `\`. Holds the path.
    #[error(
        r"counter path `{0}`: must start with `\` (column 1), as in \Object(Instance)\Counter"
    )]
    NoLeadingBackslash(String),
    /// `\\` is followed by no machine name, or the machine name by nothing. Holds the path and the column of the `\\`.
    #[error(
        r"counter path `{0}`: expected a machine name and `\Object` after the `\\` at column {1}"
    )]
    BadMachine(String, usize),
    /// There is no `\` between the object and the counter. Holds the path and the column of the object.
    #[error(r"counter path `{0}`: no `\Counter` after the object at column {1}")]
    MissingCounter(String, usize),
    /// The object name is empty. Holds the path and the column where the object name should be.
    #[error("counter path `{0}`: empty object name at column {1}")]
    EmptyObject(String, usize),
    /// The object name is `*`. Holds the path and the column of the `*`.
    #[error("counter path `{0}`: the object at column {1} is `*`; name the object (wildcards are for instances and counters)")]
    ObjectWildcard(String, usize),
    /// The counter name is empty. Holds the path and the column of the last `\`.
    #[error(r"counter path `{0}`: empty counter name after the `\` at column {1}")]
    EmptyCounter(String, usize),
    /// A `(` with no `)` before the counter's `\`. Holds the path and the column of the `(`.
    #[error(r"counter path `{0}`: the `(` at column {1} has no `)` before the `\` of the counter")]
    UnclosedInstance(String, usize),
    /// A `)` in the object part without a `(` before it. Holds the path and the column of the `)`.
    #[error("counter path `{0}`: the `)` at column {1} closes no `(`")]
    UnopenedInstance(String, usize),
    /// Text between the instance's `)` and the counter's `\`. Holds the path and the column of the first unexpected character.
    #[error(r"counter path `{0}`: unexpected text at column {1} after the instance's `)`; the `\Counter` must follow it")]
    TextAfterInstance(String, usize),
    /// The instance name is empty (`()`, `(parent/)`, `(#1)`). Holds the path and the column where the instance name should be.
    #[error("counter path `{0}`: empty instance name at column {1}")]
    EmptyInstance(String, usize),
    /// The parent name before `/` is empty. Holds the path and the column of the `/`.
    #[error("counter path `{0}`: empty parent name before the `/` at column {1}")]
    EmptyParent(String, usize),
    /// The `#index` does not fit in 32 bits. Holds the path and the column of the `#`.
    #[error("counter path `{0}`: the instance index at column {1} does not fit in 32 bits")]
    BadIndex(String, usize),
    /// An `#index` after the wildcard instance `*`. Holds the path and the column of the `#`.
    #[error("counter path `{0}`: the wildcard instance `*` takes no `#index` (column {1})")]
    IndexOnWildcard(String, usize),
    /// The path names another machine (`\\HOST\...`), and this collection is this machine's:
    /// its data is never answered under another machine's name.
    #[error(r"counter path `{path}` names machine `{machine}`, but the data comes from this machine (`{local}`); remote collection is not supported: run the command on `{machine}`, or drop the `\\{machine}` prefix")]
    RemoteMachine {
        /// The path, as given.
        path: String,
        /// The machine it names.
        machine: String,
        /// This machine's name (the collection's `SystemName`).
        local: String,
    },
    /// The path asks for a percentile (`Name:pQ`) of a counter that is not a histogram, and
    /// no counter has the whole name.
    #[error("counter path `{path}`: `{counter}` is not a histogram; a percentile (`:p99`) is read only from a histogram's buckets")]
    NotAHistogram {
        /// The path, as given.
        path: String,
        /// The counter named before the `:`.
        counter: String,
    },
    /// The path asks for a percentile of a histogram with a Q that is no percentile
    /// (`:p0`, `:p101`, `:p99.9999`), and no counter has the whole name.
    #[error("counter path `{path}`: {error}")]
    BadPercentile {
        /// The path, as given.
        path: String,
        /// What is wrong with the text after the `:`.
        error: PercentileError,
    },
    /// The path is well formed but matches no available counter.
    #[error("counter path `{path}` matches no available counter; {}", near_text(.near))]
    NoMatch {
        /// The path that was expanded, as printed.
        path: String,
        /// The nearest available paths, nearest first (at most eight); empty when nothing is
        /// near.
        near: Vec<String>,
    },
}

/// The tail of a [`PathError::NoMatch`] message.
fn near_text(near: &[String]) -> String {
    if near.is_empty() {
        "no object of a similar name is available".to_owned()
    } else {
        format!("near matches: {}", near.join(", "))
    }
}

/// `name#digits` → (`name`, byte offset of `#`, `digits`), when the name ends in a `#` followed
/// only by ASCII digits.
fn split_index(text: &str) -> Option<(&str, usize, &str)> {
    let hash = text.rfind('#')?;
    let digits = &text[hash + 1..];
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| (&text[..hash], hash, digits))
}

/// Parse a counter path (see the [parsing rule](self#parsing-rule)).
///
/// # Errors
///
/// A [`PathError`] naming what is wrong and its column: no leading `\`, an empty machine,
/// object, counter, parent or instance name, an unbalanced `(` or `)`, text after the instance,
/// an index that does not fit in 32 bits, an index on `*`, or `*` as the object.
///
/// # Examples
///
/// ```
/// use prfmon::pdh::path::{parse, Pattern};
///
/// let path = parse(r"\\HOST\PrfData Demo Worker(pool/fast-1#2)\% Busy")?;
/// assert_eq!(path.machine.as_deref(), Some("HOST"));
/// assert_eq!(path.object, "PrfData Demo Worker");
/// let instance = path.instance.as_ref().unwrap();
/// assert_eq!(instance.parent, Some(Pattern::from("pool")));
/// assert_eq!(instance.name, Pattern::from("fast-1"));
/// assert_eq!(instance.index, 2);
/// assert_eq!(path.counter, Pattern::from("% Busy"));
///
/// assert!(parse(r"\PrfData Demo Service\*")?.counter.is_wildcard());
/// assert!(parse("Memory").is_err());
/// # Ok::<(), prfmon::pdh::path::PathError>(())
/// ```
pub fn parse(text: &str) -> Result<CounterPath, PathError> {
    let fail = |error: fn(String, usize) -> PathError, byte| error_at(text, error, byte);
    // The machine, then the counter after the last `\`.
    let (machine, object_start) = parse_machine(text)?;
    let last = text.rfind('\\').unwrap_or(0);
    if last < object_start {
        return fail(PathError::MissingCounter, object_start);
    }
    let counter = &text[last + 1..];
    if counter.is_empty() {
        return fail(PathError::EmptyCounter, last);
    }
    // The object between them, with its instance.
    let (object, instance) = parse_object(text, object_start, last)?;
    match object {
        "" => fail(PathError::EmptyObject, object_start),
        "*" => fail(PathError::ObjectWildcard, object_start),
        _ => Ok(CounterPath {
            machine,
            object: object.to_owned(),
            instance,
            counter: Pattern::from(counter),
        }),
    }
}

/// The error `error` of `text` at `byte`, its column counted in characters from 1.
fn error_at<T>(
    text: &str,
    error: fn(String, usize) -> PathError,
    byte: usize,
) -> Result<T, PathError> {
    let column = text.get(..byte).map_or(0, |head| head.chars().count()) + 1;
    Err(error(text.to_owned(), column))
}

/// The machine of `text` (`\\machine\...`, or `None` for `\...`) and where its object starts.
fn parse_machine(text: &str) -> Result<(Option<String>, usize), PathError> {
    if let Some(after) = text.strip_prefix(r"\\") {
        match after.find('\\') {
            Some(end) if end > 0 => Ok((Some(after[..end].to_owned()), 2 + end + 1)),
            _ => error_at(text, PathError::BadMachine, 0),
        }
    } else if text.starts_with('\\') {
        Ok((None, 1))
    } else {
        Err(PathError::NoLeadingBackslash(text.to_owned()))
    }
}

/// The object part `text[start..end]`: `Object` or `Object(instance)`.
fn parse_object(
    text: &str,
    start: usize,
    end: usize,
) -> Result<(&str, Option<InstanceSel>), PathError> {
    let fail = |error: fn(String, usize) -> PathError, byte| error_at(text, error, start + byte);
    let object_part = &text[start..end];
    let Some(open) = object_part.find('(') else {
        return match object_part.find(')') {
            Some(close) => fail(PathError::UnopenedInstance, close),
            None => Ok((object_part, None)),
        };
    };
    let Some(close) = object_part.rfind(')').filter(|&close| close > open) else {
        return fail(PathError::UnclosedInstance, open);
    };
    if close + 1 != object_part.len() {
        return fail(PathError::TextAfterInstance, close + 1);
    }
    let instance = parse_instance(text, start + open + 1, start + close)?;
    Ok((&object_part[..open], Some(instance)))
}

/// The instance `text[start..end]`: `[parent/]name[#index]`.
fn parse_instance(text: &str, start: usize, end: usize) -> Result<InstanceSel, PathError> {
    let fail = |error: fn(String, usize) -> PathError, byte| error_at(text, error, start + byte);
    let inner = &text[start..end];
    let (parent, name_start) = match inner.find('/') {
        Some(0) => return fail(PathError::EmptyParent, 0),
        Some(slash) => (Some(Pattern::from(&inner[..slash])), slash + 1),
        None => (None, 0),
    };
    let rest = &inner[name_start..];
    let (name, index) = match split_index(rest) {
        Some(("*", hash, _)) => return fail(PathError::IndexOnWildcard, name_start + hash),
        Some((name, hash, digits)) => match digits.parse::<u32>() {
            Ok(index) => (name, index),
            Err(_) => return fail(PathError::BadIndex, name_start + hash),
        },
        None => (rest, 0),
    };
    if name.is_empty() {
        return fail(PathError::EmptyInstance, name_start);
    }
    Ok(InstanceSel {
        parent,
        name: Pattern::from(name),
        index,
    })
}

/// An instance as PDH names it: parent, name, and index among its namesakes.
///
/// # Examples
///
/// ```
/// use prfmon::pdh::path::InstanceName;
///
/// let thread = InstanceName { parent: Some("Idle".into()), name: "0".into(), index: 0 };
/// assert_eq!(thread.to_string(), "Idle/0");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct InstanceName {
    /// The parent instance's name, if the instance has a parent.
    pub parent: Option<String>,
    /// The instance's name.
    pub name: String,
    /// Its position among the instances with the same parent and name (0 for the first).
    pub index: u32,
}

impl InstanceName {
    /// The selection that names exactly this instance.
    fn selector(&self) -> InstanceSel {
        InstanceSel {
            parent: self.parent.clone().map(Pattern::Exact),
            name: Pattern::Exact(self.name.clone()),
            index: self.index,
        }
    }
}

impl fmt::Display for InstanceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.selector().fmt(f)
    }
}

/// PDH instance names for a list of instances in order of appearance: the first instance with a
/// given parent and name gets index 0, the next 1 (`#1`), and so on. Names and parents are
/// compared case-insensitively, as PDH compares them.
///
/// # Examples
///
/// ```
/// use prfmon::pdh::path::pdh_instance_names;
///
/// let names = pdh_instance_names(&[
///     (None, "svchost"), (None, "init"), (None, "SVCHOST"),
///     (Some("p1"), "0"), (Some("p2"), "0"), (Some("p1"), "0"),
/// ]);
/// let printed: Vec<String> = names.iter().map(ToString::to_string).collect();
/// assert_eq!(printed, ["svchost", "init", "SVCHOST#1", "p1/0", "p2/0", "p1/0#1"]);
/// ```
pub fn pdh_instance_names(instances: &[(Option<&str>, &str)]) -> Vec<InstanceName> {
    let mut seen: HashMap<(Option<String>, String), u32> = HashMap::new();
    instances
        .iter()
        .map(|&(parent, name)| {
            let key = (parent.map(fold_case), fold_case(name));
            let count = seen.entry(key).or_insert(0);
            let index = *count;
            *count += 1;
            InstanceName {
                parent: parent.map(str::to_owned),
                name: name.to_owned(),
                index,
            }
        })
        .collect()
}

/// One counter a collection offers: object, counter and (for objects with instances) instance.
///
/// # Examples
///
/// ```
/// use prfmon::pdh::path::Available;
///
/// let a = Available::new("PrfData Demo Service", "Jobs/sec", None);
/// assert_eq!(a.path().to_string(), r"\PrfData Demo Service\Jobs/sec");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Available {
    /// The object's name.
    pub object: String,
    /// The counter's name.
    pub counter: String,
    /// The instance, for objects with instances (see [`pdh_instance_names`]).
    pub instance: Option<InstanceName>,
}

impl Available {
    /// An available counter.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::pdh::path::{Available, InstanceName};
    ///
    /// let inst = InstanceName { parent: None, name: "fast-1".into(), index: 0 };
    /// let a = Available::new("PrfData Demo Worker", "% Busy", Some(inst));
    /// assert_eq!(a.counter, "% Busy");
    /// ```
    pub fn new(
        object: impl Into<String>,
        counter: impl Into<String>,
        instance: Option<InstanceName>,
    ) -> Self {
        Available {
            object: object.into(),
            counter: counter.into(),
            instance,
        }
    }

    /// Its full path on the local machine, without wildcards.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::pdh::path::{Available, InstanceName};
    ///
    /// let inst = InstanceName { parent: Some("pool".into()), name: "fast".into(), index: 2 };
    /// let a = Available::new("PrfData Demo Worker", "% Busy", Some(inst));
    /// assert_eq!(a.path().to_string(), r"\PrfData Demo Worker(pool/fast#2)\% Busy");
    /// ```
    pub fn path(&self) -> CounterPath {
        CounterPath {
            machine: None,
            object: self.object.clone(),
            instance: self.instance.as_ref().map(InstanceName::selector),
            counter: Pattern::Exact(self.counter.clone()),
        }
    }

    /// Whether `path` names this counter (the machine is not compared).
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::pdh::path::{parse, Available};
    ///
    /// let a = Available::new("Memory", "Available Bytes", None);
    /// assert!(a.matches(&parse(r"\memory\available bytes")?));
    /// assert!(a.matches(&parse(r"\Memory\*")?));
    /// assert!(!a.matches(&parse(r"\Memory(*)\*")?));
    /// # Ok::<(), prfmon::pdh::path::PathError>(())
    /// ```
    pub fn matches(&self, path: &CounterPath) -> bool {
        let instance_ok = match (&path.instance, &self.instance) {
            (None, None) => true,
            (Some(sel), Some(instance)) => sel.matches(instance),
            _ => false,
        };
        instance_ok
            && eq_ignore_case(&path.object, &self.object)
            && path.counter.matches(&self.counter)
    }
}

/// One counter a path expanded to.
///
/// # Examples
///
/// ```
/// use prfmon::pdh::path::{expand, parse, Available};
///
/// let available = [Available::new("Memory", "Available Bytes", None)];
/// let found = expand(&parse(r"\\db1\MEMORY\*")?, &available)?;
/// assert_eq!(found[0].index, 0);
/// assert_eq!(found[0].path.to_string(), r"\\db1\Memory\Available Bytes");
/// # Ok::<(), prfmon::pdh::path::PathError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Match {
    /// The full path, without wildcards, spelled as the available counter spells it, on the
    /// machine of the path that was expanded.
    pub path: CounterPath,
    /// The position of the counter in the list given to [`expand`].
    pub index: usize,
}

/// The available counters a path names, in the order they are listed.
///
/// Object, counter, parent and instance names compare case-insensitively; `*` matches any
/// counter, instance or parent; a path without `#n` names index 0; a path without a parent
/// matches an instance under any parent; a path without an instance matches only objects
/// without instances, and one with an instance only objects with instances. The machine is not
/// compared (the list is what one machine offers) and is carried into each [`Match`].
///
/// # Errors
///
/// [`PathError::NoMatch`] when nothing matches, with at most eight of the nearest available
/// paths, nearest first: the same object's other counters and instances, the counters of objects
/// whose names are within a small edit distance (Damerau–Levenshtein, ignoring case, via
/// `strsim`) or contain the requested name, and counters of a near name in any object.
///
/// # Examples
///
/// ```
/// use prfmon::pdh::path::{expand, parse, Available, PathError};
///
/// let available = [
///     Available::new("PrfData Demo Service", "Jobs/sec", None),
///     Available::new("PrfData Demo Service", "Jobs Queued", None),
/// ];
/// assert_eq!(expand(&parse(r"\PrfData Demo Service\*")?, &available)?.len(), 2);
///
/// let err = expand(&parse(r"\PrfData Demo Servce\Jobs/sex")?, &available).unwrap_err();
/// let PathError::NoMatch { near, .. } = &err else { panic!("{err}") };
/// assert_eq!(near[0], r"\PrfData Demo Service\Jobs/sec");
/// # Ok::<(), PathError>(())
/// ```
pub fn expand(path: &CounterPath, available: &[Available]) -> Result<Vec<Match>, PathError> {
    let found: Vec<Match> = available
        .iter()
        .enumerate()
        .filter(|(_, item)| item.matches(path))
        .map(|(index, item)| Match {
            path: CounterPath {
                machine: path.machine.clone(),
                ..item.path()
            },
            index,
        })
        .collect();
    if found.is_empty() {
        return Err(PathError::NoMatch {
            path: path.to_string(),
            near: near_matches(path, available),
        });
    }
    Ok(found)
}

/// The available paths nearest to a path that matched nothing, nearest first.
///
/// A counter is a candidate when its object's name is near the requested object's, or its own
/// name near the requested counter's (so a counter asked of the wrong object is found in the
/// right one). "Near" is [`crate::names::nearness`]. Candidates are scored by the sum of the edit distances of
/// object, counter and instance, and each is suggested as the path that would name it, keeping
/// the request's wildcards (and `(*)` where the request lacked an instance the object has).
///
/// The candidates come one at a time, and only the [`MAX_NEAR`] best suggestions so far are
/// kept (each with the best score any candidate gave it): a collection of a million instances
/// costs no more memory than one of ten. The result does not depend on the candidates' order.
pub(crate) fn near_matches<A: std::borrow::Borrow<Available>>(
    path: &CounterPath,
    available: impl IntoIterator<Item = A>,
) -> Vec<String> {
    // The best suggestions so far, best first: (score, suggestion).
    let mut best: Vec<(usize, String)> = Vec::with_capacity(MAX_NEAR + 1);
    // Names repeat once per counter and instance: measure each name once.
    let mut objects: HashMap<String, (usize, bool)> = HashMap::new();
    let mut counters: HashMap<String, (usize, bool)> = HashMap::new();
    let measure = |cache: &mut HashMap<String, (usize, bool)>, want: &str, have: &str| {
        if let Some(&known) = cache.get(have) {
            return known;
        }
        let found = nearness(want, have);
        cache.insert(have.to_owned(), found);
        found
    };
    for item in available {
        let item = item.borrow();
        let (object_score, object_near) = measure(&mut objects, &path.object, &item.object);
        let (counter_score, counter_near) = match &path.counter {
            Pattern::Wildcard => (0, false),
            Pattern::Exact(counter) => measure(&mut counters, counter, &item.counter),
        };
        if !object_near && !counter_near {
            continue;
        }
        let (instance_score, instance) = match (&path.instance, &item.instance) {
            (None, None) => (0, None),
            // The request lacked an instance: suggest every instance rather than each one.
            (None, Some(_)) => (1, Some(InstanceSel::all())),
            (Some(_), None) => (1, None),
            (Some(sel), Some(have)) if sel.name.is_wildcard() => {
                (usize::from(!sel.matches(have)), Some(sel.clone()))
            }
            (Some(sel), Some(have)) => (instance_distance(sel, have), Some(have.selector())),
        };
        let score = object_score + counter_score + instance_score;
        // A worse score than the worst kept cannot be kept (ties are decided by the text).
        if best.len() == MAX_NEAR && best.last().is_some_and(|(worst, _)| score > *worst) {
            continue;
        }
        let suggestion = CounterPath {
            machine: path.machine.clone(),
            object: item.object.clone(),
            instance,
            counter: match &path.counter {
                Pattern::Wildcard => Pattern::Wildcard,
                Pattern::Exact(_) => Pattern::Exact(item.counter.clone()),
            },
        }
        .to_string();
        keep_best(&mut best, score, suggestion);
    }
    best.into_iter().map(|(_, p)| p).collect()
}

/// Adds `suggestion` with `score` to `best` (sorted, at most [`MAX_NEAR`]): a suggestion
/// already there keeps the better of its scores; past [`MAX_NEAR`] the worst is dropped.
///
/// Dropping is safe: a dropped suggestion had [`MAX_NEAR`] better ones, which only get better,
/// so it cannot be among the best at the end, whatever score it comes back with.
fn keep_best(best: &mut Vec<(usize, String)>, score: usize, suggestion: String) {
    if let Some(at) = best.iter().position(|(_, s)| *s == suggestion) {
        if best[at].0 <= score {
            return;
        }
        best.remove(at);
    }
    let entry = (score, suggestion);
    let at = best.partition_point(|e| *e < entry);
    best.insert(at, entry);
    best.truncate(MAX_NEAR);
}

/// How far an instance is from a selection that names one instance exactly.
fn instance_distance(sel: &InstanceSel, have: &InstanceName) -> usize {
    let name = match &sel.name {
        Pattern::Wildcard => 0,
        Pattern::Exact(name) => distance(name, &have.name),
    };
    let index = usize::from(sel.index != have.index);
    let parent = match (&sel.parent, &have.parent) {
        (None, _) | (Some(Pattern::Wildcard), Some(_)) => 0,
        (Some(Pattern::Exact(want)), Some(have)) => distance(want, have),
        (Some(_), None) => 1,
    };
    name + index + parent
}

/// A name folded for case-insensitive comparison.
pub(crate) fn fold_case(name: &str) -> String {
    name.to_lowercase()
}

/// Whether two names are equal ignoring case.
pub(crate) fn eq_ignore_case(a: &str, b: &str) -> bool {
    a == b
        || a.chars()
            .flat_map(char::to_lowercase)
            .eq(b.chars().flat_map(char::to_lowercase))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> CounterPath {
        parse(text).unwrap_or_else(|e| panic!("{e}"))
    }

    fn inst(parent: Option<&str>, name: &str, index: u32) -> InstanceName {
        InstanceName {
            parent: parent.map(str::to_owned),
            name: name.to_owned(),
            index,
        }
    }

    // --- Parsing -----------------------------------------------------------------------------

    #[test]
    fn parses_object_and_counter() {
        let path = p(r"\PrfData Demo Service\Jobs/sec");
        assert_eq!(path, CounterPath::new("PrfData Demo Service", "Jobs/sec"));
        assert_eq!(path.machine, None);
        assert_eq!(path.instance, None);
    }

    #[test]
    fn parses_an_instance() {
        let path = p(r"\PrfData Demo Worker(fast-1)\% Busy");
        assert_eq!(
            path,
            CounterPath::new("PrfData Demo Worker", "% Busy")
                .with_instance(InstanceSel::named("fast-1"))
        );
    }

    #[test]
    fn parses_parent_and_index() {
        let path = p(r"\Thread(svchost/3#2)\% Processor Time");
        assert_eq!(
            path.instance,
            Some(InstanceSel::named("3").with_parent("svchost").with_index(2))
        );
    }

    #[test]
    fn parses_a_machine() {
        let path = p(r"\\HOST-1.example\Memory\Available Bytes");
        assert_eq!(path.machine.as_deref(), Some("HOST-1.example"));
        assert_eq!(path.object, "Memory");
        assert_eq!(path.counter, Pattern::from("Available Bytes"));
    }

    #[test]
    fn parses_wildcards() {
        let all = p(r"\Process(*)\ID Process");
        assert_eq!(all.instance, Some(InstanceSel::all()));
        assert!(all.is_wildcard());
        let both = p(r"\Process(*)\*");
        assert_eq!(both.counter, Pattern::Wildcard);
        let counters = p(r"\Memory\*");
        assert_eq!(
            (counters.instance, counters.counter),
            (None, Pattern::Wildcard)
        );
        let parents = p(r"\Thread(*/0)\ID Thread");
        assert_eq!(
            parents.instance,
            Some(InstanceSel::named("0").with_parent("*"))
        );
        assert!(parents.is_wildcard());
    }

    #[test]
    fn names_may_contain_punctuation() {
        // `#`, `%`, `/`, `.` and spaces in object and counter names are plain characters.
        let path = p(r"\.NET CLR Memory(app.exe)\# Bytes in all Heaps");
        assert_eq!(path.object, ".NET CLR Memory");
        assert_eq!(path.counter, Pattern::from("# Bytes in all Heaps"));
        let path = p(r"\Web #2 / Stats\Hits/sec (total)");
        assert_eq!(path.object, "Web #2 / Stats");
        assert_eq!(path.counter, Pattern::from("Hits/sec (total)"));
    }

    #[test]
    fn instance_runs_from_the_first_paren_to_the_last() {
        // Parentheses and `\` inside an instance: it ends at the `)` before the counter's `\`.
        assert_eq!(
            p(r"\Process(foo (1))\ID Process").instance,
            Some(InstanceSel::named("foo (1)"))
        );
        assert_eq!(
            p(r"\Disk(C:\data)\Free").instance,
            Some(InstanceSel::named(r"C:\data"))
        );
        // A `/` after the parent's belongs to the name.
        let sel = p(r"\X(a/b/c)\Y").instance.unwrap();
        assert_eq!(
            (sel.parent, sel.name),
            (Some(Pattern::from("a")), Pattern::from("b/c"))
        );
    }

    #[test]
    fn hash_is_an_index_only_before_digits_at_the_end() {
        assert_eq!(p(r"\X(a#b)\Y").instance, Some(InstanceSel::named("a#b")));
        assert_eq!(p(r"\X(a#)\Y").instance, Some(InstanceSel::named("a#")));
        assert_eq!(
            p(r"\X(job#12#0)\Y").instance,
            Some(InstanceSel::named("job#12"))
        );
        assert_eq!(
            p(r"\X(job#12)\Y").instance,
            Some(InstanceSel::named("job").with_index(12))
        );
    }

    #[test]
    fn errors_name_what_and_where() {
        let err = |text: &str| parse(text).unwrap_err();
        assert_eq!(
            err("Memory"),
            PathError::NoLeadingBackslash("Memory".into())
        );
        assert!(matches!(err(r"\\HOST"), PathError::BadMachine(_, 1)));
        assert!(matches!(err(r"\\\Memory\X"), PathError::BadMachine(_, 1)));
        assert!(matches!(err(r"\Memory"), PathError::MissingCounter(_, 2)));
        assert!(matches!(
            err(r"\\HOST\Memory"),
            PathError::MissingCounter(_, 8)
        ));
        assert!(matches!(err(r"\Memory\"), PathError::EmptyCounter(_, 8)));
        assert!(matches!(err(r"\\Counter"), PathError::BadMachine(..)));
        assert!(matches!(err(r"\(x)\Counter"), PathError::EmptyObject(_, 2)));
        assert!(matches!(
            err(r"\*\Counter"),
            PathError::ObjectWildcard(_, 2)
        ));
        assert!(matches!(
            err(r"\Process(x\Y"),
            PathError::UnclosedInstance(_, 9)
        ));
        assert!(matches!(
            err(r"\Process)x(\Y"),
            PathError::UnclosedInstance(_, 11)
        ));
        assert!(matches!(
            err(r"\Process x)\Y"),
            PathError::UnopenedInstance(_, 11)
        ));
        assert!(matches!(
            err(r"\Process(x)y\Y"),
            PathError::TextAfterInstance(_, 12)
        ));
        assert!(matches!(
            err(r"\Process()\Y"),
            PathError::EmptyInstance(_, 10)
        ));
        assert!(matches!(
            err(r"\Process(p/)\Y"),
            PathError::EmptyInstance(_, 12)
        ));
        assert!(matches!(
            err(r"\Process(#3)\Y"),
            PathError::EmptyInstance(_, 10)
        ));
        assert!(matches!(
            err(r"\Process(/x)\Y"),
            PathError::EmptyParent(_, 10)
        ));
        assert!(matches!(
            err(r"\Process(x#4294967296)\Y"),
            PathError::BadIndex(_, 11)
        ));
        assert!(matches!(
            err(r"\Process(*#1)\Y"),
            PathError::IndexOnWildcard(_, 11)
        ));
    }

    #[test]
    fn columns_count_characters_not_bytes() {
        // "é" is two bytes; the `(` is the 6th character.
        assert!(matches!(
            parse(r"\Café(x\Y").unwrap_err(),
            PathError::UnclosedInstance(_, 6)
        ));
    }

    #[test]
    fn error_messages_read_well() {
        assert_eq!(
            parse(r"\Process(x)y\Y").unwrap_err().to_string(),
            r"counter path `\Process(x)y\Y`: unexpected text at column 12 after the instance's `)`; the `\Counter` must follow it"
        );
        assert_eq!(
            parse("Memory").unwrap_err().to_string(),
            r"counter path `Memory`: must start with `\` (column 1), as in \Object(Instance)\Counter"
        );
    }

    // --- Formatting --------------------------------------------------------------------------

    #[test]
    fn display_round_trips() {
        for text in [
            r"\PrfData Demo Service\Jobs/sec",
            r"\PrfData Demo Worker(fast-1)\% Busy",
            r"\Thread(svchost/3#2)\% Processor Time",
            r"\\HOST\Object(Parent/Instance#2)\Counter",
            r"\Process(*)\ID Process",
            r"\Process(*)\*",
            r"\Memory\*",
            r"\Thread(*/0)\ID Thread",
            r"\Process(foo (1))\ID Process",
            r"\X(a/b/c)\Y",
            r"\X(job#12#0)\Y",
            r"\X(a#b)\Hits/sec (total)",
        ] {
            let path = p(text);
            assert_eq!(path.to_string(), text);
            assert_eq!(p(&path.to_string()), path);
        }
        // `#0` is not written unless the name needs it.
        assert_eq!(p(r"\X(a#0)\Y").to_string(), r"\X(a)\Y");
    }

    #[test]
    fn a_percentile_path_keeps_its_text_and_reads_as_name_and_q() {
        let q = |t: &str| t.parse::<Percentile>();
        for (text, name, pq) in [
            (r"\Svc\Job latency:p50", "Job latency", "p50"),
            (r"\Svc(*)\Job latency:p99.9", "Job latency", "p99.9"),
            (r"\\h\Svc(a/b#1)\Job latency:p100", "Job latency", "p100"),
            (r"\Svc\a:b:p90", "a:b", "p90"),
            (r"\Svc(x:p1)\Wait:p1", "Wait", "p1"),
        ] {
            let path = p(text);
            assert_eq!(path.to_string(), text, "printed as written");
            assert_eq!(path.percentile(), Some((name, q(pq))), "{text}");
        }
        // Texts after the last `:` that are no percentile, though they start like one.
        for text in [
            r"\Svc\X:p0",
            r"\Svc\X:p101",
            r"\Svc\X:p9.9999",
            r"\Svc\X:p.5",
            r"\Svc\X:p99 ",
        ] {
            assert!(
                matches!(p(text).percentile(), Some(("X", Err(_)))),
                "{text}"
            );
        }
        // No percentile reading at all: no `:`, nothing before it, not `p` and a number, `*`.
        for text in [
            r"\Svc\X",
            r"\Svc\:p99",
            r"\Svc\X:",
            r"\Svc\X:P99",
            r"\Svc\X:pct",
            r"\Svc\Ratio 1:2",
            r"\Svc(*)\*",
        ] {
            assert_eq!(p(text).percentile(), None, "{text}");
        }
    }

    #[test]
    fn display_spells_out_index_zero_when_the_name_ends_in_digits() {
        let path = CounterPath::new("X", "Y").with_instance(InstanceSel::named("job#12"));
        assert_eq!(path.to_string(), r"\X(job#12#0)\Y");
        assert_eq!(p(&path.to_string()), path);
    }

    #[test]
    fn serde_uses_path_text_for_patterns() -> Result<(), serde_json::Error> {
        let path = p(r"\Process(*)\ID Process");
        let json = serde_json::to_value(&path)?;
        assert_eq!(json["counter"], "ID Process");
        assert_eq!(json["instance"]["name"], "*");
        assert_eq!(serde_json::from_value::<CounterPath>(json)?, path);
        Ok(())
    }

    // --- Instance names ----------------------------------------------------------------------

    #[test]
    fn instance_indexes_count_per_parent_and_name() {
        let names = pdh_instance_names(&[
            (None, "a"),
            (None, "b"),
            (None, "a"),
            (Some("p"), "a"),
            (None, "A"),
            (Some("P"), "a"),
            (Some("q"), "a"),
        ]);
        assert_eq!(
            names,
            [
                inst(None, "a", 0),
                inst(None, "b", 0),
                inst(None, "a", 1),
                inst(Some("p"), "a", 0),
                inst(None, "A", 2),
                inst(Some("P"), "a", 1),
                inst(Some("q"), "a", 0),
            ]
        );
        assert!(pdh_instance_names(&[]).is_empty());
    }

    // --- Expansion ---------------------------------------------------------------------------

    /// A service object without instances and a worker object with four instances
    /// (fast-1 twice, under pool "p"; slow under pool "q"; and a parentless _Total).
    fn demo() -> Vec<Available> {
        let mut all = vec![
            Available::new("PrfData Demo Service", "Jobs/sec", None),
            Available::new("PrfData Demo Service", "Jobs Queued", None),
            Available::new("PrfData Demo Service", "Avg. Job Time", None),
        ];
        let workers = pdh_instance_names(&[
            (Some("p"), "fast-1"),
            (Some("p"), "fast-1"),
            (Some("q"), "slow"),
            (None, "_Total"),
        ]);
        for w in workers {
            for counter in ["% Busy", "Jobs Done"] {
                all.push(Available::new(
                    "PrfData Demo Worker",
                    counter,
                    Some(w.clone()),
                ));
            }
        }
        all
    }

    fn expanded(text: &str) -> Vec<String> {
        expand(&p(text), &demo())
            .unwrap_or_else(|e| panic!("{e}"))
            .into_iter()
            .map(|m| m.path.to_string())
            .collect()
    }

    fn near(text: &str) -> Vec<String> {
        match expand(&p(text), &demo()) {
            Err(PathError::NoMatch { near, .. }) => near,
            other => panic!("expected no match for {text}, got {other:?}"),
        }
    }

    #[test]
    fn expands_an_exact_path_case_insensitively() {
        assert_eq!(
            expanded(r"\prfdata demo service\JOBS/SEC"),
            [r"\PrfData Demo Service\Jobs/sec"]
        );
        let found = expand(&p(r"\PrfData Demo Service\Jobs Queued"), &demo()).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].index, 1);
    }

    #[test]
    fn expands_counter_wildcard() {
        assert_eq!(
            expanded(r"\PrfData Demo Service\*"),
            [
                r"\PrfData Demo Service\Jobs/sec",
                r"\PrfData Demo Service\Jobs Queued",
                r"\PrfData Demo Service\Avg. Job Time",
            ]
        );
    }

    #[test]
    fn expands_instance_wildcard() {
        assert_eq!(
            expanded(r"\PrfData Demo Worker(*)\% Busy"),
            [
                r"\PrfData Demo Worker(p/fast-1)\% Busy",
                r"\PrfData Demo Worker(p/fast-1#1)\% Busy",
                r"\PrfData Demo Worker(q/slow)\% Busy",
                r"\PrfData Demo Worker(_Total)\% Busy",
            ]
        );
        assert_eq!(expanded(r"\PrfData Demo Worker(*)\*").len(), 8);
        // `*/…`: any parent that is given, so not _Total.
        assert_eq!(expanded(r"\PrfData Demo Worker(*/*)\Jobs Done").len(), 3);
    }

    #[test]
    fn expands_parent_index_and_machine() {
        assert_eq!(
            expanded(r"\\HOST\PrfData Demo Worker(P/FAST-1#1)\% Busy"),
            [r"\\HOST\PrfData Demo Worker(p/fast-1#1)\% Busy"]
        );
        // Without `#n`, index 0; without a parent, any parent.
        assert_eq!(
            expanded(r"\PrfData Demo Worker(fast-1)\% Busy"),
            [r"\PrfData Demo Worker(p/fast-1)\% Busy"]
        );
        assert_eq!(
            expanded(r"\PrfData Demo Worker(*/slow)\% Busy"),
            [r"\PrfData Demo Worker(q/slow)\% Busy"]
        );
    }

    #[test]
    fn instance_presence_must_agree_with_the_object() {
        // The worker has instances, the service none.
        assert!(expand(&p(r"\PrfData Demo Worker\% Busy"), &demo()).is_err());
        assert!(expand(&p(r"\PrfData Demo Service(*)\Jobs/sec"), &demo()).is_err());
    }

    #[test]
    fn near_matches_for_a_misspelt_counter() {
        // "Jobs/sex" is one edit from "Jobs/sec"; the service's other counters follow.
        let near = near(r"\PrfData Demo Service\Jobs/sex");
        assert_eq!(near[0], r"\PrfData Demo Service\Jobs/sec");
        assert_eq!(near.len(), 3);
    }

    #[test]
    fn near_matches_for_a_misspelt_object() {
        assert_eq!(
            near(r"\PrfData Demo Servce\Jobs/sec")[0],
            r"\PrfData Demo Service\Jobs/sec"
        );
        // A dropped word: containment.
        assert_eq!(
            near(r"\PrfData Demo\Jobs/sec")[0],
            r"\PrfData Demo Service\Jobs/sec"
        );
    }

    #[test]
    fn near_matches_for_a_missing_or_wrong_instance() {
        // No instance given on an object that has them: suggest `(*)`.
        assert_eq!(
            near(r"\PrfData Demo Worker\% Busy")[0],
            r"\PrfData Demo Worker(*)\% Busy"
        );
        // A wrong instance: the nearest instance first, then the others.
        let near_fast = near(r"\PrfData Demo Worker(fast-2)\% Busy");
        assert_eq!(near_fast[0], r"\PrfData Demo Worker(p/fast-1)\% Busy");
        assert!(near_fast.contains(&r"\PrfData Demo Worker(q/slow)\% Busy".to_owned()));
        // An index too many.
        assert_eq!(
            near(r"\PrfData Demo Worker(fast-1#2)\% Busy")[..2],
            [
                r"\PrfData Demo Worker(p/fast-1#1)\% Busy",
                r"\PrfData Demo Worker(p/fast-1)\% Busy"
            ]
        );
        // An instance given on an object without instances.
        assert_eq!(
            near(r"\PrfData Demo Service(x)\Jobs/sec")[0],
            r"\PrfData Demo Service\Jobs/sec"
        );
    }

    #[test]
    fn near_matches_for_a_counter_of_another_object() {
        // "Jobs Done" is a worker counter, not a service one: the worker's is suggested beside
        // the service's own counters of similar names.
        let near = near(r"\PrfData Demo Service\Jobs Done");
        assert!(
            near.contains(&r"\PrfData Demo Worker(*)\Jobs Done".to_owned()),
            "{near:?}"
        );
        assert!(
            near.contains(&r"\PrfData Demo Service\Jobs Queued".to_owned()),
            "{near:?}"
        );
    }

    #[test]
    fn near_matches_keep_wildcards_and_are_bounded() {
        assert_eq!(
            near(r"\PrfData Demo Workr(*)\*"),
            [r"\PrfData Demo Worker(*)\*"]
        );
        let many: Vec<Available> = (0..50)
            .map(|i| Available::new("Obj", format!("Counter {i}"), None))
            .collect();
        let Err(PathError::NoMatch { near, .. }) = expand(&p(r"\Obj\Counter 7x"), &many) else {
            panic!("expected no match");
        };
        assert_eq!(near.len(), MAX_NEAR);
        assert_eq!(near[0], r"\Obj\Counter 7");
    }

    #[test]
    fn nothing_near_says_so() {
        let err = expand(&p(r"\Processor\% Idle Time"), &demo()).unwrap_err();
        assert_eq!(
            err,
            PathError::NoMatch {
                path: r"\Processor\% Idle Time".into(),
                near: vec![]
            }
        );
        assert_eq!(
            err.to_string(),
            r"counter path `\Processor\% Idle Time` matches no available counter; no object of a similar name is available"
        );
        let err = expand(&p(r"\PrfData Demo Service\Jobs/sex"), &demo()).unwrap_err();
        assert!(err.to_string().ends_with(
            r"near matches: \PrfData Demo Service\Jobs/sec, \PrfData Demo Service\Jobs Queued, \PrfData Demo Service\Avg. Job Time"
        ), "{err}");
    }

    // --- Properties --------------------------------------------------------------------------

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 2000, ..Default::default() })]

        /// Any text made of the characters that matter to the syntax (and a two-byte one) either
        /// fails to parse or parses to a path whose `Display` reads back to the same path.
        #[test]
        fn parse_never_panics_and_display_round_trips(
            text in r"\\?[\\()/#*a0-9é ]{0,14}",
        ) {
            if let Ok(path) = parse(&text) {
                let printed = path.to_string();
                proptest::prop_assert_eq!(parse(&printed), Ok(path), "printed as {}", printed);
            }
        }

        /// The same for text shaped like a path (machine, object, instance, counter), so that
        /// most cases parse and the round trip is exercised on parents, indexes and wildcards.
        #[test]
        fn path_shaped_text_round_trips(
            text in r"(\\\\[a.]{1,2})?\\[a*é ]{1,3}(\([\\()/#*a0-9é]{0,8}\))?\\[()/#*a0-9 ]{1,4}",
        ) {
            if let Ok(path) = parse(&text) {
                let printed = path.to_string();
                proptest::prop_assert_eq!(parse(&printed), Ok(path), "printed as {}", printed);
            }
        }
    }
}
