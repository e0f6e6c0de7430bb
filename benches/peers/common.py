"""What the peer scripts share: data generators that match shade's `peer_data` (and
`GmmProblem::random` of `benches/src/gradbench/gmm.rs`) bit for bit, the timing loop,
memory readings, and the JSON-lines output read by `cargo xtask bench --peers`.

Each peer script (peer_<name>.py) is run as

    python peer_<name>.py --list                       # the workloads it implements
    python peer_<name>.py --workload W --threads T     # run one, print result lines

and prints one JSON object per line; the schema is in benches/peers/README.md.
`python common.py` runs this module's self-test (generator values pinned from Rust).
"""

import argparse
import json
import math
import os
import sys
import time
import traceback

import numpy as np

CORA = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data", "cora.npz")

# ---------------------------------------------------------------- generators

_K1 = np.uint64(0xD1B54A32D192ED03)
_K2 = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def mix(seed, i):
    """Word i (an array) of stream `seed`: shade's `peer_data::mix`."""
    i = np.asarray(i, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = np.uint64(seed) * _K1 + (i + np.uint64(1)) * _K2
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


def unit_f64(seed, i):
    return (mix(seed, i) >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def sym_f32(seed, i):
    return (mix(seed, i) >> np.uint64(40)).astype(np.float32) / np.float32(1 << 23) - np.float32(1.0)


def random_edges(nodes, edges, seed):
    """shade's `peer_data::random_edges`: (src, dst) as int64 arrays."""
    k = np.arange(edges, dtype=np.uint64)
    src = (mix(seed, 2 * k) % np.uint64(nodes)).astype(np.int64)
    dst = (mix(seed, 2 * k + np.uint64(1)) % np.uint64(nodes)).astype(np.int64)
    return src, dst


def bernoulli_edges(nodes, p, seed):
    """shade's `peer_data::bernoulli_edges` (row-major order)."""
    i, j = np.meshgrid(np.arange(nodes), np.arange(nodes), indexing="ij")
    u = unit_f64(seed, (i * nodes + j).ravel()).reshape(nodes, nodes)
    keep = (i != j) & (u < p)
    return i[keep].astype(np.int64), j[keep].astype(np.int64)


def dense_f32(rows, cols, seed):
    return sym_f32(seed, np.arange(rows * cols, dtype=np.uint64)).reshape(rows, cols)


def csr(rows, cols, per_row, seed):
    """shade's `peer_data::csr`: (indptr, indices, data) with sorted, distinct columns
    per row (a repeated column keeps its first draw)."""
    k = np.arange(rows * per_row, dtype=np.uint64)
    col = (mix(seed, k) % np.uint64(cols)).astype(np.int64)
    row = (k // np.uint64(per_row)).astype(np.int64)
    val = sym_f32(seed + 1, k)
    keys, first = np.unique(row * cols + col, return_index=True)
    r, c = keys // cols, keys % cols
    indptr = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(r, minlength=rows), out=indptr[1:])
    return indptr, c, val[first]


def gmm_problem(d, k, n, seed):
    """`GmmProblem::random(d, k, n)` from `Lcg::new(seed)` (benches/src/gradbench/gmm.rs
    and support.rs): the same generator, the same order. Returns (alpha, mu, q, l, x)
    with mu, q as k × d, l as k × d(d-1)/2 (each component's strictly lower triangle,
    column by column) and x as n × d."""
    a, c, mask = 6364136223846793005, 1442695040888963407, (1 << 64) - 1
    s = (seed * a + c) & mask
    sizes = [(k, -0.5, 0.5), (k * d, 0.0, 1.0), (k * d, -0.5, 0.5),
             (k * d * (d - 1) // 2, -0.5, 0.5), (n * d, 0.0, 1.0)]
    parts = []
    for size, lo, hi in sizes:
        out = np.empty(size)
        for idx in range(size):
            s = (s * a + c) & mask
            out[idx] = lo + (hi - lo) * ((s >> 11) / float(1 << 53))
        parts.append(out)
    alpha, mu, q, l, x = parts
    return alpha, mu.reshape(k, d), q.reshape(k, d), l.reshape(k, d * (d - 1) // 2), x.reshape(n, d)


def gmm_constant(d, k, n, gamma=1.0, m=0):
    """`gmm_constant` of benches/src/gradbench/gmm.rs: the data-independent terms of
    GradBench's GMM log posterior, K (ν d ln(γ/√2) − ln Γ_d(ν/2)) − n d/2 ln 2π."""
    nu = d + m + 1
    lgd = 0.25 * d * (d - 1) * math.log(math.pi)
    lgd += sum(math.lgamma(0.5 * nu + 0.5 * (1 - j)) for j in range(1, d + 1))
    prior = k * (nu * d * math.log(gamma / math.sqrt(2)) - lgd)
    return prior - n * d * 0.5 * math.log(2 * math.pi)


def gmm_objective(alpha, mu, q, l, x, gamma=1.0, m=0):
    """GradBench's GMM log posterior in numpy (the peers' formula, for the self-test)."""
    k, d = mu.shape
    rows, cols = lower_indices(d)
    big_q = np.zeros((k, d, d))
    big_q[:, rows, cols] = l
    big_q += np.stack([np.diag(np.exp(qc)) for qc in q])
    qx = np.einsum("kij,nkj->nki", big_q, x[:, None, :] - mu[None, :, :])
    beta = alpha + q.sum(1) - 0.5 * (qx * qx).sum(2)

    def lse(v, axis=None):
        top = v.max(axis=axis, keepdims=True)
        return (top + np.log(np.exp(v - top).sum(axis=axis, keepdims=True))).squeeze()

    frob = (np.exp(q) ** 2).sum() + (l ** 2).sum()
    return (lse(beta, 1).sum() - x.shape[0] * lse(alpha) - 0.5 * gamma ** 2 * frob
            + m * q.sum() + gmm_constant(d, k, x.shape[0], gamma, m))


def lower_indices(d):
    """(rows, cols) of the strictly lower triangle, column after column (ADBench's and
    GradBench's layout of `l`)."""
    rows, cols = [], []
    for j in range(d):
        for i in range(j + 1, d):
            rows.append(i)
            cols.append(j)
    return np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64)


def gcn_edges(nodes, src, dst):
    """Self-loops added, PyG's `gcn_norm` weights (in-degree), sorted by destination:
    (src, dst, weight) of `Â` with rows = destination."""
    loops = np.arange(nodes, dtype=np.int64)
    src = np.concatenate([src, loops])
    dst = np.concatenate([dst, loops])
    deg = np.bincount(dst, minlength=nodes).astype(np.float32)
    inv = deg ** np.float32(-0.5)
    w = inv[src] * inv[dst]
    order = np.argsort(dst, kind="stable")
    return src[order], dst[order], w[order].astype(np.float32)


def cora():
    """Cora as the shade bench reads it (symmetrised, no self-loops): edges, dense
    features (f32), labels, and 20 training nodes per class (the first ones)."""
    z = np.load(CORA)
    n = int(z["adj_shape"][0])
    indptr, indices = z["adj_indptr"], z["adj_indices"]
    rows = np.repeat(np.arange(n), np.diff(indptr))
    pairs = set()
    for a, b in zip(rows.tolist(), indices.tolist()):
        if a != b:
            pairs.add((a, b))
            pairs.add((b, a))
    pairs = sorted(pairs)
    src = np.array([p[0] for p in pairs], dtype=np.int64)
    dst = np.array([p[1] for p in pairs], dtype=np.int64)
    f = int(z["attr_shape"][1])
    x = np.zeros((n, f), dtype=np.float32)
    ar = np.repeat(np.arange(n), np.diff(z["attr_indptr"]))
    x[ar, z["attr_indices"]] = z["attr_data"]
    y = z["labels"].astype(np.int64)
    train = np.concatenate([np.flatnonzero(y == c)[:20] for c in range(int(y.max()) + 1)])
    return src, dst, x, y, train


# ---------------------------------------------------------------- measurement


def status_mib(field):
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


class Context:
    """One run of one workload by one peer at one thread count."""

    def __init__(self, peer, workload, threads):
        self.peer, self.workload, self.threads = peer, workload, threads
        self.base_rss = status_mib("VmRSS:")
        self.version = ""

    def mark_base(self):
        """Takes the base resident size now: after the library's import, before the
        workload's data are built."""
        self.base_rss = status_mib("VmRSS:")

    def emit(self, **fields):
        rec = {"kind": "result", "workload": self.workload, "peer": self.peer,
               "threads": self.threads, **fields}
        print(json.dumps(rec), flush=True)

    def measure(self, variant, fn, *, min_runs=10, min_seconds=2.0, warmup=2,
                max_runs=2000, memory=False, note=""):
        """Times `fn` (which must finish its computation before returning): `warmup`
        untimed runs, then at least `min_runs` runs and `min_seconds` in all
        (`SHADE_PEERS_QUICK=1`: at most 3 runs and 0.2 s, for checking the pipeline)."""
        if os.environ.get("SHADE_PEERS_QUICK") == "1":
            min_runs, min_seconds, warmup = min(min_runs, 3), min(min_seconds, 0.2), min(warmup, 1)
        for _ in range(warmup):
            fn()
        times, total = [], 0.0
        while (len(times) < min_runs or total < min_seconds) and len(times) < max_runs:
            t0 = time.perf_counter()
            fn()
            dt = time.perf_counter() - t0
            times.append(dt)
            total += dt
        times.sort()
        rec = dict(variant=variant, status="ok", runs=len(times), min_s=times[0],
                   median_s=times[len(times) // 2], max_s=times[-1], version=self.version)
        if memory:
            rec["peak_rss_mib"] = status_mib("VmHWM:")
            rec["base_rss_mib"] = self.base_rss
        if note:
            rec["note"] = note
        self.emit(**rec)

    def not_measured(self, variant, reason):
        self.emit(variant=variant, status="not measured", reason=reason)


def main(peer, workloads):
    """The command line of a peer script: `workloads` maps a name to
    (variants, function(ctx)); the function calls ctx.measure once per variant."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--workload")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    if args.list:
        for name, (variants, _) in workloads.items():
            print(name, " ".join(variants))
        return
    # Before any framework is imported: their thread pools read these.
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    variants, fn = workloads[args.workload]
    ctx = Context(peer, args.workload, args.threads)
    try:
        fn(ctx)
    except Exception as e:  # a failing peer is reported, never given a number
        reason = f"{type(e).__name__}: {e}".replace("\n", " ")[:300]
        for v in variants:
            ctx.not_measured(v, reason)
        traceback.print_exc(file=sys.stderr)


def _self_test():
    # Values pinned in shade's peer_data tests.
    assert int(mix(0, 0)) == 0xE220A8397B1DCDAF
    assert int(mix(123, 456)) == 0x6BFC2E5C67FFFA1B
    assert int(mix(7, 3)) % 1000 == 499
    s, d = bernoulli_edges(100, 0.2, 1)
    assert 1800 <= len(s) < 2150 and (s != d).all()
    ip, ind, _ = csr(50, 20, 10, 3)
    for r in range(50):
        row = ind[ip[r]:ip[r + 1]]
        assert (np.diff(row) > 0).all() and 1 <= len(row) <= 10
    # Pinned in benches/src/gradbench/gmm.rs (`the_peers_problem_is_pinned`).
    value = gmm_objective(*gmm_problem(3, 2, 5, 1))
    assert abs(value - -29.890289758411686) < 1e-12, value
    print("common.py self-test ok")


if __name__ == "__main__":
    _self_test()
