//! What a rank says when the launcher stops the job: a `SIGTERM` handler that prints
//! `SHADE-E0416`, naming the lost rank where this rank can know it.
//!
//! When a rank of an OpenMPI job ends abnormally (killed, crashed, aborted), `mpirun`
//! stops the others: `SIGCONT` at once, `SIGTERM` after `odls_base_sigkill_timeout`
//! (1 s by default), `SIGKILL` after as long again (measured with Open MPI 4.1.4,
//! Debian's). A survivor may be anywhere then: waiting in an exchange, or computing
//! its gradient for seconds, so the message cannot wait for the main thread to reach a
//! polling loop. The main thread therefore publishes what it is doing (the phase of
//! the exchange, the step, the lowest rank still missing) in atomics, and the handler
//! formats the error from them into a buffer on its stack (`core::fmt`, which neither
//! allocates nor locks), writes it to stderr with `write(2)`, restores the default
//! action and raises `SIGTERM` again, so the rank ends as the launcher asked, within
//! its grace period.
//!
//! Who is named: rank 0 collects the status reports, so when it is stopped while
//! waiting for them it names the lowest rank that had not reported (the one that
//! ended, unless a rank ended after reporting while another was still computing: the
//! message says what was seen, "it had not reported", and points to the launcher's
//! message). Every other rank, and rank 0 outside the status exchange, says that the
//! launcher stopped the job while it was at a given point, and that rank 0's log and
//! the launcher's message name the rank. A rank that has printed or returned the
//! failure itself (a timeout it noticed, a failed rank's report) is quiet: the handler
//! then only ends the process.

use std::fmt;
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};

/// What the main thread is doing, as the handler reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum Phase {
    /// This rank reports (or has reported) the failure itself: say nothing more.
    Quiet = 0,
    /// Between exchanges: computing a gradient, preparing a batch, anything else.
    Between = 1,
    /// Rank 0, collecting the status reports; `PENDING` is the lowest rank missing.
    Reports = 2,
    /// Rank 0, handing the reports out; `PENDING` is the lowest rank not served.
    Answers = 3,
    /// A rank other than 0, in the status exchange with rank 0.
    ToRoot = 4,
    /// The gradient sum (an allreduce: it cannot tell who is missing).
    Sum = 5,
    /// A broadcast from rank `PENDING`.
    Broadcast = 6,
}

impl Phase {
    fn from_u8(v: u8) -> Phase {
        match v {
            1 => Phase::Between,
            2 => Phase::Reports,
            3 => Phase::Answers,
            4 => Phase::ToRoot,
            5 => Phase::Sum,
            6 => Phase::Broadcast,
            _ => Phase::Quiet,
        }
    }
}

static PHASE: AtomicU8 = AtomicU8::new(Phase::Quiet as u8);
static STEP: AtomicU64 = AtomicU64::new(0);
static PENDING: AtomicUsize = AtomicUsize::new(0);
static MISSING: AtomicUsize = AtomicUsize::new(0);
static RANK: AtomicUsize = AtomicUsize::new(0);
static WORLD: AtomicUsize = AtomicUsize::new(1);

/// The main thread enters `phase` of `step`.
pub(super) fn enter(phase: Phase, step: u64) {
    STEP.store(step, Ordering::Relaxed);
    MISSING.store(0, Ordering::Relaxed);
    PHASE.store(phase as u8, Ordering::Release);
}

/// In [`Phase::Reports`] or [`Phase::Answers`]: `missing` ranks are still pending,
/// the lowest of them `rank`. In [`Phase::Broadcast`]: the root.
pub(super) fn pending(rank: usize, missing: usize) {
    PENDING.store(rank, Ordering::Relaxed);
    MISSING.store(missing, Ordering::Release);
}

/// This rank reports the failure itself (or has had it reported to it): the handler
/// stays silent until the next [`enter`].
pub(super) fn quiet() {
    PHASE.store(Phase::Quiet as u8, Ordering::Release);
}

/// A snapshot of what the main thread published.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Seen {
    pub(super) phase: Phase,
    pub(super) step: u64,
    pub(super) rank: usize,
    pub(super) world: usize,
    /// The lowest pending rank (or the broadcast's root).
    pub(super) pending: usize,
    /// How many ranks are pending (0: not known yet).
    pub(super) missing: usize,
}

const WHY: &str = "the launcher stopped the job (SIGTERM)";

