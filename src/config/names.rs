//! The names of the unit enums that records, ids and tables spell as words: one list per
//! enum, in the same spelling as its serde attributes.

/// `names!(Type::method { Variant = "name", ... })`: `Type::ALL` (in this order),
/// `Type::method()` (the name), `Type::parse(name)` and `Display` (the name).
macro_rules! names {
    ($t:ident::$name:ident { $($v:ident = $s:literal),* $(,)? }) => {
        impl $t {
            pub const ALL: &[$t] = &[$($t::$v),*];

            pub fn $name(self) -> &'static str {
                match self {
                    $($t::$v => $s),*
                }
            }

            /// The variant named `s`, as the name method spells it.
            pub fn parse(s: &str) -> Option<$t> {
                Self::ALL.iter().copied().find(|x| x.$name() == s)
            }
        }

        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.pad(self.$name())
            }
        }
    };
}
pub(crate) use names;
