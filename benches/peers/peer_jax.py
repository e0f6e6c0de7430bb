"""JAX peers (jit, `jax.ops.segment_sum` for message passing, optax's Adam): Cora GCN
step and inference, the founding policy model's gradient, the synthetic GCN steps,
and the GMM objective and gradient. Threads: for T = 1, XLA_FLAGS turns off Eigen's
multi-threading and sets intra_op_parallelism_threads=1; `cargo xtask bench --peers`
also pins the process with taskset to T CPUs. Every timed call ends with
`jax.block_until_ready` (JAX dispatches CPU work asynchronously)."""

import os

import common


def setup(ctx, x64=False):
    if ctx.threads == 1:
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                                   " --xla_cpu_multi_thread_eigen=false"
                                   " intra_op_parallelism_threads=1").strip()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    if x64:
        jax.config.update("jax_enable_x64", True)
    ctx.version = f"jax {jax.__version__}"
    ctx.mark_base()
    return jax


def glorot(jax, key, fan_in, fan_out):
    lim = (6.0 / (fan_in + fan_out)) ** 0.5
    return jax.random.uniform(key, (fan_in, fan_out), minval=-lim, maxval=lim)


def gcn(jax, nodes, src, dst, dims, key):
    """Parameters and a forward function of a GCN with layers `dims`."""
    jnp = jax.numpy
    s, d, w = common.gcn_edges(nodes, src, dst)
    s, d, w = jnp.asarray(s), jnp.asarray(d), jnp.asarray(w)

    def prop(h):
        return jax.ops.segment_sum(h[s] * w[:, None], d, num_segments=nodes, indices_are_sorted=True)

    keys = jax.random.split(key, len(dims))
    params = [dict(w=glorot(jax, k, a, b), b=jnp.zeros(b)) for k, a, b in zip(keys, dims, dims[1:])]

    def forward(params, x, key=None, dropout=0.0):
        h = x
        for i, p in enumerate(params):
            if i > 0:
                h = jax.nn.relu(h)
                if dropout > 0.0:
                    key, sub = jax.random.split(key)
                    keep = jax.random.bernoulli(sub, 1.0 - dropout, h.shape)
                    h = jnp.where(keep, h / (1.0 - dropout), 0.0)
            h = prop(h @ p["w"]) + p["b"]
        return h

    return params, forward


def cross_entropy(jax, logits, y):
    jnp = jax.numpy
    lse = jax.nn.logsumexp(logits, axis=1)
    return jnp.mean(lse - jnp.take_along_axis(logits, y[:, None], axis=1)[:, 0])


def train_step(jax, forward, loss_rows, opt, dropout):
    import optax

    def loss(params, x, y, key):
        logits = forward(params, x, key, dropout)
        return cross_entropy(jax, logits[loss_rows], y[loss_rows])

    @jax.jit
    def step(params, state, x, y, key):
        key, sub = jax.random.split(key)
        value, grads = jax.value_and_grad(loss)(params, x, y, sub)
        updates, state = opt.update(grads, state, params)
        return optax.apply_updates(params, updates), state, key, value

    return step


def run_training(ctx, jax, step, params, opt, x, y, **opts):
    carry = [params, opt.init(params), jax.random.PRNGKey(1)]

    def once():
        p, s, k, v = step(carry[0], carry[1], x, y, carry[2])
        jax.block_until_ready(v)
        carry[:] = [p, s, k]

    ctx.measure("step", once, **opts)
    return carry[0]


def cora_gcn(ctx):
    jax = setup(ctx)
    import optax

    jnp = jax.numpy
    src, dst, x, y, train = common.cora()
    n = x.shape[0]
    params, forward = gcn(jax, n, src, dst, [x.shape[1], 16, 7], jax.random.PRNGKey(0))
    mask = [dict(w=True, b=True), dict(w=False, b=False)]
    opt = optax.chain(optax.masked(optax.add_decayed_weights(5e-4), mask), optax.adam(0.01))
    x, y, train = jnp.asarray(x), jnp.asarray(y), jnp.asarray(train)
    step = train_step(jax, forward, train, opt, 0.5)
    params = run_training(ctx, jax, step, params, opt, x, y)
    infer = jax.jit(lambda p, x: forward(p, x))
    ctx.measure("infer", lambda: jax.block_until_ready(infer(params, x)))


