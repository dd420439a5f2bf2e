//! Value types the matrices and kernels are generic over.

/// A real floating-point value type stored in a matrix: `f32` or `f64`.
pub trait Scalar:
    num_traits::Float
    + num_traits::NumAssign
    + Default
    + Send
    + Sync
    + std::fmt::Debug
    + std::fmt::Display
    + std::iter::Sum
    + 'static
{
    /// Name used on the command line and in reports (`f32`, `f64`).
    const NAME: &'static str;
    /// Machine epsilon.
    const EPS: f64;
    fn from_f64(v: f64) -> Self;
    fn as_f64(self) -> f64;
}

impl Scalar for f32 {
    const NAME: &'static str = "f32";
    const EPS: f64 = f32::EPSILON as f64;
    #[inline]
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    #[inline]
    fn as_f64(self) -> f64 {
        self as f64
    }
}

impl Scalar for f64 {
    const NAME: &'static str = "f64";
    const EPS: f64 = f64::EPSILON;
    #[inline]
    fn from_f64(v: f64) -> Self {
        v
    }
    #[inline]
    fn as_f64(self) -> f64 {
        self
    }
}
