//! GradBench `ba` (ADBench's bundle adjustment): reprojection errors of `p`
//! observations and weight errors (`objective`), and the sparse Jacobian in CSR form
//! (`jacobian`), one 2 × 15 block per observation and one derivative per weight error.
//!
//! The tape computes each block by forward mode with 15 tangents (`DualVec<f64, 15>`,
//! one evaluation; 2.6 times faster here than one recording and two reverse sweeps per
//! observation); the compile-time engine by two reverse sweeps of its generated
//! derivative (one per error component; no recording to amortise).
//!
//! The eval's input holds one camera, one point, one weight and one feature; [`BaData`]
//! expands them to `n` cameras, `m` points and `p` observations (observation `i` links
//! camera `i mod n` with point `i mod m`), and every observation is computed, without
//! exploiting the repetition.

use shade_autodiff::autodiff_reverse;
use shade_autodiff::scalar::{DualVec, Real, Tape, shade_fn};

/// Camera parameters per camera: rotation (3), centre (3), focal length, principal
/// point (2), radial distortion (2).
pub const CAM: usize = 11;
/// Inputs of one observation's block: its camera, its point, its weight.
pub const BLOCK: usize = CAM + 3 + 1;

/// The reprojection error `w · (project(cam, X) - feat)` of one observation, for
/// `x = [cam (11), X (3), w]`, written into `err` (2 entries): rotate `X - C` by the
/// Rodrigues rotation (first order when the angle is exactly zero), divide by the last
/// coordinate, apply the radial distortion, scale and shift. The compile-time form.
#[autodiff_reverse(d_reprojection, Duplicated, Duplicated, Const)]
pub fn reprojection(err: &mut [f64], x: &[f64], feat: &[f64]) {
    let c0 = x[11] - x[3];
    let c1 = x[12] - x[4];
    let c2 = x[13] - x[5];
    let sqtheta = x[0] * x[0] + x[1] * x[1] + x[2] * x[2];
    // The rotated point.
    let mut p = [0.0; 3];
    if sqtheta != 0.0 {
        let theta = sqtheta.sqrt();
        let cos = theta.cos();
        let sin = theta.sin();
        let w0 = x[0] / theta;
        let w1 = x[1] / theta;
        let w2 = x[2] / theta;
        let tmp = (w0 * c0 + w1 * c1 + w2 * c2) * (1.0 - cos);
        p[0] = c0 * cos + (w1 * c2 - w2 * c1) * sin + w0 * tmp;
        p[1] = c1 * cos + (w2 * c0 - w0 * c2) * sin + w1 * tmp;
        p[2] = c2 * cos + (w0 * c1 - w1 * c0) * sin + w2 * tmp;
    } else {
        p[0] = c0 + (x[1] * c2 - x[2] * c1);
        p[1] = c1 + (x[2] * c0 - x[0] * c2);
        p[2] = c2 + (x[0] * c1 - x[1] * c0);
    }
    let q0 = p[0] / p[2];
    let q1 = p[1] / p[2];
    let rsq = q0 * q0 + q1 * q1;
    let distort = 1.0 + x[9] * rsq + x[10] * rsq * rsq;
    err[0] = x[14] * (q0 * distort * x[6] + x[7] - feat[0]);
    err[1] = x[14] * (q1 * distort * x[6] + x[8] - feat[1]);
}

/// The weight error `1 - w²`. The compile-time form.
#[autodiff_reverse(d_weight_error, Active, Active)]
pub fn weight_error(w: f64) -> f64 {
    1.0 - w * w
}

