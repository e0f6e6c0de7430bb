//! The data-parallel scenarios of `distributed.rs` over MPI: each test starts
//! `mpirun -np 2 --allow-run-as-root --oversubscribe` on this test binary, filtered to
//! itself, with `SHADE_MPI_SCENARIO` set; under mpirun the same test is a rank and runs
//! the scenario. Needs `mpirun` on the PATH (Debian's `openmpi-bin`; `.ci/run`
//! installs it), as the `mpi` feature needs the library to build.

use super::distributed::{Fault, assert_params_close, run_rank, run_single};
use shade_gnn::distributed::{ABORT_EXIT_CODE, MpiCollective};
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SCENARIO: &str = "SHADE_MPI_SCENARIO";

/// What mpirun reported: exit code and the ranks' output.
struct Job {
    code: Option<i32>,
    out: String,
}

/// Runs this binary's test `test` on two ranks with `scenario`; a job that does not
/// end within 90 s is a hang (killed, and the test fails).
fn mpirun(test: &str, scenario: &str, extra: &[(&str, String)]) -> Job {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new("mpirun");
    cmd.args(["-np", "2", "--allow-run-as-root", "--oversubscribe"])
        .args(["-x", SCENARIO, "-x", "SHADE_MPI_DIR"])
        .arg(&exe)
        .args(["--exact", test, "--test-threads=1", "--nocapture"])
        .env(SCENARIO, scenario)
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in extra {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap_or_else(|e| {
        panic!("cannot start `mpirun` ({e}): install OpenMPI (Debian: openmpi-bin libopenmpi-dev)")
    });
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            panic!("the MPI job `{scenario}` hung for 90 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    Job {
        code: status.code(),
        out,
    }
}

/// This process's rank of the job, if it is one.
fn scenario() -> Option<String> {
    std::env::var(SCENARIO).ok()
}

/// What "gone" means over MPI: the process is killed outright.
fn kill_self() {
    let _ = Command::new("kill")
        .args(["-9", &std::process::id().to_string()])
        .status();
    std::thread::sleep(Duration::from_secs(60));
}

/// The rank's side of the failure scenarios: prints its outcome, exits non-zero on an
/// error (as a program would).
fn rank_of(fault: Fault) {
    let comm = MpiCollective::init().unwrap();
    let rank = shade_gnn::distributed::Collective::rank(&comm);
    match run_rank(comm, 0..1, fault, None, None, kill_self) {
        Ok(_) => println!("[rank {rank}] finished"),
        Err(e) => {
            println!("[rank {rank}] error[{}]: {e}", e.code());
            // The first rank to exit non-zero makes mpirun stop the others at once: give
            // every rank (all past the same failed exchange) time to print its line.
            std::thread::sleep(Duration::from_secs(2));
            std::process::exit(1);
        }
    }
}

#[test]
fn mpi_two_ranks_equal_one_process_on_the_union_batch() {
    if scenario().is_some() {
        let comm = MpiCollective::init().unwrap();
        let rank = shade_gnn::distributed::Collective::rank(&comm);
        let params = run_rank(comm, 0..2, Fault::None, None, None, || {}).unwrap();
        // Every rank compares with one process on the union batch (10 Adam steps).
        assert_params_close(&params, &run_single(2, 0..2), 1e-6);
        println!("[rank {rank}] equals one process");
        return;
    }
    let job = mpirun(
        "distributed_mpi::mpi_two_ranks_equal_one_process_on_the_union_batch",
        "equal",
        &[],
    );
    assert_eq!(job.code, Some(0), "{}", job.out);
    for r in 0..2 {
        assert!(
            job.out.contains(&format!("[rank {r}] equals one process")),
            "{}",
            job.out
        );
    }
}

#[test]
fn mpi_a_failing_rank_stops_every_rank_naming_it() {
    match scenario().as_deref() {
        Some("nan") => return rank_of(Fault::NanLoss),
        Some("shard") => return rank_of(Fault::BadShard),
        Some("hang") => return rank_of(Fault::Hang),
        Some("killed") => return rank_of(Fault::Killed),
        _ => {}
    }
    let test = "distributed_mpi::mpi_a_failing_rank_stops_every_rank_naming_it";
    // A NaN loss and a bad shard: every rank returns the coded error naming rank 1.
    for (scenario, cause) in [
        (
            "nan",
            "at step 2: error[SHADE-E0406]: the loss is not finite",
        ),
        (
            "shard",
            "at step 0: error[SHADE-E0405]: the node labels `label`",
        ),
    ] {
        let job = mpirun(test, scenario, &[]);
        assert_ne!(job.code, Some(0), "{}", job.out);
        for r in 0..2 {
            let line = format!("[rank {r}] error[SHADE-E0416]: rank 1 of 2 failed {cause}");
            assert!(
                job.out.contains(&line),
                "{scenario}: no `{line}` in\n{}",
                job.out
            );
        }
    }
    // A rank that hangs: rank 0 names it after the timeout and aborts the job; mpirun
    // then stops rank 1 (SIGTERM), which says so.
    let job = mpirun(test, "hang", &[]);
    assert_eq!(job.code, Some(ABORT_EXIT_CODE), "{}", job.out);
    for line in [
        "error[SHADE-E0416]: rank 1 of 2 failed at step 2: it did not report within 1.5 s",
        "error[SHADE-E0416]: a rank of 2 failed at step 2: the launcher stopped the job \
         (SIGTERM) while this rank ",
        "  = note: seen by rank 1 of 2; mpirun stops every rank with SIGTERM",
    ] {
        assert!(job.out.contains(line), "no `{line}` in\n{}", job.out);
    }
    // A rank that is killed: mpirun stops the others with SIGTERM (a second later), and
    // rank 0, waiting for its report, names it. The timeout is 30 s here: what ends
    // the wait is the launcher's stop, not the timeout.
    let t = Instant::now();
    let job = mpirun(test, "killed", &[]);
    let took = t.elapsed();
    assert_ne!(job.code, Some(0), "{}", job.out);
    let line = "error[SHADE-E0416]: rank 1 of 2 failed at step 2: it had not reported when \
                the launcher stopped the job (SIGTERM)\n  = note: seen by rank 0 of 2; ";
    assert!(job.out.contains(line), "no `{line}` in\n{}", job.out);
    assert!(took < Duration::from_secs(20), "{took:?}\n{}", job.out);
}

#[test]
fn mpi_a_checkpoint_from_rank_0_continues_with_identical_parameters() {
    let test = "distributed_mpi::mpi_a_checkpoint_from_rank_0_continues_with_identical_parameters";
    if let Some(s) = scenario() {
        let dir = std::path::PathBuf::from(std::env::var("SHADE_MPI_DIR").unwrap());
        let ckpt = dir.join("job.safetensors");
        let comm = MpiCollective::init().unwrap();
        let rank = shade_gnn::distributed::Collective::rank(&comm);
        let (epochs, resume, save) = match s.as_str() {
            "straight" => (0..2, None, None),
            "first" => (0..1, None, Some(ckpt.as_path())),
            _ => (1..2, Some(ckpt.as_path()), None),
        };
        let params = run_rank(comm, epochs, Fault::None, resume, save, || {}).unwrap();
        let out = dir.join(format!("{s}-rank{rank}.safetensors"));
        shade_gnn::save_safetensors(&params, &out).unwrap();
        return;
    }
    let dir = std::env::temp_dir().join(format!("shade-mpi-ckpt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let env = [("SHADE_MPI_DIR", dir.display().to_string())];
    for s in ["straight", "first", "resume"] {
        let job = mpirun(test, s, &env);
        assert_eq!(job.code, Some(0), "{s}: {}", job.out);
    }
    let read = |name: &str| std::fs::read(dir.join(name)).unwrap();
    for r in 0..2 {
        assert_eq!(
            read(&format!("straight-rank{r}.safetensors")),
            read(&format!("resume-rank{r}.safetensors")),
            "rank {r}: the resumed job's parameters differ"
        );
    }
    assert_eq!(
        read("resume-rank0.safetensors"),
        read("resume-rank1.safetensors")
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
