//! Diagnostics in rustc's shape: `error[CODE]: message`, the user's source location,
//! `= note:` lines for facts and `= help:` for the fix.
//!
//! Every crate's error converts into a [`Diagnostic`] through the [`Coded`] trait; the
//! conversion is `#[track_caller]`, so `?` in a function returning
//! `Result<_, Diagnostic>` records the line of the `?` (an anomaly-mode error carries
//! the line of the operation that produced the NaN instead).
//!
//! ```
//! use shade_autodiff::AdError;
//! use shade_diagnostics::Diagnostic;
//!
//! let e = AdError::ShapeMismatch { op: "add", left: vec![2, 3], right: vec![4] };
//! let d = Diagnostic::from_error(&e).without_location();
//! assert_eq!(
//!     d.render(),
//!     "error[SHADE-E0110]: `add` cannot combine shapes [2, 3] and [4]\n\
//!      \x20 = help: check the operands' shapes; broadcasting aligns trailing axes of size 1 or equal size\n\
//!      \x20 = note: for the long explanation call `shade_diagnostics::explain(\"SHADE-E0110\")`\n"
//! );
//! ```

use shade_autodiff::AdError;
use shade_gnn::GnnError;
use shade_graph::GraphError;
use shade_interface::InterfaceError;
use std::fmt::{self, Write as _};
use std::panic::Location;

/// How serious a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Severity {
    /// The program cannot give a correct result; fix it first.
    Error,
    /// The program runs, but probably not as meant.
    Warning,
}

impl Severity {
    /// `error` or `warning`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// One message for the user: what is wrong, where, the facts that matter, and what to
/// do.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// The stable code, e.g. `SHADE-E0110`.
    pub code: &'static str,
    /// One line, lowercase, without a trailing period.
    pub message: String,
    /// Where in the user's source the problem arose, when known.
    pub location: Option<&'static Location<'static>>,
    /// Facts: shapes, ranges, entries.
    pub notes: Vec<String>,
    /// What to do.
    pub help: Option<String>,
}

/// An error (of any shade crate) that has a code, a one-line message and a help line.
pub trait Coded {
    /// The stable code, e.g. `SHADE-E0110`.
    fn code(&self) -> &'static str;
    /// The one-line message.
    fn message(&self) -> String;
    /// What to do about it.
    fn help(&self) -> String;
    /// Further facts worth a `= note:` line each.
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }
    /// The user's source location, if the error carries one.
    fn location(&self) -> Option<&'static Location<'static>> {
        None
    }
}

impl Coded for AdError {
    fn code(&self) -> &'static str {
        AdError::code(self)
    }
    fn message(&self) -> String {
        match self {
            // The location is the diagnostic's `-->` line: not said twice.
            AdError::TrackedValueRead { what, mode, .. } => format!(
                "{what} was read as plain numbers while recording ({mode}): numbers computed from it carry no derivative"
            ),
            e => e.to_string(),
        }
    }
    fn help(&self) -> String {
        AdError::help(self)
    }
    fn notes(&self) -> Vec<String> {
        match self {
            AdError::NonFiniteForward { inputs, .. } => input_notes(inputs),
            AdError::NonFiniteBackward {
                inputs, adjoint, ..
            } => {
                let mut n = input_notes(inputs);
                n.push(format!("the adjoint it received has {adjoint}"));
                n
            }
            _ => Vec::new(),
        }
    }
    fn location(&self) -> Option<&'static Location<'static>> {
        match self {
            AdError::NonFiniteForward { location, .. }
            | AdError::NonFiniteBackward { location, .. } => *location,
            AdError::TrackedValueRead { location, .. } => Some(*location),
            _ => None,
        }
    }
}

fn input_notes(inputs: &[shade_autodiff::tensor::ValueRange]) -> Vec<String> {
    inputs
        .iter()
        .enumerate()
        .map(|(k, r)| format!("input {k} has {r}"))
        .collect()
}

impl Coded for GraphError {
    fn code(&self) -> &'static str {
        GraphError::code(self)
    }
    fn message(&self) -> String {
        self.to_string()
    }
    fn help(&self) -> String {
        GraphError::help(self)
    }
}