fn cross<S: Real>(a: &[S], b: &[S]) -> [S; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

/// Rotates `pt` by the angle-axis vector `rot` (Rodrigues; first order when the angle
/// is exactly zero).
fn rodrigues<S: Real>(rot: &[S], pt: &[S; 3]) -> [S; 3] {
    let sqtheta = rot[0] * rot[0] + rot[1] * rot[1] + rot[2] * rot[2];
    if sqtheta.detach().value() != 0.0 {
        let theta = sqtheta.sqrt();
        let (cos, sin) = (theta.cos(), theta.sin());
        let inv = theta.recip();
        let w = [rot[0] * inv, rot[1] * inv, rot[2] * inv];
        let wx = cross(&w, pt);
        let tmp = (w[0] * pt[0] + w[1] * pt[1] + w[2] * pt[2]) * (-cos + 1.0);
        [0, 1, 2].map(|i| pt[i] * cos + wx[i] * sin + w[i] * tmp)
    } else {
        let rx = cross(rot, pt);
        [0, 1, 2].map(|i| pt[i] + rx[i])
    }
}

/// [`reprojection`] for any [`Real`]: the tape's form.
pub fn reprojection_tape<S: Real>(err: &mut [S], x: &[S], feat: &[f64]) {
    let (cam, rest) = x.split_at(CAM);
    let (point, w) = (&rest[..3], rest[3]);
    let centred = [point[0] - cam[3], point[1] - cam[4], point[2] - cam[5]];
    let xcam = rodrigues(&cam[..3], &centred);
    let mut proj = [xcam[0] / xcam[2], xcam[1] / xcam[2]];
    let rsq = proj[0] * proj[0] + proj[1] * proj[1];
    let distort = cam[9] * rsq + cam[10] * rsq * rsq + 1.0;
    proj[0] *= distort;
    proj[1] *= distort;
    err[0] = w * (proj[0] * cam[6] + cam[7] - feat[0]);
    err[1] = w * (proj[1] * cam[6] + cam[8] - feat[1]);
}

/// [`weight_error`] for any [`Real`]: the tape's form.
pub fn weight_error_tape<S: Real>(w: S) -> S {
    -(w * w) + 1.0
}

shade_fn!(pub(crate) ReprojectionTape = reprojection_tape(&mut [S], &[S], &[f64]));
shade_fn!(pub(crate) WeightErrorTape = weight_error_tape(S));

/// The expanded problem.
#[derive(Clone, Debug)]
pub struct BaData {
    /// Cameras, points, observations.
    pub n: usize,
    /// Points.
    pub m: usize,
    /// Observations.
    pub p: usize,
    /// `n × 11`.
    pub cams: Vec<f64>,
    /// `m × 3`.
    pub points: Vec<f64>,
    /// `p` weights.
    pub w: Vec<f64>,
    /// `p × 2` observed features.
    pub feats: Vec<f64>,
    /// `p` (camera, point) pairs.
    pub obs: Vec<(usize, usize)>,
}

impl BaData {
    /// Expands one camera (11 entries), one point (3), one weight and one feature (2)
    /// to `n` cameras, `m` points and `p` observations.
    pub fn expand(
        n: usize,
        m: usize,
        p: usize,
        cam: &[f64],
        x: &[f64],
        w: f64,
        feat: &[f64],
    ) -> BaData {
        BaData {
            n,
            m,
            p,
            cams: cam.repeat(n),
            points: x.repeat(m),
            w: vec![w; p],
            feats: feat.repeat(p),
            obs: (0..p).map(|i| (i % n, i % m)).collect(),
        }
    }

    /// Observation `i`'s block inputs `[cam, X, w]`.
    pub fn block(&self, i: usize, out: &mut [f64; BLOCK]) {
        let (c, pt) = self.obs[i];
        out[..CAM].copy_from_slice(&self.cams[c * CAM..(c + 1) * CAM]);
        out[CAM..CAM + 3].copy_from_slice(&self.points[pt * 3..pt * 3 + 3]);
        out[BLOCK - 1] = self.w[i];
    }
}

/// The Jacobian in CSR form: `3p` rows, `15` entries per reprojection row, one per
/// weight-error row.
#[derive(Clone, Debug, Default)]
pub struct Csr {
    /// Row pointers (`3p + 1`).
    pub rows: Vec<usize>,
    /// Column of each entry.
    pub cols: Vec<usize>,
    /// Value of each entry.
    pub vals: Vec<f64>,
}

/// Every observation's reprojection error (`2p`) and weight error (`p`), by the
/// compile-time form (`tape == false`) or the tape's form at `f64`.
pub fn objective(data: &BaData, tape: bool, reproj: &mut [f64], w_err: &mut [f64]) {
    let mut x = [0.0; BLOCK];
    for i in 0..data.p {
        data.block(i, &mut x);
        let (err, feat) = (&mut reproj[2 * i..2 * i + 2], &data.feats[2 * i..2 * i + 2]);
        if tape {
            reprojection_tape(err, &x, feat);
        } else {
            reprojection(err, &x, feat);
        }
    }
    for (e, &w) in w_err.iter_mut().zip(&data.w) {
        *e = if tape {
            weight_error_tape(w)
        } else {
            weight_error(w)
        };
    }
}

/// One observation's 2 × 15 Jacobian block (row-major) by the tape's forward mode.
pub fn block_jacobian_tape(x: &[f64; BLOCK], feat: &[f64], block: &mut [f64; 2 * BLOCK]) {
    let xs: [DualVec<f64, BLOCK>; BLOCK] = std::array::from_fn(|k| DualVec::seeded(x[k], k));
    let mut e = [DualVec::<f64, BLOCK>::constant(0.0); 2];
    reprojection_tape(&mut e, &xs, feat);
    block[..BLOCK].copy_from_slice(&e[0].d);
    block[BLOCK..].copy_from_slice(&e[1].d);
}

/// One observation's 2 × 15 Jacobian block (row-major) by two sweeps of the generated
/// reverse derivative.
pub fn block_jacobian(x: &[f64; BLOCK], feat: &[f64], block: &mut [f64; 2 * BLOCK]) {
    let mut err = [0.0; 2];
    for (row, seed) in block.chunks_exact_mut(BLOCK).zip([[1.0, 0.0], [0.0, 1.0]]) {
        let mut derr = seed;
        row.fill(0.0);
        d_reprojection(&mut err, &mut derr, x, row, feat);
    }
}

/// Computes the whole Jacobian into `jac` (its buffers are reused) from the blocks of
/// `block` and the weight errors' derivatives of `weight`.
fn assemble(
    data: &BaData,
    jac: &mut Csr,
    mut block: impl FnMut(&[f64; BLOCK], &[f64], &mut [f64; 2 * BLOCK]),
    mut weight: impl FnMut(f64) -> Result<f64, String>,
) -> Result<(), String> {
    let (n, m, p) = (data.n, data.m, data.p);
    for v in [&mut jac.rows, &mut jac.cols] {
        v.clear();
        v.reserve(2 * BLOCK * p + p + 1);
    }
    jac.vals.clear();
    jac.vals.reserve(2 * BLOCK * p + p);
    jac.rows.push(0);
    let mut x = [0.0; BLOCK];
    let mut b = [0.0; 2 * BLOCK];
    for i in 0..p {
        data.block(i, &mut x);
        block(&x, &data.feats[2 * i..2 * i + 2], &mut b);
        let (c, pt) = data.obs[i];
        for row in 0..2 {
            jac.rows.push(jac.rows.last().copied().unwrap_or(0) + BLOCK);
            jac.cols.extend((0..CAM).map(|j| CAM * c + j));
            jac.cols.extend((0..3).map(|j| CAM * n + 3 * pt + j));
            jac.cols.push(CAM * n + 3 * m + i);
            jac.vals
                .extend_from_slice(&b[row * BLOCK..(row + 1) * BLOCK]);
        }
    }
    for i in 0..p {
        jac.rows.push(jac.rows.last().copied().unwrap_or(0) + 1);
        jac.cols.push(CAM * n + 3 * m + i);
        jac.vals.push(weight(data.w[i])?);
    }
    Ok(())
}

/// The whole Jacobian by the tape (its buffers are reused).
pub fn jacobian_tape(data: &BaData, tape: &mut Tape, jac: &mut Csr) -> Result<(), String> {
    assemble(data, jac, block_jacobian_tape, |w| {
        tape.derivative(&WeightErrorTape, w, ())
            .map_err(|e| e.to_string())
    })
}

/// The whole Jacobian by the compile-time engine (its buffers are reused).
pub fn jacobian(data: &BaData, jac: &mut Csr) -> Result<(), String> {
    assemble(data, jac, block_jacobian, |w| Ok(d_weight_error(w, 1.0).1))
}

#[cfg(test)]
mod tests {
    use super::super::support::assert_close;
    use super::*;
    use shade_autodiff::Const;

    fn block_input(rot: [f64; 3]) -> [f64; BLOCK] {
        [
            rot[0], rot[1], rot[2], 0.1, -0.2, -3.0, 400.0, 10.0, -5.0, 1e-3, -2e-4, 0.5, 0.3, 2.0,
            0.8,
        ]
    }

    #[test]
    fn the_forms_and_modes_agree_on_values_and_blocks() {
        for rot in [[0.1, -0.2, 0.05], [0.0, 0.0, 0.0]] {
            let x = block_input(rot);
            let feat = [12.0, -7.0];
            let (mut e, mut et) = ([0.0; 2], [0.0; 2]);
            reprojection(&mut e, &x, &feat);
            reprojection_tape(&mut et, &x, &feat);
            assert_close("errors", &e, &et, 1e-12);
            let (mut fwd, mut generated) = ([0.0; 2 * BLOCK], [0.0; 2 * BLOCK]);
            block_jacobian_tape(&x, &feat, &mut fwd);
            block_jacobian(&x, &feat, &mut generated);
            let (mut y, mut rev) = ([0.0; 2], [0.0; 2 * BLOCK]);
            Tape::new()
                .jacobian_reverse_into(&ReprojectionTape, &x, (Const(&feat[..]),), &mut y, &mut rev)
                .unwrap();
            assert_close("forward vs reverse", &fwd, &rev, 1e-12);
            assert_close("tape vs generated", &fwd, &generated, 1e-12);
        }
        assert_eq!(d_weight_error(0.8, 1.0), (weight_error_tape(0.8), -1.6));
    }

    #[test]
    fn rotation_by_a_quarter_turn_about_z() {
        let r = rodrigues(&[0.0, 0.0, std::f64::consts::FRAC_PI_2], &[1.0, 0.0, 0.0]);
        assert!((r[0]).abs() < 1e-15 && (r[1] - 1.0).abs() < 1e-15 && r[2].abs() < 1e-15);
    }
}
