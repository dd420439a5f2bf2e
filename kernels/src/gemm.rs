//! Dense GEMM problems and their exact reference (issue 24: the GEMMs that the GEMM + collective
//! overlap patterns are built on). Host side only; the device kernels are `cuda::gemm`.
//!
//! Inputs are multiples of 1/8 in [-1, 1] (never all zero), exact in f16 and bf16; every product
//! is then a multiple of 1/64 and every sum of up to 2^17 of them is exact in f32, whatever the
//! order. So a device result may differ from the f64 reference only by its final rounding to the
//! 16-bit type, and the check's bound is that rounding: half a unit in the last place.

use augur_features::attention::Dtype;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::KernelError;

/// C (m x n) = A (m x k) Bᵀ, B (n x k) a linear layer's weight as PyTorch stores it (`[out][in]`);
/// all row-major.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GemmShape {
    pub m: usize,
    pub n: usize,
    pub k: usize,
}

impl GemmShape {
    /// Floating-point operations of one product (2 m n k).
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }

    /// The shapes the kernels take: no dimension 0; n and k multiples of 8 (16-byte rows of
    /// 16-bit values); k up to 2^17 (the exactness of the check) and every matrix under 2^31
    /// entries per row index.
    pub fn validate(&self) -> Result<(), KernelError> {
        let GemmShape { m, n, k } = *self;
        if m == 0 || n == 0 || k == 0 {
            return Err(KernelError::Invalid(format!(
                "GEMM {m} x {n} x {k}: a dimension is 0"
            )));
        }
        if n % 8 != 0 || k % 8 != 0 {
            return Err(KernelError::Invalid(format!(
                "GEMM {m} x {n} x {k}: n and k must be multiples of 8 (16-byte rows)"
            )));
        }
        if k > 1 << 17 || m > i32::MAX as usize || n > i32::MAX as usize {
            return Err(KernelError::Invalid(format!(
                "GEMM {m} x {n} x {k}: k at most 131072, m and n below 2^31"
            )));
        }
        Ok(())
    }

    /// Bytes of A, B and C as 16-bit values on the device (u128: no shape overflows it).
    pub fn device_bytes(&self) -> u128 {
        let (m, n, k) = (self.m as u128, self.n as u128, self.k as u128);
        2 * (m * k + n * k + m * n)
    }

    /// `M,N,K` (or `MxNxK`).
    pub fn parse(s: &str) -> Result<GemmShape, KernelError> {
        let p: Vec<&str> = s.split([',', 'x']).map(str::trim).collect();
        let num = |t: &str| {
            t.parse::<usize>().map_err(|_| {
                KernelError::Invalid(format!("GEMM shape `{s}`: `{t}` is not a whole number"))
            })
        };
        match p.as_slice() {
            [m, n, k] => {
                let shape = GemmShape {
                    m: num(m)?,
                    n: num(n)?,
                    k: num(k)?,
                };
                shape.validate()?;
                Ok(shape)
            }
            _ => Err(KernelError::Invalid(format!(
                "GEMM shape `{s}`: expected M,N,K"
            ))),
        }
    }
}

impl std::fmt::Display for GemmShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}x{}", self.m, self.n, self.k)
    }
}

/// A GEMM's inputs, as the f32 values of their 16-bit elements.
#[derive(Debug, Clone)]
pub struct GemmProblem {
    pub shape: GemmShape,
    pub dtype: Dtype,
    pub a: Vec<f32>,
    pub b: Vec<f32>,
}

