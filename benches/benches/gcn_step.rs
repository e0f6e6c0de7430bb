//! One GCN training step on a Cora-sized problem (2708 nodes, 10556 edges + self
//! loops, sparse features 1433 with 49216 nonzeros, 1433 → 16 → 7, dropout 0.5,
//! cross-entropy over 140 training nodes), forward and backward, f32, with the
//! cheaper association `Â · (X · W)` and the features as a constant CSR matrix.

use criterion::{Criterion, criterion_group, criterion_main};
use ndarray::{Array1, Array2};
use rand::SeedableRng;
use rand::rngs::StdRng;
use shade_autodiff::tensor::{self, Rows, TapeBuffers};
use shade_autodiff::{Const, Duplicated};
use shade_benches::{CoraLike, random_dense};
use std::hint::black_box;

fn gcn_step(c: &mut Criterion) {
    shade_benches::pool();
    let p = CoraLike::new(1);
    p.adj.prepare_transpose();
    p.features.prepare_transpose();
    let w1 = random_dense(1433, 16, 2) * 0.05;
    let b1 = Array1::<f32>::zeros(16);
    let w2 = random_dense(16, p.classes, 3) * 0.2;
    let b2 = Array1::<f32>::zeros(p.classes);
    let (mut dw1, mut db1) = (Array2::zeros(w1.dim()), Array1::zeros(16));
    let (mut dw2, mut db2) = (Array2::zeros(w2.dim()), Array1::zeros(p.classes));
    let mut bufs = TapeBuffers::new();
    let mut rng = StdRng::seed_from_u64(5);
    let mut group = c.benchmark_group("gcn_step");
    group.bench_function("shade", |b| {
        b.iter(|| {
            let loss = tensor::gradient(
                &mut bufs,
                |t, (w1, b1, w2, b2, x, a, y, train)| {
                    let h = t.spmm(x, w1)?;
                    let h = t.spmm(a, h)?;
                    let h = t.add(h, b1)?;
                    let h = t.relu(h)?;
                    let h = t.dropout(h, 0.5, &mut rng, true)?;
                    let h = t.matmul(h, w2)?;
                    let h = t.spmm(a, h)?;
                    let h = t.add(h, b2)?;
                    t.cross_entropy(h, y, Rows::Index(train))
                },
                (
                    Duplicated(&w1, &mut dw1),
                    Duplicated(&b1, &mut db1),
                    Duplicated(&w2, &mut dw2),
                    Duplicated(&b2, &mut db2),
                    Const(&p.features),
                    Const(&p.adj),
                    Const(&p.labels[..]),
                    Const(&p.train[..]),
                ),
            )
            .unwrap();
            black_box(loss);
        })
    });
    group.finish();
}

criterion_group!(benches, gcn_step);
criterion_main!(benches);
