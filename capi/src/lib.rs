//! augur's C API (`include/augur.h`, generated from this file by cbindgen): make an SpMV plan
//! from CSR arrays (int32 indices, f32 or f64 values), run it on host vectors, read the kernel it
//! chose and why, destroy it. Every call returns an [`AugurStatus`]; the message of the last
//! failure on the calling thread is [`augur_last_error`]. A panic inside augur is caught and
//! returned as `AUGUR_STATUS_INTERNAL`, never unwound into C.
//!
//! `augur_plan_run` takes host vectors (a GPU plan copies them); `augur_plan_run_device` takes
//! device pointers and the caller's CUDA stream (no copies, no host wait).
//! `augur_plan_create_device` takes a matrix already in CUDA memory (copied on the GPU). Not in
//! this version: the models' export from C (the `augur` CLI and the Python package do that).

use std::cell::RefCell;
use std::ffi::{c_char, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use augur_lib::kernels::KernelError;
use augur_lib::{AugurError, Backend, GatherPolicy, OwnedPlan, PlanOptions};

/// What a call did.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AugurStatus {
    /// Success.
    Ok = 0,
    /// An argument augur cannot take (a null pointer, a bad CSR array, a wrong length, an
    /// unknown kernel or model): the caller's to fix; the message names it.
    Invalid = 1,
    /// The backend asked for is not available here (no GPU, no driver or library).
    Unavailable = 2,
    /// The device failed (a CUDA/HIP error, out of memory).
    Device = 3,
    /// A bug in augur (a panic, caught): please report the message.
    Internal = 4,
}

/// Where a plan runs.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AugurBackend {
    /// A CUDA GPU when one is usable, else the CPU.
    Auto = 0,
    Cpu = 1,
    Cuda = 2,
    /// AMD GPUs through HIP (compiled, not yet run on AMD hardware).
    Hip = 3,
}

/// The values' type.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AugurValueType {
    F32 = 0,
    F64 = 1,
}

/// Which features a plan computes before choosing.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AugurGather {
    /// The model's policy decides from the shape and the iteration count.
    Auto = 0,
    /// The shape only (free).
    Never = 1,
    /// A fixed-size sample of rows (bounded cost).
    Sample = 2,
    /// A full pass over the pattern.
    Always = 3,
}

/// How a plan is made; start from `augur_plan_options_default()`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AugurPlanOptions {
    pub backend: AugurBackend,
    /// GPU ordinal (CUDA or HIP backends).
    pub device: i32,
    /// How many products the caller expects to run (the choice depends on it).
    pub iterations: u32,
    pub gather: AugurGather,
    /// A kernel name to use instead of the model's choice, or NULL.
    pub kernel: *const c_char,
}

/// A plan: the matrix (copied), the chosen kernel set up on the backend, the decision's text.
pub struct AugurPlan {
    plan: OwnedPlan,
    explanation: CString,
    kernel: CString,
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_error(msg: &str) {
    let c = CString::new(msg.replace('\0', " ")).expect("NUL bytes replaced");
    LAST_ERROR.with(|e| *e.borrow_mut() = c);
}

fn status_of(e: &AugurError) -> AugurStatus {
    match e {
        AugurError::Kernel(KernelError::NotAvailable { .. }) => AugurStatus::Unavailable,
        AugurError::Kernel(
            KernelError::Cuda(_) | KernelError::Hip(_) | KernelError::Compile { .. },
        )
        | AugurError::Nccl(_) => AugurStatus::Device,
        AugurError::NotEnoughGpus { .. } => AugurStatus::Unavailable,
        // The caller's arguments: shapes, lengths, kernel names, arrays, models.
        _ => AugurStatus::Invalid,
    }
}

/// Run `f`, turning an error or a panic into a status and the thread's last error.
fn guard(f: impl FnOnce() -> Result<(), (AugurStatus, String)>) -> AugurStatus {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => AugurStatus::Ok,
        Ok(Err((s, msg))) => {
            set_error(&msg);
            s
        }
        Err(p) => {
            let what = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            set_error(&format!("internal error in augur (please report): {what}"));
            AugurStatus::Internal
        }
    }
}

fn invalid(msg: impl Into<String>) -> (AugurStatus, String) {
    (AugurStatus::Invalid, msg.into())
}

fn augur_err(e: AugurError) -> (AugurStatus, String) {
    (status_of(&e), e.to_string())
}

