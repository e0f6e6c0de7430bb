//! GradBench `ht` (ADBench's hand tracking): residuals between observed points
//! and a skinned hand mesh posed by 26 parameters (`objective`), and their Jacobian
//! (`jacobian`) by forward mode.
//!
//! The Jacobian is tall (3 rows per correspondence, 26 or 28 columns), so one forward
//! evaluation with 26 (simple) or 28 (complicated) tangents computes it: one tangent per
//! pose parameter and, in the complicated variant, two shared by every correspondence's
//! own `(u, v)`. Residual `i` depends only on its own `(u, v)`, so seeding all `u`s in
//! one tangent and all `v`s in another yields exactly the eval's compressed form (the
//! block diagonal of the `(u, v)` columns). As in GradBench's reference tool, a
//! complicated row holds `∂/∂u`, `∂/∂v`, then the 26 pose derivatives.
//!
//! Vertex skinning weights are stored sparsely (the zero weights of the model, most of
//! them, are skipped), in the primal as in the derivative.

use shade_autodiff::autodiff_forward;
use shade_autodiff::scalar::{DualVec, Real};

/// Pose parameters.
pub const THETA: usize = 26;

/// A 4 × 4 matrix, row-major.
pub type M4 = [f64; 16];

/// The hand model.
#[derive(Clone, Debug)]
pub struct HtModel {
    /// Parent of each bone (`None` for the root); a parent comes before its children.
    pub parents: Vec<Option<usize>>,
    /// Per bone, its base transform relative to its parent (4 × 4, row-major).
    pub base_relatives: Vec<M4>,
    /// Per bone, the inverse of its absolute base transform (4 × 4, row-major).
    pub inverse_base_absolutes: Vec<M4>,
    /// Homogeneous base position of each vertex.
    pub base_positions: Vec<[f64; 4]>,
    /// Per vertex, its non-zero skinning weights `(bone, weight)`.
    pub weights: Vec<Vec<(usize, f64)>>,
    /// Vertex indices of each triangle.
    pub triangles: Vec<[usize; 3]>,
    /// Whether the mesh is mirrored in x.
    pub is_mirrored: bool,
}

/// The model and the observations.
#[derive(Clone, Debug)]
pub struct HtData {
    /// The hand model.
    pub model: HtModel,
    /// Per observed point, its vertex (simple variant) or triangle (complicated).
    pub correspondences: Vec<usize>,
    /// The observed points.
    pub points: Vec<[f64; 3]>,
}

fn mul3<S: Real>(a: &[[S; 3]; 3], b: &[[S; 3]; 3]) -> [[S; 3]; 3] {
    std::array::from_fn(|r| {
        std::array::from_fn(|c| a[r][0] * b[0][c] + a[r][1] * b[1][c] + a[r][2] * b[2][c])
    })
}

/// `a · b` for 4 × 4 row-major matrices; `b` holds numbers or `f64` constants.
fn mul4<S, R>(a: &[S; 16], b: &[R; 16]) -> [S; 16]
where
    S: Real + std::ops::Mul<R, Output = S>,
    R: Copy,
{
    std::array::from_fn(|i| {
        let (r, c) = (i / 4, i % 4);
        a[4 * r] * b[c]
            + a[4 * r + 1] * b[4 + c]
            + a[4 * r + 2] * b[8 + c]
            + a[4 * r + 3] * b[12 + c]
    })
}

/// The rotation of an angle-axis vector (the identity below an angle of 1e-4).
fn angle_axis<S: Real>(aa: &[S; 3]) -> [[S; 3]; 3] {
    let (o, z) = (S::one(), S::zero());
    let norm = (aa[0] * aa[0] + aa[1] * aa[1] + aa[2] * aa[2]).sqrt();
    if norm.detach().value() < 1e-4 {
        return [[o, z, z], [z, o, z], [z, z, o]];
    }
    let (x, y, w) = (aa[0] / norm, aa[1] / norm, aa[2] / norm);
    let (s, c) = (norm.sin(), norm.cos());
    let one_c = -c + 1.0;
    [
        [
            x * x + (-(x * x) + 1.0) * c,
            x * y * one_c - w * s,
            x * w * one_c + y * s,
        ],
        [
            x * y * one_c + w * s,
            y * y + (-(y * y) + 1.0) * c,
            y * w * one_c - x * s,
        ],
        [
            x * w * one_c - y * s,
            w * y * one_c + x * s,
            w * w + (-(w * w) + 1.0) * c,
        ],
    ]
}

