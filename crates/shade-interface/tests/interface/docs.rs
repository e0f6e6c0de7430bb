//! `docs/backends.md` is the rendered support table; bless with `SHADE_BLESS=1`.

#[test]
fn backends_page_is_current() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/backends.md");
    let want = shade_interface::render_support_table();
    if std::env::var_os("SHADE_BLESS").is_some() {
        std::fs::write(path, &want).unwrap();
    }
    let have = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        have == want,
        "docs/backends.md is out of date: run `SHADE_BLESS=1 cargo test -p shade-interface --test interface docs::`"
    );
}