/// The message of the last failed call on this thread ("" if none failed). Valid until the
/// next failing call on this thread.
#[no_mangle]
pub extern "C" fn augur_last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

/// augur's version ("0.1.0").
#[no_mangle]
pub extern "C" fn augur_version() -> *const c_char {
    static V: &CStr =
        match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
            Ok(v) => v,
            Err(_) => panic!("version without NUL"),
        };
    V.as_ptr()
}

/// Defaults: backend auto, device 0, 1 iteration, gather auto, the model's kernel.
#[no_mangle]
pub extern "C" fn augur_plan_options_default() -> AugurPlanOptions {
    AugurPlanOptions {
        backend: AugurBackend::Auto,
        device: 0,
        iterations: 1,
        gather: AugurGather::Auto,
        kernel: std::ptr::null(),
    }
}

/// A slice of `len` elements at `p`; null is allowed only for an empty slice.
///
/// # Safety
/// Non-null `p` must point at `len` readable elements.
unsafe fn slice<'a, T>(
    p: *const T,
    len: usize,
    what: &str,
) -> Result<&'a [T], (AugurStatus, String)> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(invalid(format!(
            "{what} is NULL but must hold {len} entries"
        )));
    }
    // SAFETY: the caller's promise (the header documents the lengths).
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}

/// The backend and plan options of a caller's options struct (NULL: the defaults). `device`:
/// the matrix is in CUDA memory, so the backend is CUDA (auto means CUDA; others are refused).
///
/// # Safety
/// Non-null `options` must point at an `AugurPlanOptions` whose `kernel` is NULL or a
/// NUL-terminated string.
unsafe fn backend_and_options(
    options: *const AugurPlanOptions,
    device: bool,
) -> Result<(Backend, PlanOptions), (AugurStatus, String)> {
    let o = if options.is_null() {
        augur_plan_options_default()
    } else {
        // SAFETY: non-null, the caller's struct.
        unsafe { *options }
    };
    if o.device < 0 {
        return Err(invalid(format!("device = {}: must be >= 0", o.device)));
    }
    let ordinal = o.device as usize;
    let backend = match (o.backend, device) {
        (AugurBackend::Auto | AugurBackend::Cuda, true) => {
            Backend::cuda(ordinal).map_err(augur_err)?
        }
        (other, true) => {
            return Err(invalid(format!(
                "a matrix in CUDA memory needs the CUDA backend (options.backend is {other:?})"
            )))
        }
        (AugurBackend::Auto, false) => Backend::auto(),
        (AugurBackend::Cpu, false) => Backend::cpu(),
        (AugurBackend::Cuda, false) => Backend::cuda(ordinal).map_err(augur_err)?,
        (AugurBackend::Hip, false) => Backend::hip(ordinal).map_err(augur_err)?,
    };
    let mut opts = PlanOptions::default()
        .expected_iterations(o.iterations.max(1))
        .gather(match o.gather {
            AugurGather::Auto => GatherPolicy::Auto,
            AugurGather::Never => GatherPolicy::Never,
            AugurGather::Sample => GatherPolicy::Sample,
            AugurGather::Always => GatherPolicy::Always,
        });
    if !o.kernel.is_null() {
        // SAFETY: non-null, a NUL-terminated string by the header's contract.
        let k = unsafe { CStr::from_ptr(o.kernel) }
            .to_str()
            .map_err(|_| invalid("options.kernel is not UTF-8"))?;
        opts = opts.kernel(k);
    }
    Ok((backend, opts))
}

/// Set the caller's plan out-pointer to NULL (what it holds after a failure).
///
/// # Safety
/// Non-null `plan` must be writable.
unsafe fn clear_out(plan: *mut *mut AugurPlan) -> Result<(), (AugurStatus, String)> {
    if plan.is_null() {
        return Err(invalid("plan (the output pointer) is NULL"));
    }
    // SAFETY: checked non-null; the caller's out-pointer.
    unsafe { *plan = std::ptr::null_mut() };
    Ok(())
}

/// The C handle of a made plan: its decision's text kept beside it.
fn handle(p: OwnedPlan) -> *mut AugurPlan {
    let d = p.decision();
    let text = |s: String| CString::new(s.replace('\0', " ")).expect("NUL bytes replaced");
    Box::into_raw(Box::new(AugurPlan {
        explanation: text(d.to_string()),
        kernel: text(d.kernel.clone()),
        plan: p,
    }))
}

