//! The state spaces a device access can name.

/// Which memory an access is to (PTX's `.shared` and `.global`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Space {
    Shared,
    Global,
}

impl Space {
    /// Its name in a report.
    pub const fn name(self) -> &'static str {
        match self {
            Space::Shared => "shared",
            Space::Global => "global",
        }
    }
}