impl GemmProblem {
    /// Random inputs (seeded): multiples of 1/8 in [-1, 1], none of A's rows or B's columns
    /// all zero in practice (each entry is 0 with probability 1/17).
    pub fn random(shape: GemmShape, dtype: Dtype, seed: u64) -> Result<GemmProblem, KernelError> {
        shape.validate()?;
        if !matches!(dtype, Dtype::F16 | Dtype::Bf16) {
            return Err(KernelError::Invalid(format!(
                "the GEMM kernels take f16 or bf16, not {dtype:?}"
            )));
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut draw = |len: usize| -> Vec<f32> {
            (0..len)
                .map(|_| rng.random_range(-8i32..=8) as f32 / 8.0)
                .collect()
        };
        let a = draw(shape.m * shape.k);
        let b = draw(shape.n * shape.k);
        Ok(GemmProblem { shape, dtype, a, b })
    }

    /// Row `i` of C, exactly (f64): `C[i][c] = Σ_p A[i][p] B[c][p]`.
    pub fn reference_row(&self, i: usize) -> Vec<f64> {
        let GemmShape { n, k, .. } = self.shape;
        let a = &self.a[i * k..(i + 1) * k];
        (0..n)
            .map(|c| {
                let b = &self.b[c * k..(c + 1) * k];
                let mut sum = 0.0f64;
                for (&x, &y) in a.iter().zip(b) {
                    sum += x as f64 * y as f64;
                }
                sum
            })
            .collect()
    }

    /// The rows a check compares: all of them up to `all_up_to` rows, else the first and last
    /// 8, the ones at each block edge of 64 and 128 nearby, and `sampled` more spread evenly.
    pub fn check_rows(&self, all_up_to: usize, sampled: usize) -> Vec<usize> {
        let m = self.shape.m;
        if m <= all_up_to {
            return (0..m).collect();
        }
        let mut rows: Vec<usize> = (0..8).chain(m - 8..m).collect();
        for edge in [63, 64, 127, 128] {
            rows.extend((edge..m).step_by(1024).take(4));
        }
        rows.extend((0..sampled).map(|i| i * m / sampled.max(1)));
        rows.sort_unstable();
        rows.dedup();
        rows.retain(|&r| r < m);
        rows
    }
}

/// Half a unit in the last place of `dtype` relative to a value (f16 2^-11, bf16 2^-8): the
/// largest error that rounding an exact f32 result to it can make, relative to the result.
pub fn rounding_bound(dtype: Dtype) -> f64 {
    match dtype {
        Dtype::F16 => 2f64.powi(-11),
        Dtype::Bf16 => 2f64.powi(-8),
        Dtype::F32 => 2f64.powi(-24),
    }
}

/// Rows `rows` of C, exactly (f64), on the rayon pool.
pub fn reference_rows(p: &GemmProblem, rows: &[usize]) -> Vec<Vec<f64>> {
    use rayon::prelude::*;
    rows.par_iter().map(|&r| p.reference_row(r)).collect()
}

/// The worst error of `got` (rows `rows` of C, each n values, in order) against `want` (their
/// exact values, [`reference_rows`]), relative to the rounding bound of `p`'s type (<= 1
/// passes; NaN, e.g. an output never written over its poison, fails), and where: (ratio, row,
/// column).
pub fn check_rows(
    p: &GemmProblem,
    rows: &[usize],
    want: &[Vec<f64>],
    got: &[f32],
) -> (f64, usize, usize) {
    let n = p.shape.n;
    let bound = rounding_bound(p.dtype);
    let mut worst = (0.0f64, 0, 0);
    for (ri, (&r, want)) in rows.iter().zip(want).enumerate() {
        for (c, &w) in want.iter().enumerate() {
            let g = got[ri * n + c] as f64;
            let e = (g - w).abs();
            let ratio = if e == 0.0 {
                0.0
            } else if w == 0.0 || e.is_nan() {
                f64::INFINITY
            } else {
                e / (w.abs() * bound)
            };
            if ratio > worst.0 {
                worst = (ratio, r, c);
            }
        }
    }
    worst
}

/// The 16-bit pattern of an f32 in `dtype`, rounded to nearest even (finite values in range).
pub fn to_half_bits(dtype: Dtype, v: f32) -> u16 {
    match dtype {
        Dtype::Bf16 => {
            let b = v.to_bits();
            ((b + 0x7fff + ((b >> 16) & 1)) >> 16) as u16
        }
        _ => f32_to_f16(v),
    }
}

/// The f32 value of a 16-bit pattern of `dtype`.
pub fn from_half_bits(dtype: Dtype, h: u16) -> f32 {
    match dtype {
        Dtype::Bf16 => f32::from_bits((h as u32) << 16),
        _ => f16_to_f32(h),
    }
}

fn f16_to_f32(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0f32 } else { 1.0 };
    let exp = ((h >> 10) & 0x1f) as i32;
    let mant = (h & 0x3ff) as f32;
    match exp {
        0 => sign * mant * 2f32.powi(-24),
        31 if mant == 0.0 => sign * f32::INFINITY,
        31 => f32::NAN,
        e => sign * (1.0 + mant / 1024.0) * 2f32.powi(e - 15),
    }
}

