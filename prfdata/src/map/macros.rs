//! `prfdata_map!`: CPrfData's `PRFDATA_MAP_BEGIN` / `OBJ` / `CTR` / `END`, checked at compile time.

/// Declares a performance data map: the app name, its objects and their counters.
///
/// The macro generates a module holding `MAP` (the [`MapDef`](crate::map::MapDef)), `Map` (the
/// marker type for [`PrfData<Map>`](crate::PrfData)), `PrfData` (an alias of `PrfData<Map>`), one
/// unit struct per object and one [`CtrId`](crate::map::CtrId) per counter. The map is validated
/// at compile time ([`validate`](crate::map::validate())): an odd or duplicate offset, a duplicate
/// symbol, a fraction, average, multi or precision counter not followed by its base, a base
/// without its counter, all fail to compile with a message naming the symbol.
///
/// Syntax, every field in this order:
///
/// ```text
/// prfdata_map! {
///     pub mod NAME {
///         app: "AppName",
///         object SYMBOL = OFFSET {
///             name: "...", help: "...",
///             lang "00C" { name: "...", help: "..." },     // zero or more
///             detail: Novice | Advanced | Expert | Wizard,
///             default: COUNTER_SYMBOL | none,
///             instances: none | { max: N, name_len: N },
///             costly: false | true,
///             counters {
///                 SYMBOL = OFFSET: CounterType {   // a type of prfdata::counter_type
///                     name: "...", help: "...",
///                     lang "00C" { name: "...", help: "..." },  // zero or more
///                     detail: Novice, scale: 0,
///                 },
///                 BASE_SYMBOL: BaseType,                    // right after its counter
///             }
///         }
///         // more objects
///     }
/// }
/// ```
///
/// # Examples
///
/// ```
/// prfdata::prfdata_map! {
///     /// The counters of a small web server.
///     pub mod web {
///         app: "MacroDocWeb",
///         object SERVER = 0 {
///             name: "Web Server", help: "The whole server.",
///             lang "00C" { name: "Serveur Web", help: "Le serveur entier." },
///             detail: Novice, default: REQUESTS, instances: none, costly: false,
///             counters {
///                 REQUESTS = 2: CounterCounter {
///                     name: "Requests/sec", help: "Requests completed per second.",
///                     detail: Novice, scale: 0,
///                 },
///                 LATENCY = 4: AverageTimer {
///                     name: "Avg. latency", help: "Seconds per request.",
///                     detail: Advanced, scale: 3,
///                 },
///                 LATENCY_BASE: AverageBase,
///             }
///         }
///         object CONNECTION = 6 {
///             name: "Web Connection", help: "One client connection.",
///             detail: Advanced, default: none,
///             instances: { max: 256, name_len: 64 }, costly: false,
///             counters {
///                 BYTES = 8: BulkCount {
///                     name: "Bytes/sec", help: "Bytes sent per second.",
///                     detail: Advanced, scale: -3,
///                 },
///             }
///         }
///     }
/// }
///
/// assert_eq!(web::MAP.objects.len(), 2);
/// assert_eq!(web::MAP.objects[0].counters[2].symbol, "LATENCY_BASE");
/// assert_eq!(web::MAP.objects[0].texts[1].name, "Serveur Web");
/// assert_eq!(web::BYTES.offset(), 8);
/// ```
#[macro_export]
macro_rules! prfdata_map {
    (
        $(#[$meta:meta])*
        $vis:vis mod $module:ident {
            app: $app:literal $(,)?
            $(
                object $osym:ident = $ooff:literal {
                    name: $oname:literal, help: $ohelp:literal,
                    $( lang $olang:literal { name: $olname:literal, help: $olhelp:literal $(,)? }, )*
                    detail: $odetail:ident,
                    default: $odefault:ident,
                    instances: $oinst:tt,
                    costly: $ocostly:literal $(,)?
                    counters {
                        $(
                            $csym:ident $(= $coff:literal)? : $cty:ident
                            $({
                                name: $cname:literal, help: $chelp:literal,
                                $( lang $clang:literal { name: $clname:literal, help: $clhelp:literal $(,)? }, )*
                                detail: $cdetail:ident,
                                scale: $cscale:literal $(,)?
                            })?
                        ),* $(,)?
                    }
                }
            )*
        }
    ) => {
        $(#[$meta])*
        #[allow(dead_code)]
        $vis mod $module {
            #[allow(unused_imports)]
            use super::*;

            /// The map's definitions.
            pub const MAP: $crate::map::MapDef = $crate::map::MapDef {
                app: $app,
                objects: &[$(
                    $crate::map::ObjectDef {
                        symbol: stringify!($osym),
                        offset: $ooff,
                        texts: &[
                            $crate::map::Text { lang: "009", name: $oname, help: $ohelp },
                            $( $crate::map::Text { lang: $olang, name: $olname, help: $olhelp }, )*
                        ],
                        detail: $crate::map::DetailLevel::$odetail,
                        default_counter: $crate::map::__default_counter(
                            $osym::COUNTERS,
                            stringify!($odefault),
                        ),
                        instances: $crate::__prfdata_instances!($oinst),
                        costly: $ocostly,
                        counters: $osym::COUNTERS,
                    },
                )*],
            };

            const _: () = $crate::map::MapError::assert_valid(&MAP);

            /// The marker type of this map.
            #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
            pub struct Map;

            // SAFETY: `MAP` is this map's definitions, validated at compile time just above.
            unsafe impl $crate::map::PerfDataMap for Map {
                const DEF: &'static $crate::map::MapDef = &MAP;
            }

            /// An activated block of this map.
            pub type PrfData = $crate::PrfData<Map>;

            $(
                #[doc = concat!("The object `", stringify!($osym), "`: ", $oname, ".")]
                #[allow(non_camel_case_types)]
                #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
                pub struct $osym;

                impl $osym {
                    #[doc(hidden)]
                    pub const COUNTERS: &'static [$crate::map::CounterDef] = &[$(
                        $crate::map::CounterDef {
                            symbol: stringify!($csym),
                            offset: $crate::__prfdata_opt!($($coff)?),
                            texts: &[$(
                                $crate::map::Text { lang: "009", name: $cname, help: $chelp },
                                $( $crate::map::Text { lang: $clang, name: $clname, help: $clhelp }, )*
                            )?],
                            detail: $crate::__prfdata_detail!($($cdetail)?),
                            default_scale: $crate::__prfdata_scale!($($cscale)?),
                            counter_type: <$crate::counter_type::$cty as $crate::counter_type::CounterType>::TYPE,
                            text_len: <$crate::counter_type::$cty as $crate::counter_type::CounterType>::TEXT_LEN,
                        },
                    )*];
                }

                // SAFETY: `INDEX` is this object's position in `MAP`, and `Scope` comes from the
                // same `instances:` the object's definition in `MAP` was made from.
                unsafe impl $crate::map::Object for $osym {
                    type Map = Map;
                    type Scope = $crate::__prfdata_scope!($oinst);
                    const INDEX: usize = MAP.object_index(stringify!($osym));
                }

                $(
                    #[doc = concat!("The counter `", stringify!($csym), "` of `", stringify!($osym), "`.")]
                    // SAFETY: `$osym` and `Map` implement `Object` and `PerfDataMap` here.
                    pub const $csym: $crate::map::CtrId<$crate::counter_type::$cty, $osym> = unsafe {
                        $crate::map::CtrId::__from_macro(
                            MAP.objects[<$osym as $crate::map::Object>::INDEX]
                                .counter_index(stringify!($csym)),
                        )
                    };
                )*
            )*
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __prfdata_instances {
    (none) => {
        $crate::map::Instances::None
    };
    ({ max: $max:expr, name_len: $len:expr $(,)? }) => {
        $crate::map::Instances::Max {
            max: $max,
            max_name_len: $len,
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __prfdata_scope {
    (none) => {
        $crate::map::Global
    };
    ({ $($t:tt)* }) => {
        $crate::map::Instanced
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __prfdata_opt {
    () => {
        None
    };
    ($v:literal) => {
        Some($v)
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __prfdata_detail {
    () => {
        $crate::map::DetailLevel::Novice
    };
    ($d:ident) => {
        $crate::map::DetailLevel::$d
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __prfdata_scale {
    () => {
        0
    };
    ($s:literal) => {
        $s
    };
}