impl Coded for InterfaceError {
    fn code(&self) -> &'static str {
        InterfaceError::code(self)
    }
    fn message(&self) -> String {
        self.to_string()
    }
    fn help(&self) -> String {
        InterfaceError::help(self)
    }
    fn notes(&self) -> Vec<String> {
        match self {
            InterfaceError::Core(e) => Coded::notes(e),
            _ => Vec::new(),
        }
    }
    fn location(&self) -> Option<&'static Location<'static>> {
        match self {
            InterfaceError::Core(e) => Coded::location(e),
            _ => None,
        }
    }
}

impl Coded for GnnError {
    fn code(&self) -> &'static str {
        GnnError::code(self)
    }
    fn message(&self) -> String {
        self.to_string()
    }
    fn help(&self) -> String {
        GnnError::help(self)
    }
    fn notes(&self) -> Vec<String> {
        match self {
            GnnError::Ad(e) => Coded::notes(e),
            GnnError::InLayer {
                path,
                layer,
                source,
            } => {
                let mut n = Coded::notes(&**source);
                if !path.is_empty() {
                    n.insert(0, format!("`{path}` is a {layer}"));
                }
                n
            }
            _ => Vec::new(),
        }
    }
    fn location(&self) -> Option<&'static Location<'static>> {
        match self {
            GnnError::Ad(e) => Coded::location(e),
            GnnError::InLayer { source, .. } => Coded::location(&**source),
            _ => None,
        }
    }
}

impl<E: Coded + ?Sized> Coded for &E {
    fn code(&self) -> &'static str {
        (**self).code()
    }
    fn message(&self) -> String {
        (**self).message()
    }
    fn help(&self) -> String {
        (**self).help()
    }
    fn notes(&self) -> Vec<String> {
        (**self).notes()
    }
    fn location(&self) -> Option<&'static Location<'static>> {
        (**self).location()
    }
}

/// rustc's message style: lowercase first letter (unless the first word is an
/// acronym such as `NaN`), no trailing period.
pub(crate) fn style(msg: &str) -> String {
    let msg = msg.trim().trim_end_matches('.');
    let first_word = msg
        .split(|c: char| !c.is_alphanumeric())
        .next()
        .unwrap_or("");
    let mut cs = first_word.chars();
    match cs.next() {
        Some(a) if a.is_uppercase() && cs.all(|c| c.is_lowercase()) => {
            let mut s: String = a.to_lowercase().collect();
            s.push_str(&msg[a.len_utf8()..]);
            s
        }
        _ => msg.to_string(),
    }
}

impl Diagnostic {
    /// A diagnostic with a code and a message, no location, notes or help.
    pub fn new(severity: Severity, code: &'static str, message: impl Into<String>) -> Self {
        Diagnostic {
            severity,
            code,
            message: style(&message.into()),
            location: None,
            notes: Vec::new(),
            help: None,
        }
    }

    /// An error diagnostic.
    pub fn error(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(Severity::Error, code, message)
    }

    /// A warning diagnostic.
    pub fn warning(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(Severity::Warning, code, message)
    }

    /// The diagnostic of any crate's error. The location is the one the error carries
    /// (anomaly mode), else the caller's.
    #[track_caller]
    pub fn from_error<E: Coded + ?Sized>(e: &E) -> Self {
        let caller = Location::caller();
        Diagnostic {
            severity: Severity::Error,
            code: e.code(),
            message: style(&e.message()),
            location: Some(e.location().unwrap_or(caller)),
            notes: e.notes(),
            help: Some(style(&e.help())),
        }
    }

    /// The diagnostic of a warning the GNN crate kept while a model ran
    /// ([`shade_gnn::GraphCtx::warnings`]), located at the caller (the line that shows
    /// the warnings).
    #[track_caller]
    pub fn from_warning(w: &shade_gnn::GnnWarning) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            code: w.code(),
            message: style(&w.to_string()),
            location: Some(Location::caller()),
            notes: w.notes(),
            help: Some(style(&w.help())),
        }
    }

    /// Adds a `= note:` line.
    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    /// Sets the `= help:` line.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(style(&help.into()));
        self
    }

    /// Sets the location.
    pub fn at(mut self, location: &'static Location<'static>) -> Self {
        self.location = Some(location);
        self
    }

    /// Records the caller's location.
    #[track_caller]
    pub fn here(self) -> Self {
        self.at(Location::caller())
    }

    /// Drops the location (for messages compared across machines).
    pub fn without_location(mut self) -> Self {
        self.location = None;
        self
    }

    /// Whether this is an error (not a warning).
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// The plain-text report:
    ///
    /// ```text
    /// error[SHADE-E0110]: `add` cannot combine shapes [2, 3] and [4]
    ///   --> src/main.rs:12:5
    ///   = note: ...
    ///   = help: ...
    /// ```
    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{}[{}]: {}",
            self.severity.as_str(),
            self.code,
            self.message
        );
        if let Some(l) = self.location {
            let _ = writeln!(s, "  --> {}:{}:{}", l.file(), l.line(), l.column());
        }
        for n in &self.notes {
            let _ = writeln!(s, "  = note: {n}");
        }
        if let Some(h) = &self.help {
            let _ = writeln!(s, "  = help: {h}");
        }
        if crate::catalogue::explain(self.code).is_some() {
            let _ = writeln!(
                s,
                "  = note: for the long explanation call `shade_diagnostics::explain(\"{}\")`",
                self.code
            );
        }
        s
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render())
    }
}

