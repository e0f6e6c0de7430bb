//! Integration with miette (the `miette` feature): a [`Diagnostic`] as a report that
//! implements `miette::Diagnostic`, for programs that already render errors with
//! miette.
//!
//! The message is the report's `Display`; code, severity and help map to miette's;
//! the source location and the notes go into the help text (miette's labels need the
//! source text, which a library does not have).

use crate::render::{Diagnostic, Severity};
use std::fmt;

/// A [`Diagnostic`] as a `miette::Diagnostic` (made by [`Diagnostic::to_miette`]).
#[derive(Clone, Debug, PartialEq)]
pub struct MietteReport(pub Diagnostic);

impl Diagnostic {
    /// This diagnostic as a miette report.
    pub fn to_miette(&self) -> MietteReport {
        MietteReport(self.clone())
    }
}

impl fmt::Display for MietteReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.message)
    }
}

impl std::error::Error for MietteReport {}

impl miette::Diagnostic for MietteReport {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(self.0.code))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.0.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
        })
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        let d = &self.0;
        let mut lines = Vec::new();
        if let Some(l) = d.location {
            lines.push(format!("at {}:{}:{}", l.file(), l.line(), l.column()));
        }
        lines.extend(d.notes.iter().map(|n| format!("note: {n}")));
        if let Some(h) = &d.help {
            lines.push(h.clone());
        }
        if lines.is_empty() {
            None
        } else {
            Some(Box::new(lines.join("\n")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use miette::Diagnostic as _;

    #[test]
    fn maps_code_severity_and_help() {
        let d = Diagnostic::warning("SHADE-W0502", "shadow not zeroed")
            .with_note("fact")
            .with_help("zero it");
        let m = d.to_miette();
        assert_eq!(m.to_string(), "shadow not zeroed");
        assert_eq!(m.code().unwrap().to_string(), "SHADE-W0502");
        assert_eq!(m.severity(), Some(miette::Severity::Warning));
        assert_eq!(m.help().unwrap().to_string(), "note: fact\nzero it");
    }
}