/// The error a rank prints when the launcher stops the job while it is at `s`
/// (nothing in [`Phase::Quiet`]). Rustc-shaped, ending with a newline.
pub(super) fn message(w: &mut impl fmt::Write, s: &Seen) -> fmt::Result {
    let (step, world, me) = (s.step, s.world, s.rank);
    let named = match s.phase {
        Phase::Quiet => return Ok(()),
        Phase::Reports if s.missing > 0 => Some("had not reported"),
        Phase::Answers if s.missing > 0 => Some("had not taken the reports"),
        _ => None,
    };
    if let Some(what) = named {
        write!(
            w,
            "error[SHADE-E0416]: rank {} of {world} failed at step {step}: it {what} when {WHY}",
            s.pending
        )?;
        match s.missing {
            0 | 1 => {}
            2 => write!(w, "; nor had 1 other rank")?,
            m => write!(w, "; nor had {} other ranks", m - 1)?,
        }
    } else {
        write!(
            w,
            "error[SHADE-E0416]: a rank of {world} failed at step {step}: {WHY} while this rank "
        )?;
        match s.phase {
            Phase::ToRoot => w.write_str("was in the status exchange with rank 0")?,
            Phase::Reports | Phase::Answers => w.write_str("was in the status exchange")?,
            Phase::Sum => w.write_str("was in the gradient sum")?,
            Phase::Broadcast => write!(w, "waited for rank {}'s broadcast", s.pending)?,
            _ => w.write_str("was between exchanges (computing)")?,
        }
    }
    write!(
        w,
        "\n  = note: seen by rank {me} of {world}; mpirun stops every rank with SIGTERM when one \
         ends (killed, crashed or aborted), or when the job is cancelled\n  = help: "
    )?;
    if named.is_some() {
        write!(
            w,
            "see rank {}'s log and the launcher's message for why it ended",
            s.pending
        )?;
    } else {
        w.write_str(
            "rank 0's log names the rank missing from the status exchange, and the launcher's \
             message the rank that ended",
        )?;
    }
    w.write_str("; then restart the job from the last checkpoint\n")
}

/// A message buffer on the stack: formatting into it neither allocates nor locks, so
/// it may be done in a signal handler. What does not fit is cut.
struct StackBuf {
    bytes: [u8; 1024],
    len: usize,
}

impl fmt::Write for StackBuf {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = self.bytes.len() - self.len;
        let n = s.len().min(room);
        self.bytes[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        if n < s.len() { Err(fmt::Error) } else { Ok(()) }
    }
}

/// The `SIGTERM` handler: the message for what the main thread published, then the
/// default action (the process ends by `SIGTERM`, as the launcher asked).
#[allow(unsafe_code)]
extern "C" fn on_sigterm(_sig: libc::c_int) {
    let phase = Phase::from_u8(PHASE.swap(Phase::Quiet as u8, Ordering::AcqRel));
    let seen = Seen {
        phase,
        step: STEP.load(Ordering::Relaxed),
        rank: RANK.load(Ordering::Relaxed),
        world: WORLD.load(Ordering::Relaxed),
        missing: MISSING.load(Ordering::Acquire),
        pending: PENDING.load(Ordering::Relaxed),
    };
    let mut buf = StackBuf {
        bytes: [0; 1024],
        len: 0,
    };
    // A message cut to the buffer is still written.
    let _ = message(&mut buf, &seen);
    let mut at = 0;
    while at < buf.len {
        // SAFETY: `write(2)` is async-signal-safe; the pointer and length are within
        // `buf`, which lives on this stack frame.
        let n = unsafe { libc::write(2, buf.bytes[at..].as_ptr().cast(), buf.len - at) };
        if n <= 0 {
            break; // stderr closed or failing: nothing better to do in a handler
        }
        at += n as usize;
    }
    // SAFETY: `signal` and `raise` are async-signal-safe. SIGTERM is blocked while
    // this handler runs, so the raised one is delivered, with the default action,
    // when the handler returns.
    unsafe {
        libc::signal(libc::SIGTERM, libc::SIG_DFL);
        libc::raise(libc::SIGTERM);
    }
}

/// The installed handler; dropping it restores the default action.
#[derive(Debug)]
pub(super) struct Watch(());