impl std::error::Error for Diagnostic {}

impl From<AdError> for Diagnostic {
    #[track_caller]
    fn from(e: AdError) -> Self {
        Diagnostic::from_error(&e)
    }
}

impl From<GraphError> for Diagnostic {
    #[track_caller]
    fn from(e: GraphError) -> Self {
        Diagnostic::from_error(&e)
    }
}

impl From<InterfaceError> for Diagnostic {
    #[track_caller]
    fn from(e: InterfaceError) -> Self {
        Diagnostic::from_error(&e)
    }
}

impl From<GnnError> for Diagnostic {
    #[track_caller]
    fn from(e: GnnError) -> Self {
        Diagnostic::from_error(&e)
    }
}

/// Turns any coded error of a `Result` into a [`Diagnostic`] at the caller's location.
pub trait Diagnose<T> {
    /// The result, its error rendered as a [`Diagnostic`].
    #[track_caller]
    fn diagnose(self) -> Result<T, Diagnostic>;
}

impl<T, E: Coded> Diagnose<T> for Result<T, E> {
    #[track_caller]
    fn diagnose(self) -> Result<T, Diagnostic> {
        match self {
            Ok(v) => Ok(v),
            Err(e) => Err(Diagnostic::from_error(&e)),
        }
    }
}

/// A list of diagnostics rendered one after another, with rustc's summary line.
pub fn render_all<'d>(ds: impl IntoIterator<Item = &'d Diagnostic>) -> String {
    let mut s = String::new();
    let (mut e, mut w) = (0, 0);
    for d in ds {
        s.push_str(&d.render());
        s.push('\n');
        match d.severity {
            Severity::Error => e += 1,
            Severity::Warning => w += 1,
        }
    }
    let plural = |n: usize, word: &str| {
        if n == 1 {
            format!("1 {word}")
        } else {
            format!("{n} {word}s")
        }
    };
    match (e, w) {
        (0, 0) => s.push_str("no problems found\n"),
        (e, 0) => {
            let _ = writeln!(s, "{} found", plural(e, "error"));
        }
        (0, w) => {
            let _ = writeln!(s, "{} found", plural(w, "warning"));
        }
        (e, w) => {
            let _ = writeln!(
                s,
                "{} and {} found",
                plural(e, "error"),
                plural(w, "warning")
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn style_lowercases_words_not_acronyms() {
        assert_eq!(style("Shapes differ."), "shapes differ");
        assert_eq!(style("NaN in input"), "NaN in input");
        assert_eq!(style("`add` fails"), "`add` fails");
        assert_eq!(style(""), "");
    }

    #[test]
    fn question_mark_records_its_line() {
        fn program() -> Result<(), Diagnostic> {
            Err(AdError::NonScalarReturn { len: 3 })?;
            Ok(())
        }
        let d = program().unwrap_err();
        let l = d.location.unwrap();
        assert!(l.file().ends_with("render.rs"));
        let src = include_str!("render.rs");
        let line = src.lines().nth(l.line() as usize - 1).unwrap();
        assert!(
            line.contains("Err(AdError::NonScalarReturn { len: 3 })?"),
            "{line}"
        );
    }

    #[test]
    fn render_has_every_part() {
        let d = Diagnostic::warning("SHADE-W0599", "Something odd.")
            .with_note("a fact")
            .with_help("Do this.");
        assert_eq!(
            d.render(),
            "warning[SHADE-W0599]: something odd\n  = note: a fact\n  = help: do this\n"
        );
        assert_eq!(
            render_all([&d, &Diagnostic::error("SHADE-E0599", "bad")])
                .lines()
                .last(),
            Some("1 error and 1 warning found")
        );
    }
}