/// Make a plan for the `rows` x `cols` CSR matrix (`row_ptr`: rows + 1 entries starting at 0;
/// `col_idx` and `values`: row_ptr[rows] entries; `values` of `value_type`). The arrays are
/// copied: the caller may free them after this returns. Rows with unsorted or repeated column
/// indices are sorted and summed (the explanation says so). `options` may be NULL (defaults).
/// On success `*plan` is set; destroy it with `augur_plan_destroy`.
///
/// # Safety
/// The pointers must hold the entries described above; `plan` must be writable.
#[no_mangle]
pub unsafe extern "C" fn augur_plan_create(
    rows: i32,
    cols: i32,
    row_ptr: *const i32,
    col_idx: *const i32,
    values: *const c_void,
    value_type: AugurValueType,
    options: *const AugurPlanOptions,
    plan: *mut *mut AugurPlan,
) -> AugurStatus {
    guard(|| {
        // SAFETY: the caller's out-pointer (checked for NULL inside).
        unsafe { clear_out(plan)? };
        if rows < 0 || cols < 0 {
            return Err(invalid(format!(
                "rows = {rows}, cols = {cols}: must be >= 0"
            )));
        }
        let (rows, cols) = (rows as usize, cols as usize);
        // SAFETY: the caller's arrays, of the lengths the header gives.
        let ptr = unsafe { slice(row_ptr, rows + 1, "row_ptr")? };
        let nnz = *ptr.last().unwrap_or(&0);
        if nnz < 0 {
            return Err(invalid(format!("row_ptr[{rows}] = {nnz} is negative")));
        }
        let idx = unsafe { slice(col_idx, nnz as usize, "col_idx")? };
        // SAFETY: the caller's options struct or NULL.
        let (backend, opts) = unsafe { backend_and_options(options, false)? };
        let name = format!("the {rows} x {cols} CSR matrix");
        let arrays_plan = match value_type {
            AugurValueType::F32 => {
                let v = unsafe { slice(values.cast::<f32>(), idx.len(), "values")? };
                OwnedPlan::from_arrays(&name, (rows, cols), (ptr, idx, v), &backend, opts)
            }
            AugurValueType::F64 => {
                let v = unsafe { slice(values.cast::<f64>(), idx.len(), "values")? };
                OwnedPlan::from_arrays(&name, (rows, cols), (ptr, idx, v), &backend, opts)
            }
        }
        .map_err(augur_err)?;
        // SAFETY: checked non-null above.
        unsafe { *plan = handle(arrays_plan) };
        Ok(())
    })
}

/// Make a plan for a CSR matrix already in CUDA memory (the CUDA backend; `options.backend` auto
/// or CUDA): `row_ptr` (rows + 1 entries), `col_idx` and `values` (`nnz` entries of
/// `value_type`) are device pointers of the plan's GPU. They are copied on the device after the
/// work already on `stream` (as `augur_plan_run_device`; NULL: the legacy default stream); the
/// copy is done when this returns, so the caller may free them then.
/// The row pointers' ends (0 and nnz) are checked; features are the known ones or gathered on
/// the GPU (a sampled tier is read as gathered, and the explanation says so).
///
/// # Safety
/// The pointers must be device allocations of that GPU with those entries and a valid CSR
/// structure (sorted, unique column indices below cols: out-of-range ones fault the GPU);
/// `stream` a live stream of that GPU; `plan` writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn augur_plan_create_device(
    rows: i32,
    cols: i32,
    nnz: i64,
    row_ptr: *const i32,
    col_idx: *const i32,
    values: *const c_void,
    value_type: AugurValueType,
    stream: *mut c_void,
    options: *const AugurPlanOptions,
    plan: *mut *mut AugurPlan,
) -> AugurStatus {
    guard(|| {
        // SAFETY: the caller's out-pointer (checked for NULL inside).
        unsafe { clear_out(plan)? };
        if rows < 0 || cols < 0 || nnz < 0 {
            return Err(invalid(format!(
                "rows = {rows}, cols = {cols}, nnz = {nnz}: must be >= 0"
            )));
        }
        for (what, p, needed) in [
            ("row_ptr", row_ptr.cast::<c_void>(), true),
            ("col_idx", col_idx.cast(), nnz > 0),
            ("values", values, nnz > 0),
        ] {
            if needed && p.is_null() {
                return Err(invalid(format!("{what} is NULL")));
            }
        }
        // SAFETY: the caller's options struct or NULL.
        let (backend, opts) = unsafe { backend_and_options(options, true)? };
        let shape = (rows as usize, cols as usize, nnz as usize);
        let ptrs = (row_ptr as u64, col_idx as u64, values as u64);
        let s = Some(if stream.is_null() { 1 } else { stream as u64 });
        // SAFETY: the caller's promise, passed on (the plan checks the addresses are device
        // memory of its GPU, and the row pointers' ends).
        let made = match value_type {
            AugurValueType::F32 => unsafe {
                OwnedPlan::from_cuda_csr::<f32>(shape, ptrs, s, &backend, opts)
            },
            AugurValueType::F64 => unsafe {
                OwnedPlan::from_cuda_csr::<f64>(shape, ptrs, s, &backend, opts)
            },
        }
        .map_err(augur_err)?;
        // SAFETY: checked non-null above.
        unsafe { *plan = handle(made) };
        Ok(())
    })
}

