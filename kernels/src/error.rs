//! Errors of kernel setup and launch.

#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    /// x or y does not match the matrix.
    #[error("{what} has length {got}, but the {rows} x {cols} matrix needs {expected}")]
    Dimension {
        what: &'static str,
        expected: usize,
        got: usize,
        rows: usize,
        cols: usize,
    },

    /// A kernel name that no backend knows.
    #[error("unknown kernel `{name}`; known: {known}")]
    UnknownKernel { name: String, known: String },

    /// A CUDA driver call failed (or the device misbehaved).
    #[error("CUDA: {0}")]
    Cuda(String),

    /// A HIP runtime call failed (or the device misbehaved).
    #[error("HIP: {0}")]
    Hip(String),

    /// The caller asked for something the kernels cannot do (a shape out of range, a pattern
    /// of another collective, a launch before its setup): a mistake to fix in the call, not a
    /// device failure.
    #[error("invalid argument: {0}")]
    Invalid(String),

    /// NVRTC or hiprtc refused a kernel source.
    #[error("{source_name}: {compiler} compile failed:\n{log}")]
    Compile {
        source_name: String,
        compiler: &'static str,
        log: String,
    },

    /// The backend runs here but has no such capability (a CPU has no device gatherer...).
    #[error("{what} is not supported on the {backend} backend")]
    Unsupported { backend: String, what: String },

    /// The backend cannot run here (no device, no driver, not built).
    #[error("backend `{backend}` is not available: {why}")]
    NotAvailable { backend: String, why: String },
}

/// Check that x and y fit an `rows x cols` matrix.
pub fn check_dims(rows: usize, cols: usize, x: usize, y: usize) -> Result<(), KernelError> {
    let err = |what, expected, got| KernelError::Dimension {
        what,
        expected,
        got,
        rows,
        cols,
    };
    if x != cols {
        return Err(err("x", cols, x));
    }
    if y != rows {
        return Err(err("y", rows, y));
    }
    Ok(())
}