/// `Rz · Ry · Rx` for angles stored as `[x, z, y]`.
fn euler<S: Real>(xzy: &[S; 3]) -> [[S; 3]; 3] {
    let (o, z) = (S::one(), S::zero());
    let (tx, ty, tz) = (xzy[0], xzy[2], xzy[1]);
    let (cx, sx, cy, sy, cz, sz) = (tx.cos(), tx.sin(), ty.cos(), ty.sin(), tz.cos(), tz.sin());
    let rx = [[o, z, z], [z, cx, -sx], [z, sx, cx]];
    let ry = [[cy, z, sy], [z, o, z], [-sy, z, cy]];
    let rz = [[cz, -sz, z], [sz, cz, z], [z, z, o]];
    mul3(&mul3(&rz, &ry), &rx)
}

/// The 3 × (bones + 3) pose matrix (by columns): global rotation, scale (ones), global
/// translation, then per bone its `[x, z, y]` angles (two for each finger's base bone,
/// one for the others, none for the wrist and the finger tips).
fn pose_params<S: Real>(theta: &[S], bones: usize) -> Vec<[S; 3]> {
    let mut pose = vec![[S::zero(); 3]; bones + 3];
    pose[0] = [theta[0], theta[1], theta[2]];
    pose[1] = [S::one(); 3];
    pose[2] = [theta[3], theta[4], theta[5]];
    let (mut it, mut ip) = (6, 5);
    for _finger in 0..5 {
        for joint in 2..=4 {
            pose[ip][0] = theta[it];
            it += 1;
            if joint == 2 {
                pose[ip][1] = theta[it];
                it += 1;
            }
            ip += 1;
        }
        ip += 1;
    }
    pose
}

/// The posed, skinned mesh with the global transform applied: one position per vertex.
pub fn skinned_vertices<S: Real>(theta: &[S], model: &HtModel) -> Vec<[S; 3]> {
    let bones = model.parents.len();
    let pose = pose_params(theta, bones);
    let mut absolutes: Vec<[S; 16]> = Vec::with_capacity(bones);
    for b in 0..bones {
        let r = euler(&pose[b + 3]);
        let base = &model.base_relatives[b];
        // base · [[R, 0], [0, 1]]
        let relative: [S; 16] = std::array::from_fn(|i| {
            let (row, c) = (i / 4, i % 4);
            if c < 3 {
                r[0][c] * base[4 * row] + r[1][c] * base[4 * row + 1] + r[2][c] * base[4 * row + 2]
            } else {
                S::cst(base[4 * row + 3])
            }
        });
        let absolute = match model.parents[b] {
            None => relative,
            Some(p) => mul4(&absolutes[p], &relative),
        };
        absolutes.push(absolute);
    }
    let transforms: Vec<[S; 16]> = absolutes
        .iter()
        .zip(&model.inverse_base_absolutes)
        .map(|(a, inv)| mul4(a, inv))
        .collect();

    let mut rot = angle_axis(&pose[0]);
    for row in &mut rot {
        for (c, v) in row.iter_mut().enumerate() {
            *v *= pose[1][c];
        }
    }
    let mirror = if model.is_mirrored { -1.0 } else { 1.0 };
    model
        .base_positions
        .iter()
        .zip(&model.weights)
        .map(|(base, weights)| {
            let mut p = [S::zero(); 3];
            for &(b, w) in weights {
                let t = &transforms[b];
                for (i, pi) in p.iter_mut().enumerate() {
                    let row = t[4 * i] * base[0]
                        + t[4 * i + 1] * base[1]
                        + t[4 * i + 2] * base[2]
                        + t[4 * i + 3] * base[3];
                    *pi += row * w;
                }
            }
            p[0] = p[0] * mirror;
            std::array::from_fn(|i| {
                rot[i][0] * p[0] + rot[i][1] * p[1] + rot[i][2] * p[2] + pose[2][i]
            })
        })
        .collect()
}

/// The residuals (3 per correspondence) into `err`; `us` holds `[u, v]` per
/// correspondence in the complicated variant and is empty in the simple one.
pub fn ht_objective_tape<S: Real>(err: &mut [S], theta: &[S], us: &[S], data: &HtData) {
    let verts = skinned_vertices(theta, &data.model);
    for (i, (&c, point)) in data.correspondences.iter().zip(&data.points).enumerate() {
        for j in 0..3 {
            let model_point = if us.is_empty() {
                verts[c][j]
            } else {
                let [a, b, t] = data.model.triangles[c];
                let (u, v) = (us[2 * i], us[2 * i + 1]);
                u * verts[a][j] + v * verts[b][j] + (-u - v + 1.0) * verts[t][j]
            };
            err[3 * i + j] = -model_point + point[j];
        }
    }
}

