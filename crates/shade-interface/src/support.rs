//! The backend × operator support table.

/// Rows of the support table.
pub fn support_table() -> Vec<(String, Vec<crate::Support>)> {
    Vec::new()
}

/// The support table as markdown.
pub fn render_support_table() -> String {
    String::new()
}