/// `y = A x` on host vectors of the plan's value type: `x` holds cols entries, `y` rows. A GPU
/// plan copies them to and from the device; done when this returns.
///
/// # Safety
/// `plan` from `augur_plan_create`; `x` and `y` of those lengths (they must not overlap).
#[no_mangle]
pub unsafe extern "C" fn augur_plan_run(
    plan: *mut AugurPlan,
    x: *const c_void,
    y: *mut c_void,
) -> AugurStatus {
    guard(|| {
        if plan.is_null() {
            return Err(invalid("plan is NULL"));
        }
        // SAFETY: a plan made by augur_plan_create, not yet destroyed (the caller's promise).
        let p = unsafe { &mut (*plan).plan };
        let (rows, cols, _) = p.shape();
        if y.is_null() && rows > 0 {
            return Err(invalid(format!("y is NULL but must hold {rows} entries")));
        }
        // SAFETY: the caller's vectors of the plan's type and these lengths.
        match p.precision() {
            "f32" => unsafe { run_on::<f32>(p, (rows, cols), x, y) },
            _ => unsafe { run_on::<f64>(p, (rows, cols), x, y) },
        }
    })
}

/// `y = A x` on device memory (a plan with the CUDA backend): `x` holds cols values of the
/// plan's type and `y` rows, on the plan's GPU. Nothing is copied and the host does not wait: the
/// product runs after the work already on `stream` (a `cudaStream_t`/`CUstream` of the GPU's
/// primary context, as the CUDA runtime uses; NULL: the legacy default stream) and before the
/// work enqueued on it next.
///
/// # Safety
/// `plan` from `augur_plan_create`; `x` and `y` device allocations of those lengths, not
/// overlapping, alive until the product has run; `stream` a live stream of that GPU.
#[no_mangle]
pub unsafe extern "C" fn augur_plan_run_device(
    plan: *mut AugurPlan,
    x: *const c_void,
    y: *mut c_void,
    stream: *mut c_void,
) -> AugurStatus {
    guard(|| {
        if plan.is_null() {
            return Err(invalid("plan is NULL"));
        }
        // SAFETY: a live plan (the caller's promise).
        let p = unsafe { &mut (*plan).plan };
        // NULL is the legacy default stream, which the driver also calls CU_STREAM_LEGACY (1).
        let s = if stream.is_null() { 1 } else { stream as u64 };
        // SAFETY: the caller's promise, passed on (the plan checks the addresses are device
        // memory of its GPU).
        unsafe { p.launch_cuda(x as u64, y as u64, Some(s)) }.map_err(augur_err)
    })
}

/// `y = A x` on the caller's host vectors of T (`x` cols entries, `y` rows).
///
/// # Safety
/// `x` and `y` point at that many values of T (or are NULL for none).
unsafe fn run_on<T: augur_lib::PlanScalar>(
    p: &mut OwnedPlan,
    (rows, cols): (usize, usize),
    x: *const c_void,
    y: *mut c_void,
) -> Result<(), (AugurStatus, String)> {
    let xs = unsafe { slice(x.cast::<T>(), cols, "x")? };
    let ys: &mut [T] = if rows == 0 {
        &mut []
    } else {
        // SAFETY: non-null (checked by the caller), rows entries (the caller's promise).
        unsafe { std::slice::from_raw_parts_mut(y.cast(), rows) }
    };
    p.run(xs, ys).map_err(augur_err)
}