/// The Jacobian rows (`N = 26` simple; `28` complicated, `u` and `v` first) by one
/// forward evaluation of [`ht_objective_tape`].
pub fn jacobian_tape<const N: usize>(
    theta: &[f64],
    us: &[f64],
    data: &HtData,
    rows: &mut [[f64; N]],
) {
    let offset = N - THETA;
    let th: Vec<DualVec<f64, N>> = theta
        .iter()
        .enumerate()
        .map(|(k, &t)| DualVec::seeded(t, offset + k))
        .collect();
    let uv: Vec<DualVec<f64, N>> = us
        .iter()
        .enumerate()
        .map(|(k, &u)| DualVec::seeded(u, k % 2))
        .collect();
    let mut err = vec![DualVec::<f64, N>::constant(0.0); rows.len()];
    ht_objective_tape(&mut err, &th, &uv, data);
    for (row, e) in rows.iter_mut().zip(&err) {
        *row = e.d;
    }
}

/// The parent of a root bone in [`HtFlat::parents`].
pub const ROOT: usize = usize::MAX;

/// [`HtData`] as flat arrays, for the compile-time form: 4 × 4 matrices as 16 numbers
/// row-major, vertices as 4, points and triangles as 3, the skinning weights in CSR form
/// (vertex `v`'s entries at `weight_start[v]..weight_start[v + 1]`).
#[derive(Clone, Debug)]
pub struct HtFlat {
    /// Per bone, its parent ([`ROOT`] for none); a parent comes before its children.
    pub parents: Vec<usize>,
    /// Per bone, 16 numbers: the base transform relative to its parent.
    pub base_relatives: Vec<f64>,
    /// Per bone, 16 numbers: the inverse of its absolute base transform.
    pub inverse_base_absolutes: Vec<f64>,
    /// Per vertex, 4 numbers: its homogeneous base position.
    pub base_positions: Vec<f64>,
    /// Where each vertex's weights start (one more entry than vertices).
    pub weight_start: Vec<usize>,
    /// The bone of each weight.
    pub weight_bone: Vec<usize>,
    /// Each weight.
    pub weight_value: Vec<f64>,
    /// Per triangle, its 3 vertices.
    pub triangles: Vec<usize>,
    /// `-1` if the mesh is mirrored in x, else `1`.
    pub mirror: f64,
    /// Per observed point, its vertex (simple) or triangle (complicated).
    pub correspondences: Vec<usize>,
    /// Per observed point, 3 numbers.
    pub points: Vec<f64>,
}

impl HtFlat {
    /// Flattens `data`.
    pub fn new(data: &HtData) -> Self {
        let m = &data.model;
        let mut weight_start = vec![0];
        let (mut weight_bone, mut weight_value) = (Vec::new(), Vec::new());
        for w in &m.weights {
            for &(b, v) in w {
                weight_bone.push(b);
                weight_value.push(v);
            }
            weight_start.push(weight_bone.len());
        }
        HtFlat {
            parents: m.parents.iter().map(|p| p.unwrap_or(ROOT)).collect(),
            base_relatives: m.base_relatives.concat(),
            inverse_base_absolutes: m.inverse_base_absolutes.concat(),
            base_positions: m.base_positions.concat(),
            weight_start,
            weight_bone,
            weight_value,
            triangles: m.triangles.concat(),
            mirror: if m.is_mirrored { -1.0 } else { 1.0 },
            correspondences: data.correspondences.clone(),
            points: data.points.concat(),
        }
    }
}

