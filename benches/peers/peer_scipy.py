"""SciPy peer: CSR x dense (`scipy.sparse.csr_matrix @ ndarray`, f32). SciPy's sparse
product is single-threaded whatever the thread count."""

import common


def spmm(ctx):
    import scipy
    import scipy.sparse as sp

    ctx.version = f"scipy {scipy.__version__}"
    ctx.mark_base()
    indptr, indices, data = common.csr(100_000, 100_000, 10, 42)
    a = sp.csr_matrix((data, indices.astype("int32"), indptr.astype("int32")), shape=(100_000, 100_000))
    x = common.dense_f32(100_000, 64, 7)
    ctx.measure("forward", lambda: a @ x, min_runs=20,
                note="csr_matrix @ ndarray, single-threaded, int32 indices")


WORKLOADS = {"spmm": (["forward"], spmm)}

if __name__ == "__main__":
    common.main("scipy", WORKLOADS)