def policy(ctx):
    jax = setup(ctx)
    jnp = jax.numpy
    n = 100
    src, dst = common.bernoulli_edges(n, 0.2, 1)
    s, d, w = (jnp.asarray(v) for v in common.gcn_edges(n, src, dst))
    x = jnp.asarray(common.dense_f32(n, 2, 2))
    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(0), 3)
    params = dict(w1=glorot(jax, k1, 2, 50), b1=jnp.zeros(50), w2=glorot(jax, k2, 50, 50),
                  b2=jnp.zeros(50), w3=glorot(jax, k3, 50, 100), b3=jnp.zeros(100))

    def prop(h):
        return jax.ops.segment_sum(h[s] * w[:, None], d, num_segments=n, indices_are_sorted=True)

    def loss(p):
        h = jnp.tanh(prop(x @ p["w1"]) + p["b1"])
        h = jax.nn.relu(prop(h @ p["w2"]) + p["b2"])
        return jnp.mean(jax.nn.sigmoid(h @ p["w3"] + p["b3"]))

    grad = jax.jit(jax.grad(loss))
    ctx.measure("gradient", lambda: jax.block_until_ready(grad(params)))


def synth_gcn(nodes, edges):
    def run(ctx):
        jax = setup(ctx)
        import optax

        jnp = jax.numpy
        src, dst = common.random_edges(nodes, edges, 11)
        x = jnp.asarray(common.dense_f32(nodes, 128, 12))
        y = jnp.asarray((common.mix(13, common.np.arange(nodes)) % common.np.uint64(16)).astype("int32"))
        params, forward = gcn(jax, nodes, src, dst, [128, 64, 16], jax.random.PRNGKey(0))
        del src, dst
        opt = optax.adam(0.01)
        step = train_step(jax, forward, slice(None), opt, 0.0)
        run_training(ctx, jax, step, params, opt, x, y, min_runs=3 if nodes < 500_000 else 2, min_seconds=0.0,
                     warmup=1, memory=True)

    return run


def gmm(d, k, n):
    def run(ctx):
        jax = setup(ctx, x64=True)
        jnp = jax.numpy
        alpha, mu, q, l, x = common.gmm_problem(d, k, n, 1)
        constant = common.gmm_constant(d, k, n)
        rows, cols = common.lower_indices(d)
        x = jnp.asarray(x)

        def objective(alpha, mu, q, l):
            # GradBench's log posterior (gamma = 1, m = 0), vectorised over points.
            big_q = jnp.zeros((k, d, d)).at[:, rows, cols].set(l) + jax.vmap(jnp.diag)(jnp.exp(q))
            xc = x[:, None, :] - mu[None, :, :]
            qx = jnp.einsum("kij,nkj->nki", big_q, xc)
            beta = alpha + q.sum(1) - 0.5 * (qx * qx).sum(2)
            slse = jax.nn.logsumexp(beta, axis=1).sum()
            frob = (jnp.exp(q) ** 2).sum() + (l ** 2).sum()
            return slse - n * jax.nn.logsumexp(alpha) - 0.5 * frob + constant

        args = tuple(jnp.asarray(v) for v in (alpha, mu, q, l))
        obj = jax.jit(objective)
        grad = jax.jit(jax.grad(objective, argnums=(0, 1, 2, 3)))
        value = float(obj(*args))
        big = d * k * n > 10_000_000
        opts = dict(min_runs=2, min_seconds=0.0, warmup=1) if big else {}
        ctx.measure("objective", lambda: jax.block_until_ready(obj(*args)),
                    note=f"value {value:.12e}", **opts)
        ctx.measure("gradient", lambda: jax.block_until_ready(grad(*args)), **opts)

    return run


WORKLOADS = {
    "cora_gcn": (["step", "infer"], cora_gcn),
    "policy": (["gradient"], policy),
    "synth_gcn_100k": (["step"], synth_gcn(100_000, 1_000_000)),
    "synth_gcn_1m": (["step"], synth_gcn(1_000_000, 10_000_000)),
    "gmm_d10_k25_n1000": (["objective", "gradient"], gmm(10, 25, 1000)),
    "gmm_d64_k200_n10000": (["objective", "gradient"], gmm(64, 200, 10_000)),
}

if __name__ == "__main__":
    common.main("jax", WORKLOADS)