/// The residuals of [`ht_objective_tape`] into `err` (3 per correspondence), the
/// compile-time form: the same formulas in the macro's subset (flat arrays, index
/// loops, the rotations written out), differentiated forward by `t_ht_objective` (one
/// tangent of `theta` and `us` per call).
#[autodiff_forward(t_ht_objective, Dual, Dual, Const, Dual)]
pub fn ht_objective(theta: &[f64], us: &[f64], data: &HtFlat, err: &mut [f64]) {
    let bones = data.parents.len();
    // The pose by columns, 3 numbers each: global rotation, scale, translation, then
    // per bone its `[x, z, y]` angles.
    let mut pose = vec![0.0; 3 * (bones + 3)];
    for k in 0..3 {
        pose[k] = theta[k];
        pose[3 + k] = 1.0;
        pose[6 + k] = theta[3 + k];
    }
    let mut it = 6;
    let mut ip = 5;
    for _finger in 0..5 {
        for joint in 2..5 {
            pose[3 * ip] = theta[it];
            it += 1;
            if joint == 2 {
                pose[3 * ip + 1] = theta[it];
                it += 1;
            }
            ip += 1;
        }
        ip += 1;
    }
    // Each bone's absolute transform: its parent's times base · [[R, 0], [0, 1]], with
    // R = Rz · Ry · Rx of its angles.
    let mut absolutes = vec![0.0; 16 * bones];
    let mut r = [0.0; 9];
    let mut relative = [0.0; 16];
    for b in 0..bones {
        let tx = pose[3 * (b + 3)];
        let tz = pose[3 * (b + 3) + 1];
        let ty = pose[3 * (b + 3) + 2];
        let cx = tx.cos();
        let sx = tx.sin();
        let cy = ty.cos();
        let sy = ty.sin();
        let cz = tz.cos();
        let sz = tz.sin();
        r[0] = cz * cy;
        r[1] = cz * sy * sx - sz * cx;
        r[2] = cz * sy * cx + sz * sx;
        r[3] = sz * cy;
        r[4] = sz * sy * sx + cz * cx;
        r[5] = sz * sy * cx - cz * sx;
        r[6] = -sy;
        r[7] = cy * sx;
        r[8] = cy * cx;
        for row in 0..4 {
            let o = 16 * b + 4 * row;
            for c in 0..3 {
                relative[4 * row + c] = r[c] * data.base_relatives[o]
                    + r[3 + c] * data.base_relatives[o + 1]
                    + r[6 + c] * data.base_relatives[o + 2];
            }
            relative[4 * row + 3] = data.base_relatives[o + 3];
        }
        let p = data.parents[b];
        if p == ROOT {
            for i in 0..16 {
                absolutes[16 * b + i] = relative[i];
            }
        } else {
            for row in 0..4 {
                for c in 0..4 {
                    absolutes[16 * b + 4 * row + c] = absolutes[16 * p + 4 * row] * relative[c]
                        + absolutes[16 * p + 4 * row + 1] * relative[4 + c]
                        + absolutes[16 * p + 4 * row + 2] * relative[8 + c]
                        + absolutes[16 * p + 4 * row + 3] * relative[12 + c];
                }
            }
        }
    }
    let mut transforms = vec![0.0; 16 * bones];
    for b in 0..bones {
        for row in 0..4 {
            for c in 0..4 {
                let o = 16 * b + 4 * row;
                transforms[o + c] = absolutes[o] * data.inverse_base_absolutes[16 * b + c]
                    + absolutes[o + 1] * data.inverse_base_absolutes[16 * b + 4 + c]
                    + absolutes[o + 2] * data.inverse_base_absolutes[16 * b + 8 + c]
                    + absolutes[o + 3] * data.inverse_base_absolutes[16 * b + 12 + c];
            }
        }
    }
    // The global rotation (angle-axis; the identity below an angle of 1e-4), its
    // columns scaled.
    let mut rot = [0.0; 9];
    let norm = (pose[0] * pose[0] + pose[1] * pose[1] + pose[2] * pose[2]).sqrt();
    if norm < 1e-4 {
        rot[0] = 1.0;
        rot[4] = 1.0;
        rot[8] = 1.0;
    } else {
        let x = pose[0] / norm;
        let y = pose[1] / norm;
        let w = pose[2] / norm;
        let s = norm.sin();
        let c = norm.cos();
        let one_c = -c + 1.0;
        rot[0] = x * x + (-(x * x) + 1.0) * c;
        rot[1] = x * y * one_c - w * s;
        rot[2] = x * w * one_c + y * s;
        rot[3] = x * y * one_c + w * s;
        rot[4] = y * y + (-(y * y) + 1.0) * c;
        rot[5] = y * w * one_c - x * s;
        rot[6] = x * w * one_c - y * s;
        rot[7] = w * y * one_c + x * s;
        rot[8] = w * w + (-(w * w) + 1.0) * c;
    }
    for row in 0..3 {
        for c in 0..3 {
            rot[3 * row + c] *= pose[3 + c];
        }
    }
    // The skinned vertices, then the global transform.
    let nv = data.weight_start.len() - 1;
    let mut verts = vec![0.0; 3 * nv];
    let mut q = [0.0; 3];
    for v in 0..nv {
        q[0] = 0.0;
        q[1] = 0.0;
        q[2] = 0.0;
        for k in data.weight_start[v]..data.weight_start[v + 1] {
            let o = 16 * data.weight_bone[k];
            let wk = data.weight_value[k];
            for i in 0..3 {
                let row = transforms[o + 4 * i] * data.base_positions[4 * v]
                    + transforms[o + 4 * i + 1] * data.base_positions[4 * v + 1]
                    + transforms[o + 4 * i + 2] * data.base_positions[4 * v + 2]
                    + transforms[o + 4 * i + 3] * data.base_positions[4 * v + 3];
                q[i] += row * wk;
            }
        }
        q[0] *= data.mirror;
        for i in 0..3 {
            verts[3 * v + i] =
                rot[3 * i] * q[0] + rot[3 * i + 1] * q[1] + rot[3 * i + 2] * q[2] + pose[6 + i];
        }
    }
    // The residuals: a vertex (simple), or a point of a triangle (complicated).
    for i in 0..data.correspondences.len() {
        let c = data.correspondences[i];
        for j in 0..3 {
            if us.is_empty() {
                err[3 * i + j] = -verts[3 * c + j] + data.points[3 * i + j];
            } else {
                let a = data.triangles[3 * c];
                let b = data.triangles[3 * c + 1];
                let t = data.triangles[3 * c + 2];
                let u = us[2 * i];
                let w = us[2 * i + 1];
                let model_point =
                    u * verts[3 * a + j] + w * verts[3 * b + j] + (-u - w + 1.0) * verts[3 * t + j];
                err[3 * i + j] = -model_point + data.points[3 * i + j];
            }
        }
    }
}

