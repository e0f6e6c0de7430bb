//! What the peer-comparison benches share: the thread count they run with (so that a
//! bench id names it), the peak memory of the process, and the JSON lines written where
//! `cargo xtask bench --peers` reads them.

use std::io::Write as _;

/// The number of threads of rayon's global pool (`RAYON_NUM_THREADS` if set, else
/// one per CPU): the bench parameter `t<threads>` of every `peers/...` bench.
pub fn threads() -> usize {
    rayon::current_num_threads()
}

/// The bench parameter naming the thread count, e.g. `t2`.
pub fn threads_label() -> String {
    format!("t{}", threads())
}

/// A field of `/proc/self/status` in KiB (`VmHWM:` is the peak resident set size,
/// `VmRSS:` the current one); `None` where the file does not exist.
pub fn status_kib(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Appends one JSON line with this process's peak and base resident set size (MiB) for
/// `workload`/`variant` to the file named by `SHADE_PEERS_OUT` (set by
/// `cargo xtask bench --peers`), and prints it on stderr in any case. `base_kib` is the
/// resident size before the workload's data were built.
pub fn report_memory(workload: &str, variant: &str, base_kib: u64) {
    let peak = status_kib("VmHWM:").unwrap_or(0);
    append_line(&format!(
        "{{\"kind\":\"memory\",\"workload\":\"{workload}\",\"variant\":\"{variant}\",\
         \"peer\":\"shade\",\"threads\":{},\"peak_rss_mib\":{:.1},\"base_rss_mib\":{:.1}}}",
        threads(),
        peak as f64 / 1024.0,
        base_kib as f64 / 1024.0
    ));
}

/// Prints one JSON line (the schema of `benches/peers/README.md`) on stderr and appends
/// it to the file named by `SHADE_PEERS_OUT`, where `cargo xtask bench --peers` reads
/// shade's lines.
pub fn append_line(line: &str) {
    eprintln!("{line}");
    if let Some(path) = std::env::var_os("SHADE_PEERS_OUT") {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path);
        match file {
            Ok(mut f) => {
                let _ = writeln!(f, "{line}");
            }
            Err(e) => eprintln!("warning: cannot append to {}: {e}", path.to_string_lossy()),
        }
    }
}