impl Watch {
    /// Installs the handler for rank `rank` of `world`, unless `SIGTERM` already has a
    /// disposition other than the default (a program or launcher that handles or
    /// ignores it keeps it; `None` then).
    #[allow(unsafe_code)]
    pub(super) fn install(rank: usize, world: usize) -> std::io::Result<Option<Watch>> {
        RANK.store(rank, Ordering::Relaxed);
        WORLD.store(world, Ordering::Relaxed);
        enter(Phase::Between, 0);
        // SAFETY: a zeroed `sigaction` is a valid value (empty mask, no flags); the
        // handler only reads atomics, formats on its stack and calls async-signal-safe
        // functions.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGTERM, std::ptr::null(), &mut old) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if old.sa_sigaction != libc::SIG_DFL {
                quiet();
                return Ok(None);
            }
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_sigterm as extern "C" fn(libc::c_int) as libc::sighandler_t;
            libc::sigemptyset(&mut act.sa_mask);
            if libc::sigaction(libc::SIGTERM, &act, std::ptr::null_mut()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(Some(Watch(())))
    }
}

impl Drop for Watch {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        quiet();
        // SAFETY: restoring the default action of SIGTERM has no preconditions.
        unsafe {
            libc::signal(libc::SIGTERM, libc::SIG_DFL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt::Write as _;

    fn text(s: Seen) -> String {
        let mut out = String::new();
        message(&mut out, &s).unwrap();
        out
    }

    fn seen(phase: Phase) -> Seen {
        Seen {
            phase,
            step: 2,
            rank: 0,
            world: 2,
            pending: 1,
            missing: 1,
        }
    }

    #[test]
    fn rank_0_names_the_rank_that_had_not_reported() {
        assert_eq!(
            text(seen(Phase::Reports)),
            "error[SHADE-E0416]: rank 1 of 2 failed at step 2: it had not reported when the \
             launcher stopped the job (SIGTERM)\n  \
             = note: seen by rank 0 of 2; mpirun stops every rank with SIGTERM when one ends \
             (killed, crashed or aborted), or when the job is cancelled\n  \
             = help: see rank 1's log and the launcher's message for why it ended; then \
             restart the job from the last checkpoint\n"
        );
        let three = Seen {
            world: 8,
            pending: 3,
            missing: 3,
            ..seen(Phase::Answers)
        };
        assert!(text(three).starts_with(
            "error[SHADE-E0416]: rank 3 of 8 failed at step 2: it had not taken the reports \
             when the launcher stopped the job (SIGTERM); nor had 2 other ranks\n"
        ));
        let two = Seen {
            missing: 2,
            ..seen(Phase::Reports)
        };
        assert!(text(two).contains("(SIGTERM); nor had 1 other rank\n"));
    }

    #[test]
    fn other_ranks_say_where_they_were() {
        let at = |phase, pending| {
            let t = text(Seen {
                rank: 1,
                pending,
                missing: 0,
                ..seen(phase)
            });
            let (head, rest) = t.split_once('\n').unwrap();
            assert!(rest.contains("= note: seen by rank 1 of 2;"), "{rest}");
            assert!(
                rest.contains("= help: rank 0's log names the rank"),
                "{rest}"
            );
            head.trim_start_matches(
                "error[SHADE-E0416]: a rank of 2 failed at step 2: the launcher stopped the \
                 job (SIGTERM) while this rank ",
            )
            .to_string()
        };
        assert_eq!(
            at(Phase::ToRoot, 0),
            "was in the status exchange with rank 0"
        );
        assert_eq!(at(Phase::Sum, 0), "was in the gradient sum");
        assert_eq!(at(Phase::Broadcast, 0), "waited for rank 0's broadcast");
        assert_eq!(at(Phase::Between, 0), "was between exchanges (computing)");
        // Rank 0 before it knows who is missing says no more than the others.
        assert_eq!(at(Phase::Reports, 1), "was in the status exchange");
    }

    #[test]
    fn a_quiet_rank_says_nothing() {
        assert_eq!(text(seen(Phase::Quiet)), "");
        for v in 0..=6u8 {
            assert_eq!(Phase::from_u8(v) as u8, v);
        }
        assert_eq!(Phase::from_u8(7), Phase::Quiet);
    }

    #[test]
    fn the_stack_buffer_cuts_what_does_not_fit() {
        let mut b = StackBuf {
            bytes: [0; 1024],
            len: 0,
        };
        let long = Seen {
            step: u64::MAX,
            rank: usize::MAX,
            world: usize::MAX,
            pending: usize::MAX,
            missing: usize::MAX,
            phase: Phase::Reports,
        };
        // The longest message fits.
        message(&mut b, &long).unwrap();
        assert_eq!(&b.bytes[..b.len], text(long).as_bytes());
        assert!(b.write_str(&"x".repeat(2000)).is_err());
        assert_eq!(b.len, 1024);
    }
}