/// The Jacobian rows of [`jacobian_tape`] by the compile-time form: one call of
/// `t_ht_objective` per column (26, or 28 with `u` and `v` first, each seeding every
/// correspondence's own `u` (or `v`) at once).
pub fn jacobian<const N: usize>(theta: &[f64], us: &[f64], data: &HtFlat, rows: &mut [[f64; N]]) {
    let offset = N - THETA;
    let (mut dtheta, mut dus) = (vec![0.0; theta.len()], vec![0.0; us.len()]);
    let (mut err, mut derr) = (vec![0.0; rows.len()], vec![0.0; rows.len()]);
    for col in 0..N {
        dtheta.iter_mut().for_each(|v| *v = 0.0);
        for (k, d) in dus.iter_mut().enumerate() {
            *d = f64::from(u8::from(col < offset && k % 2 == col));
        }
        if col >= offset {
            dtheta[col - offset] = 1.0;
        }
        t_ht_objective(theta, &dtheta, us, &dus, data, &mut err, &mut derr);
        for (row, d) in rows.iter_mut().zip(&derr) {
            row[col] = *d;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gradbench::support::{assert_close, central_jacobian, uniform};

    /// A small random model: 22 bones in a chain-ish tree, 12 vertices, 6 triangles.
    fn model() -> HtModel {
        let bones = 22;
        let u = uniform(9, 2000);
        let mut k = 0;
        let mut next = || {
            k += 1;
            u[k] - 0.5
        };
        let mut rigid = || -> M4 {
            let aa = [next(), next(), next()];
            let r = angle_axis(&aa);
            [
                r[0][0],
                r[0][1],
                r[0][2],
                next(),
                r[1][0],
                r[1][1],
                r[1][2],
                next(),
                r[2][0],
                r[2][1],
                r[2][2],
                next(),
                0.0,
                0.0,
                0.0,
                1.0,
            ]
        };
        let base_relatives = (0..bones).map(|_| rigid()).collect();
        let inverse_base_absolutes = (0..bones).map(|_| rigid()).collect();
        let nv = 12;
        let mut w = uniform(10, nv * 3);
        HtModel {
            parents: (0..bones)
                .map(|b| if b == 0 { None } else { Some((b - 1) / 2) })
                .collect(),
            base_relatives,
            inverse_base_absolutes,
            base_positions: uniform(11, nv * 3)
                .chunks(3)
                .map(|c| [c[0], c[1], c[2], 1.0])
                .collect(),
            weights: (0..nv)
                .map(|v| {
                    let s: f64 = w[3 * v..3 * v + 3].iter().sum();
                    w[3 * v..3 * v + 3].iter_mut().for_each(|x| *x /= s);
                    (0..3)
                        .map(|j| ((v * 7 + j * 5) % bones, w[3 * v + j]))
                        .collect()
                })
                .collect(),
            triangles: (0..6).map(|t| [t, t + 3, (t + 5) % nv]).collect(),
            is_mirrored: true,
        }
    }

    fn check(complicated: bool) {
        let data = HtData {
            model: model(),
            correspondences: vec![0, 3, 5, 2],
            points: uniform(12, 12)
                .chunks(3)
                .map(|c| [c[0], c[1], c[2]])
                .collect(),
        };
        let theta: Vec<f64> = uniform(13, THETA).iter().map(|u| u - 0.5).collect();
        let us: Vec<f64> = if complicated { uniform(14, 8) } else { vec![] };
        let rows = 12;
        let f = |x: &[f64]| {
            let mut e = vec![0.0; rows];
            ht_objective_tape(&mut e, &x[..THETA], &x[THETA..], &data);
            e
        };
        let x: Vec<f64> = theta.iter().chain(&us).copied().collect();
        let fd = central_jacobian(f, &x, 1e-6);
        let n = x.len();
        // The compressed form: the row's own u and v (complicated), then the 26 theta
        // columns.
        let want: Vec<f64> = (0..rows)
            .flat_map(|r| {
                let mut row = Vec::new();
                if complicated {
                    let i = r / 3;
                    row.push(fd[r * n + THETA + 2 * i]);
                    row.push(fd[r * n + THETA + 2 * i + 1]);
                }
                row.extend_from_slice(&fd[r * n..r * n + THETA]);
                row
            })
            .collect();
        let flat = HtFlat::new(&data);
        let (got, generated): (Vec<f64>, Vec<f64>) = if complicated {
            let (mut j, mut jm) = (vec![[0.0; THETA + 2]; rows], vec![[0.0; THETA + 2]; rows]);
            jacobian_tape(&theta, &us, &data, &mut j);
            jacobian(&theta, &us, &flat, &mut jm);
            (j.concat(), jm.concat())
        } else {
            let (mut j, mut jm) = (vec![[0.0; THETA]; rows], vec![[0.0; THETA]; rows]);
            jacobian_tape(&theta, &us, &data, &mut j);
            jacobian(&theta, &us, &flat, &mut jm);
            (j.concat(), jm.concat())
        };
        assert_close("ht jacobian", &got, &want, 1e-6);
        // The compile-time form: the same residuals, the tape's Jacobian.
        let (mut e, mut et) = (vec![0.0; rows], vec![0.0; rows]);
        ht_objective(&theta, &us, &flat, &mut e);
        ht_objective_tape(&mut et, &theta, &us, &data);
        assert_close("ht residuals, generated vs tape", &e, &et, 1e-12);
        assert_close("ht jacobian, generated vs tape", &generated, &got, 1e-10);
    }

    #[test]
    fn the_global_rotation_below_its_threshold_is_the_identity() {
        // An angle of zero takes the identity branch in both forms.
        let data = HtData {
            model: model(),
            correspondences: vec![1, 4],
            points: vec![[0.1, 0.2, 0.3], [-0.2, 0.0, 0.5]],
        };
        let mut theta: Vec<f64> = uniform(15, THETA).iter().map(|u| u - 0.5).collect();
        theta[..3].copy_from_slice(&[0.0; 3]);
        let flat = HtFlat::new(&data);
        let (mut j, mut jm) = (vec![[0.0; THETA]; 6], vec![[0.0; THETA]; 6]);
        jacobian_tape(&theta, &[], &data, &mut j);
        jacobian(&theta, &[], &flat, &mut jm);
        assert_close("identity branch", &jm.concat(), &j.concat(), 1e-10);
    }

    #[test]
    fn simple_jacobian_matches_central_differences() {
        check(false);
    }

    #[test]
    fn complicated_jacobian_matches_central_differences() {
        check(true);
    }

    #[test]
    fn euler_angles_compose_z_y_x() {
        let r = euler(&[0.0, std::f64::consts::FRAC_PI_2, 0.0]);
        // A quarter turn about z maps x to y.
        assert!((r[1][0] - 1.0).abs() < 1e-15 && r[0][0].abs() < 1e-15);
    }
}
