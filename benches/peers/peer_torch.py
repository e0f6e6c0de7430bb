"""PyTorch peers (no PyG): the policy model with a dense normalised adjacency, the
synthetic GCN steps with a CSR adjacency, CSR x dense (torch.sparse), and the GMM
objective and gradient. Threads: torch.set_num_threads(T) (and OMP_NUM_THREADS)."""

import common


def torch_setup(ctx):
    import torch

    torch.set_num_threads(ctx.threads)
    ctx.version = f"torch {torch.__version__}"
    ctx.mark_base()
    return torch


def policy(ctx):
    torch = torch_setup(ctx)
    n = 100
    src, dst = common.bernoulli_edges(n, 0.2, 1)
    s, d, w = common.gcn_edges(n, src, dst)
    adj = torch.zeros(n, n)
    adj.index_put_((torch.from_numpy(d), torch.from_numpy(s)), torch.from_numpy(w), accumulate=True)
    x = torch.from_numpy(common.dense_f32(n, 2, 2))
    torch.manual_seed(0)
    lin1 = torch.nn.Linear(2, 50, bias=False)
    lin2 = torch.nn.Linear(50, 50, bias=False)
    b1, b2 = torch.nn.Parameter(torch.zeros(50)), torch.nn.Parameter(torch.zeros(50))
    out = torch.nn.Linear(50, 100)
    params = [*lin1.parameters(), *lin2.parameters(), b1, b2, *out.parameters()]

    def gradient():
        for p in params:
            p.grad = None
        h = torch.tanh(adj @ lin1(x) + b1)
        h = torch.relu(adj @ lin2(h) + b2)
        loss = torch.sigmoid(out(h)).mean()
        loss.backward()

    ctx.measure("gradient", gradient, note="dense 100 x 100 normalised adjacency")


def synth_gcn(nodes, edges):
    def run(ctx):
        torch = torch_setup(ctx)
        src, dst = common.random_edges(nodes, edges, 11)
        s, d, w = common.gcn_edges(nodes, src, dst)
        crow = torch.zeros(nodes + 1, dtype=torch.int64)
        crow[1:] = torch.cumsum(torch.bincount(torch.from_numpy(d), minlength=nodes), 0)
        adj = torch.sparse_csr_tensor(crow, torch.from_numpy(s), torch.from_numpy(w), (nodes, nodes))
        x = torch.from_numpy(common.dense_f32(nodes, 128, 12))
        y = torch.from_numpy((common.mix(13, common.np.arange(nodes)) % common.np.uint64(16)).astype("int64"))
        torch.manual_seed(0)
        lin1 = torch.nn.Linear(128, 64, bias=False)
        lin2 = torch.nn.Linear(64, 16, bias=False)
        b1, b2 = torch.nn.Parameter(torch.zeros(64)), torch.nn.Parameter(torch.zeros(16))
        params = [*lin1.parameters(), *lin2.parameters(), b1, b2]
        opt = torch.optim.Adam(params, lr=0.01)

        def step():
            opt.zero_grad()
            h = torch.relu(adj @ lin1(x) + b1)
            logits = adj @ lin2(h) + b2
            torch.nn.functional.cross_entropy(logits, y).backward()
            opt.step()

        ctx.measure("step", step, min_runs=3 if nodes < 500_000 else 2, min_seconds=0.0, warmup=1, memory=True,
                    note="torch.sparse_csr_tensor adjacency")

    return run


def spmm(ctx):
    torch = torch_setup(ctx)
    indptr, indices, data = common.csr(100_000, 100_000, 10, 42)
    a = torch.sparse_csr_tensor(torch.from_numpy(indptr), torch.from_numpy(indices),
                                torch.from_numpy(data), (100_000, 100_000))
    x = torch.from_numpy(common.dense_f32(100_000, 64, 7))
    out = torch.empty(100_000, 64)

    def forward():
        torch.mm(a, x, out=out)

    ctx.measure("forward", forward, min_runs=20, note="torch.mm(sparse_csr, dense)")


def gmm(d, k, n):
    def run(ctx):
        torch = torch_setup(ctx)
        torch.set_default_dtype(torch.float64)
        alpha, mu, q, l, x = common.gmm_problem(d, k, n, 1)
        constant = common.gmm_constant(d, k, n)
        rows, cols = common.lower_indices(d)
        rows, cols = torch.from_numpy(rows), torch.from_numpy(cols)
        x = torch.from_numpy(x)

        def objective(alpha, mu, q, l):
            # GradBench's log posterior (gamma = 1, m = 0), vectorised over points.
            big_q = torch.diag_embed(torch.exp(q))
            big_q = big_q.index_put((torch.arange(k)[:, None], rows[None, :], cols[None, :]), l)
            xc = x[:, None, :] - mu[None, :, :]
            qx = torch.einsum("kij,nkj->nki", big_q, xc)
            beta = alpha + q.sum(1) - 0.5 * (qx * qx).sum(2)
            slse = torch.logsumexp(beta, 1).sum()
            frob = (torch.exp(q) ** 2).sum() + (l ** 2).sum()
            return slse - n * torch.logsumexp(alpha, 0) - 0.5 * frob + constant

        p = [torch.tensor(v, requires_grad=True) for v in (alpha, mu, q, l)]
        value = float(objective(*p).detach())

        def obj():
            with torch.no_grad():
                objective(*p)

        def grad():
            for t in p:
                t.grad = None
            objective(*p).backward()

        big = d * k * n > 10_000_000
        opts = dict(min_runs=2, min_seconds=0.0, warmup=1) if big else {}
        ctx.measure("objective", obj, note=f"value {value:.12e}", **opts)
        ctx.measure("gradient", grad, **opts)

    return run


WORKLOADS = {
    "policy": (["gradient"], policy),
    "synth_gcn_100k": (["step"], synth_gcn(100_000, 1_000_000)),
    "synth_gcn_1m": (["step"], synth_gcn(1_000_000, 10_000_000)),
    "spmm": (["forward"], spmm),
    "gmm_d10_k25_n1000": (["objective", "gradient"], gmm(10, 25, 1000)),
    "gmm_d64_k200_n10000": (["objective", "gradient"], gmm(64, 200, 10_000)),
}

if __name__ == "__main__":
    common.main("torch", WORKLOADS)
