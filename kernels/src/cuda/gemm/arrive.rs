//! A's rows arriving on one GPU: the producer side of the producer/consumer overlap, for
//! `augur overlap arrive` (the rows come from a local copy; between GPUs they will come from
//! peers).
//!
//! The local copies are device-to-device `cuMemcpyAsync`s, which the driver runs as kernels:
//! they start only where an SM has room beside the gated GEMM (at most one block of it per SM).
//! The TMA kernels leave that room: the widest takes 157 registers a thread (its tail-split
//! instance 159) of the 168 that 384 threads may have. A build whose 256-wide kernel took 165
//! (168 allocated) left none: on an H200 the copies never started and the gate timed out
//! (bench/results/tail-split-h200-2026-11-29).

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};

use super::super::comm::DeviceBuffer;
use super::{drv, CudaGemm, DeviceGemm, Gate, GemmPrepared};
use crate::gemm::GemmShape;
use crate::KernelError;

/// A's rows arriving on one GPU ([`CudaGemm::arrivals`]): the copy they come from, their flags
/// and the stream that copies them.
pub struct Arrivals {
    staging: CudaSlice<u16>,
    flags: DeviceBuffer,
    pub rows_per_flag: usize,
    copy: Arc<CudaStream>,
}

fn check_cu(what: &str, r: cudarc::driver::sys::CUresult) -> Result<(), KernelError> {
    if r == cudarc::driver::sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(KernelError::Cuda(format!("{what}: {r:?}")))
    }
}

impl CudaGemm {
    /// The producer side of a producer/consumer overlap on this one GPU: A's rows arrive from
    /// a copy of A (`staging`) in `blocks` blocks of equal rows, each block a cuMemcpyAsync
    /// on a second stream followed by its flag ([`Gate`]).
    pub fn arrivals(&self, d: &DeviceGemm, blocks: usize) -> Result<Arrivals, KernelError> {
        let m = d.shape.m;
        if blocks == 0 || blocks > m.max(1) {
            return Err(KernelError::Invalid(format!(
                "{blocks} blocks of rows for {m} rows: 1 to {m}"
            )));
        }
        let s = &self.stream;
        let mut staging = unsafe { s.alloc::<u16>(d.a.len()) }.map_err(drv("alloc"))?;
        // SAFETY: the copy below writes every element before anything reads it.
        s.memcpy_dtod(&d.a, &mut staging).map_err(drv("copy"))?;
        let rows_per_flag = m.div_ceil(blocks);
        let flags = DeviceBuffer::new(&self.ctx, 4 * m.div_ceil(rows_per_flag).max(1))?;
        let copy = self.ctx.new_stream().map_err(drv("cuStreamCreate"))?;
        Ok(Arrivals {
            staging,
            flags,
            rows_per_flag,
            copy,
        })
    }

    /// Enqueue the gated product with every flag already set (no copies): what the gate itself
    /// costs the TMA kernel.
    pub fn launch_gate_open(
        &self,
        d: &mut DeviceGemm,
        p: &GemmPrepared,
        arr: &Arrivals,
    ) -> Result<(), KernelError> {
        let s = &self.stream;
        // SAFETY: the flags buffer holds this many bytes on this stream's device; 0x01 bytes
        // make every flag non-zero.
        unsafe {
            cudarc::driver::result::memset_d8_async(
                arr.flags.ptr(),
                1,
                arr.flags.bytes(),
                s.cu_stream(),
            )
        }
        .map_err(drv("set flags"))?;
        let gate = Gate {
            flags: &arr.flags,
            rows_per_flag: arr.rows_per_flag,
        };
        self.launch_with(d, p, Some(gate), None)
    }

    /// Enqueue on the GEMM's stream: A poisoned (NaN) if `poison_a`, the flags cleared; then on
    /// the copy stream each block of A's rows copied in from the staging copy and its flag set;
    /// and the product: with `gated`, beside the copies, its producer waiting on each block's
    /// flag; without, after the last copy (copy, then GEMM). The copy stream is joined back, so
    /// the whole is one unit of the GEMM's stream (timed and captured as such). Only the TMA
    /// kernel can be gated; `gemm: None` runs the copies alone.
    pub fn launch_arriving(
        &self,
        d: &mut DeviceGemm,
        p: Option<&GemmPrepared>,
        arr: &Arrivals,
        gated: bool,
        poison_a: bool,
    ) -> Result<(), KernelError> {
        use cudarc::driver::{result, sys};
        let s = &self.stream;
        let GemmShape { m, k, .. } = d.shape;
        if poison_a {
            let (a, _g) = d.a.device_ptr_mut(s);
            // SAFETY: `a` holds m x k halves on this stream's device.
            unsafe { result::memset_d8_async(a, 0xFF, m * k * 2, s.cu_stream()) }
                .map_err(drv("poison A"))?;
        }
        // SAFETY: the flags buffer holds this many bytes on this stream's device.
        unsafe { result::memset_d8_async(arr.flags.ptr(), 0, arr.flags.bytes(), s.cu_stream()) }
            .map_err(drv("clear flags"))?;
        arr.copy.join(s).map_err(drv("fork"))?;
        let c = &arr.copy;
        let (src, _gs) = arr.staging.device_ptr(c);
        let (dst, _gd) = d.a.device_ptr(c);
        let flags = arr.flags.ptr();
        let mut r0 = 0;
        let mut b = 0u64;
        while r0 < m {
            let r1 = (r0 + arr.rows_per_flag).min(m);
            let off = (r0 * k * 2) as u64;
            // SAFETY: rows [r0, r1) of two m x k buffers of halves on this device.
            unsafe {
                result::memcpy_dtod_async(dst + off, src + off, (r1 - r0) * k * 2, c.cu_stream())
            }
            .map_err(drv("copy rows"))?;
            // SAFETY: flag b of the flags buffer; the write follows the copy on this stream.
            check_cu("cuStreamWriteValue32", unsafe {
                sys::cuStreamWriteValue32_v2(c.cu_stream(), flags + 4 * b, 1, 0)
            })?;
            r0 = r1;
            b += 1;
        }
        drop((_gs, _gd));
        match p {
            None => s.join(c).map_err(drv("join")),
            Some(p) if gated => {
                let gate = Gate {
                    flags: &arr.flags,
                    rows_per_flag: arr.rows_per_flag,
                };
                self.launch_with(d, p, Some(gate), None)?;
                s.join(c).map_err(drv("join"))
            }
            Some(p) => {
                s.join(c).map_err(drv("join"))?;
                self.launch(d, p)
            }
        }
    }
}