fn f32_to_f16(v: f32) -> u16 {
    if v.is_nan() {
        return 0x7e00;
    }
    let sign = if v.is_sign_negative() { 0x8000u16 } else { 0 };
    let a = v.abs();
    if a >= 65520.0 {
        return sign | 0x7c00;
    }
    if a < 2f32.powi(-14) {
        // Subnormal: a multiple of 2^-24, rounded to nearest even.
        let q = a * 2f32.powi(24);
        let r = q.round_ties_even();
        return sign | r as u16;
    }
    let e = a.log2().floor() as i32;
    let e = if 2f32.powi(e) > a { e - 1 } else { e };
    let m = a / 2f32.powi(e) - 1.0; // [0, 1)
    let q = (m * 1024.0).round_ties_even() as u32;
    let (e, q) = if q == 1024 { (e + 1, 0) } else { (e, q) };
    if e > 15 {
        return sign | 0x7c00;
    }
    sign | (((e + 15) as u16) << 10) | q as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_bits_round_trip_and_round_to_nearest_even() {
        for dtype in [Dtype::F16, Dtype::Bf16] {
            for v in [
                0.0f32,
                1.0,
                -0.875,
                0.125,
                3.5,
                -1024.0,
                2048.0,
                2f32.powi(-20),
            ] {
                assert_eq!(
                    from_half_bits(dtype, to_half_bits(dtype, v)),
                    v,
                    "{dtype:?} {v}"
                );
            }
        }
        // 1 + 2^-11 is halfway between two f16 values: to even (1.0); 1 + 3 * 2^-11 rounds up.
        assert_eq!(
            from_half_bits(Dtype::F16, f32_to_f16(1.0 + 2f32.powi(-11))),
            1.0
        );
        assert_eq!(
            from_half_bits(Dtype::F16, f32_to_f16(1.0 + 3.0 * 2f32.powi(-11))),
            1.0 + 2.0 * 2f32.powi(-10)
        );
        assert_eq!(
            from_half_bits(Dtype::Bf16, to_half_bits(Dtype::Bf16, 1.0 + 2f32.powi(-8))),
            1.0
        );
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        // The device poison (every byte 0xFF) reads back as NaN in both types.
        assert!(from_half_bits(Dtype::F16, 0xFFFF).is_nan());
        assert!(from_half_bits(Dtype::Bf16, 0xFFFF).is_nan());
        assert_eq!(f32_to_f16(2f32.powi(-24)), 0x0001);
    }

    #[test]
    fn shapes_parse_and_refuse_what_the_kernels_cannot_take() {
        assert_eq!(
            GemmShape::parse("16,4096,8192").unwrap(),
            GemmShape {
                m: 16,
                n: 4096,
                k: 8192
            }
        );
        assert_eq!(GemmShape::parse("3x8x16").unwrap().to_string(), "3x8x16");
        for bad in ["16,4095,8192", "16,4096,12", "0,8,8", "1,2", "a,8,8"] {
            assert!(GemmShape::parse(bad).is_err(), "{bad}");
        }
    }

    /// The check passes the exact product rounded to the type, and catches one wrong value,
    /// a NaN left by the poison, and a sign error.
    #[test]
    fn the_check_passes_the_rounded_product_and_catches_errors() {
        let shape = GemmShape {
            m: 20,
            n: 16,
            k: 24,
        };
        for dtype in [Dtype::F16, Dtype::Bf16] {
            let p = GemmProblem::random(shape, dtype, 7).unwrap();
            assert!(p.a.iter().any(|&v| v != 0.0) && p.b.iter().any(|&v| v != 0.0));
            let rows = p.check_rows(64, 0);
            assert_eq!(rows.len(), 20);
            let mut got: Vec<f32> = rows
                .iter()
                .flat_map(|&r| p.reference_row(r))
                .map(|v| from_half_bits(dtype, to_half_bits(dtype, v as f32)))
                .collect();
            let want = reference_rows(&p, &rows);
            assert!(check_rows(&p, &rows, &want, &got).0 <= 1.0);
            let i = got.iter().position(|&v| v.abs() > 1.0).unwrap();
            let keep = got[i];
            got[i] = keep * 1.01;
            assert!(check_rows(&p, &rows, &want, &got).0 > 1.0);
            got[i] = f32::NAN;
            assert!(check_rows(&p, &rows, &want, &got).0 > 1.0);
            got[i] = -keep;
            let (ratio, r, c) = check_rows(&p, &rows, &want, &got);
            assert!(ratio > 1.0 && r * shape.n + c == i);
        }
    }

    #[test]
    fn check_rows_cover_the_edges() {
        let p = GemmProblem {
            shape: GemmShape {
                m: 5000,
                n: 8,
                k: 8,
            },
            dtype: Dtype::Bf16,
            a: vec![],
            b: vec![],
        };
        let rows = p.check_rows(64, 16);
        for r in [0, 7, 63, 64, 127, 128, 4992, 4999] {
            assert!(rows.contains(&r), "{r}");
        }
        assert!(rows.windows(2).all(|w| w[0] < w[1]));
    }
}