/// The kernel the plan runs ("scalar", "vector8", "cusparse_alg1", ...); owned by the plan.
///
/// # Safety
/// `plan` from `augur_plan_create` (or NULL: returns "").
#[no_mangle]
pub unsafe extern "C" fn augur_plan_kernel(plan: *const AugurPlan) -> *const c_char {
    if plan.is_null() {
        return c"".as_ptr();
    }
    // SAFETY: the caller's live plan.
    unsafe { (*plan).kernel.as_ptr() }
}

/// Why the plan runs that kernel: the tier of features read, the path through the tree, notes;
/// several lines, owned by the plan.
///
/// # Safety
/// `plan` from `augur_plan_create` (or NULL: returns "").
#[no_mangle]
pub unsafe extern "C" fn augur_plan_explain(plan: *const AugurPlan) -> *const c_char {
    if plan.is_null() {
        return c"".as_ptr();
    }
    // SAFETY: the caller's live plan.
    unsafe { (*plan).explanation.as_ptr() }
}

/// Seconds making the plan took (features, choice, upload, kernel setup).
///
/// # Safety
/// `plan` from `augur_plan_create` (or NULL: returns 0).
#[no_mangle]
pub unsafe extern "C" fn augur_plan_setup_seconds(plan: *const AugurPlan) -> f64 {
    if plan.is_null() {
        return 0.0;
    }
    // SAFETY: the caller's live plan.
    unsafe { (*plan).plan.setup().total_s }
}

/// Free a plan (NULL is allowed and does nothing).
///
/// # Safety
/// `plan` from `augur_plan_create`, not used after this.
#[no_mangle]
pub unsafe extern "C" fn augur_plan_destroy(plan: *mut AugurPlan) {
    if plan.is_null() {
        return;
    }
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: made by Box::into_raw in augur_plan_create, freed once.
        drop(unsafe { Box::from_raw(plan) });
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn last() -> String {
        // SAFETY: a NUL-terminated string of this thread.
        unsafe { CStr::from_ptr(augur_last_error()) }
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn a_plan_from_c_arrays_runs_and_explains() {
        // [[2, 0, 1], [0, 3, 0], [4, 0, 5]]
        let ptr = [0i32, 2, 3, 5];
        let idx = [0i32, 2, 1, 0, 2];
        let val = [2.0f32, 1.0, 3.0, 4.0, 5.0];
        let mut o = augur_plan_options_default();
        o.backend = AugurBackend::Cpu;
        o.iterations = 10;
        let mut p: *mut AugurPlan = std::ptr::null_mut();
        let s = unsafe {
            augur_plan_create(
                3,
                3,
                ptr.as_ptr(),
                idx.as_ptr(),
                val.as_ptr().cast(),
                AugurValueType::F32,
                &o,
                &mut p,
            )
        };
        assert_eq!(s, AugurStatus::Ok, "{}", last());
        let x = [1.0f32, 2.0, 3.0];
        let mut y = [f32::NAN; 3];
        let s = unsafe { augur_plan_run(p, x.as_ptr().cast(), y.as_mut_ptr().cast()) };
        assert_eq!(s, AugurStatus::Ok, "{}", last());
        assert_eq!(y, [5.0, 6.0, 19.0]);
        let kernel = unsafe { CStr::from_ptr(augur_plan_kernel(p)) }
            .to_str()
            .unwrap();
        let why = unsafe { CStr::from_ptr(augur_plan_explain(p)) }
            .to_str()
            .unwrap();
        assert!(why.contains(kernel), "{why}");
        assert!(unsafe { augur_plan_setup_seconds(p) } > 0.0);
        // Device pointers on a CPU plan: refused, not dereferenced.
        let s = unsafe {
            augur_plan_run_device(
                p,
                x.as_ptr().cast(),
                y.as_mut_ptr().cast(),
                std::ptr::null_mut(),
            )
        };
        assert_eq!(s, AugurStatus::Invalid);
        assert!(last().contains("CUDA only"), "{}", last());
        unsafe { augur_plan_destroy(p) };
        unsafe { augur_plan_destroy(std::ptr::null_mut()) };
    }

    #[test]
    fn bad_input_is_a_status_and_a_message() {
        let mut p: *mut AugurPlan = std::ptr::null_mut();
        let ptr = [0i32, 1, 3];
        let idx = [0i32, 5, 1];
        let val = [1.0f64; 3];
        let s = unsafe {
            augur_plan_create(
                2,
                2,
                ptr.as_ptr(),
                idx.as_ptr(),
                val.as_ptr().cast(),
                AugurValueType::F64,
                std::ptr::null(),
                &mut p,
            )
        };
        assert_eq!(s, AugurStatus::Invalid);
        assert!(p.is_null());
        assert!(
            last().contains("indices[1] = 5 (row 1) is outside the 2 columns"),
            "{}",
            last()
        );
        let s = unsafe {
            augur_plan_create(
                2,
                2,
                std::ptr::null(),
                idx.as_ptr(),
                val.as_ptr().cast(),
                AugurValueType::F64,
                std::ptr::null(),
                &mut p,
            )
        };
        assert_eq!(s, AugurStatus::Invalid);
        assert!(last().contains("row_ptr is NULL"), "{}", last());
        let s =
            unsafe { augur_plan_run(std::ptr::null_mut(), std::ptr::null(), std::ptr::null_mut()) };
        assert_eq!(s, AugurStatus::Invalid);
        let mut o = augur_plan_options_default();
        o.backend = AugurBackend::Cpu;
        o.kernel = c"no_such_kernel".as_ptr();
        let good = [0i32, 1, 2];
        let s = unsafe {
            augur_plan_create(
                2,
                2,
                good.as_ptr(),
                [0i32, 1].as_ptr(),
                val.as_ptr().cast(),
                AugurValueType::F64,
                &o,
                &mut p,
            )
        };
        assert_eq!(s, AugurStatus::Invalid, "{}", last());
        assert!(last().contains("no_such_kernel"), "{}", last());
    }

    #[test]
    fn a_device_matrix_needs_cuda_and_device_memory() {
        let mut p: *mut AugurPlan = std::ptr::null_mut();
        let (ptr, idx, val) = ([0i32, 1, 2], [0i32, 1], [1.0f32; 2]);
        let create = |o: &AugurPlanOptions, p: &mut *mut AugurPlan, row_ptr: *const i32| unsafe {
            augur_plan_create_device(
                2,
                2,
                2,
                row_ptr,
                idx.as_ptr(),
                val.as_ptr().cast(),
                AugurValueType::F32,
                std::ptr::null_mut(),
                o,
                p,
            )
        };
        let mut o = augur_plan_options_default();
        o.backend = AugurBackend::Cpu;
        assert_eq!(create(&o, &mut p, ptr.as_ptr()), AugurStatus::Invalid);
        assert!(last().contains("needs the CUDA backend"), "{}", last());
        let o = augur_plan_options_default();
        assert_eq!(create(&o, &mut p, std::ptr::null()), AugurStatus::Invalid);
        assert!(last().contains("row_ptr is NULL"), "{}", last());
        // Host arrays: no CUDA here (unavailable), or refused as host memory on a GPU machine.
        let s = create(&o, &mut p, ptr.as_ptr());
        assert!(
            matches!(s, AugurStatus::Unavailable | AugurStatus::Invalid),
            "{s:?}: {}",
            last()
        );
        assert!(p.is_null() && !last().is_empty());
    }

    /// include/augur.h is what cbindgen makes of this crate now.
    #[test]
    fn the_header_is_current() {
        let dir = env!("CARGO_MANIFEST_DIR");
        let config = cbindgen::Config::from_file(format!("{dir}/cbindgen.toml")).unwrap();
        let mut out = Vec::new();
        cbindgen::Builder::new()
            .with_crate(dir)
            .with_config(config)
            .generate()
            .expect("cbindgen")
            .write(&mut out);
        let have = std::fs::read_to_string(format!("{dir}/include/augur.h")).unwrap_or_default();
        let want = String::from_utf8(out).unwrap();
        if have != want {
            if std::env::var_os("AUGUR_BLESS").is_some() {
                std::fs::write(format!("{dir}/include/augur.h"), &want).unwrap();
                return;
            }
            panic!("capi/include/augur.h is stale: run `AUGUR_BLESS=1 cargo test -p augur-capi header`");
        }
    }
}
