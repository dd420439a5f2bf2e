//! Decode attention on the GPU (`kernels/cuda/attention.cu`): upload a [`DecodeBatch`], run a
//! schedule, read o back (issue 8; checked and timed on an H200, see docs/BENCHMARKS.md).

use std::sync::Arc;

use augur_features::attention::Dtype;
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, DeviceRepr,
    LaunchConfig, PushKernelArg,
};

use super::{drv, module};
use crate::attention::{half_bits, DecodeBatch, KvStore};
use crate::KernelError;

/// Warps per block (WARPS in attention.cu) and most query heads per KV head (GMAX).
const WARPS: u32 = 4;
/// decode_combine's threads per (sequence, head) and the record weights it holds at once.
const COMBINE_THREADS: u32 = 256;
const COMBINE_WEIGHTS: usize = 2048;
pub const GMAX: usize = 8;

/// A decode-attention schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Schedule {
    /// One block per (sequence, query head).
    Head,
    /// One block per (sequence, KV head) with all its query heads.
    Gqa,
    /// Split-KV: that many splits per (sequence, KV head), then a combine.
    Split(u32),
    /// The batch's tokens in chunks of this many, regardless of sequences, then a combine; 0:
    /// chunks sized to the GPU ([`balanced_chunk`]).
    Balanced(u32),
}

impl Schedule {
    /// The schedules: head, gqa, split-2..128 (issue 8 asks for 2..32; 64 and 128 serve long
    /// sequences with few KV heads), balanced (chunks sized to the GPU).
    pub fn all() -> Vec<Schedule> {
        let mut v = vec![Schedule::Head, Schedule::Gqa];
        v.extend([2, 4, 8, 16, 32, 64, 128].map(Schedule::Split));
        v.push(Schedule::Balanced(0));
        v
    }

    pub fn name(self) -> String {
        match self {
            Schedule::Head => "head".into(),
            Schedule::Gqa => "gqa".into(),
            Schedule::Split(s) => format!("split-{s}"),
            Schedule::Balanced(0) => "balanced".into(),
            Schedule::Balanced(c) => format!("balanced-{c}"),
        }
    }

    /// Splits or chunk size (0 for head and gqa).
    pub fn param(self) -> u32 {
        match self {
            Schedule::Split(n) | Schedule::Balanced(n) => n,
            _ => 0,
        }
    }

    pub fn parse(s: &str) -> Option<Schedule> {
        match s {
            "head" => Some(Schedule::Head),
            "gqa" => Some(Schedule::Gqa),
            "balanced" => Some(Schedule::Balanced(0)),
            _ => {
                let (k, n) = s.split_once('-')?;
                let n: u32 = n.parse().ok().filter(|&n| n >= 1)?;
                match k {
                    "split" => Some(Schedule::Split(n)),
                    "balanced" => Some(Schedule::Balanced(n)),
                    _ => None,
                }
            }
        }
    }
}

/// Blocks per SM the balanced schedule's chunk size aims at (one wave of resident blocks).
const BALANCED_BLOCKS_PER_SM: usize = 4;

/// The chunk (tokens) of the balanced schedule with chunk 0 on a GPU of `sms` multiprocessors:
/// the batch's tokens x KV heads cut into about one wave of `sms` x 4 blocks, rounded up to 64
/// tokens (a block's tile), at least 64.
pub fn balanced_chunk(lens: &[usize], kv_heads: usize, sms: usize) -> usize {
    let total: usize = lens.iter().sum();
    let blocks = (sms.max(1) * BALANCED_BLOCKS_PER_SM).div_ceil(kv_heads.max(1));
    total.div_ceil(blocks).next_multiple_of(64).max(64)
}

/// The partial records of a balanced schedule: for each sequence, its first record; a sequence
/// of `len` tokens starting at global token `start` spans chunks `start / chunk ..= (start +
/// len - 1) / chunk` (none when empty). Returns (cu_lens, rec_base); the last rec_base entry is
/// the record count.
pub fn balanced_records(lens: &[usize], chunk: usize) -> (Vec<i64>, Vec<i32>) {
    let mut cu = vec![0i64];
    let mut rec = vec![0i32];
    for &l in lens {
        let start = *cu.last().expect("one") as usize;
        let n = if l == 0 {
            0
        } else {
            (start + l - 1) / chunk - start / chunk + 1
        };
        cu.push((start + l) as i64);
        rec.push(rec.last().expect("one") + n as i32);
    }
    (cu, rec)
}

/// The Kv struct of attention.cu.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct KvArg {
    k: u64,
    v: u64,
    lens: u64,
    offsets: u64,
    table: u64,
    max_pages: i32,
    page: i32,
    kv_heads: i32,
}

// SAFETY: plain old data laid out as the C struct.
unsafe impl DeviceRepr for KvArg {}

/// A schedule made ready for a batch: its kernels, grid and workspace.
pub struct Prepared {
    pub sched: Schedule,
    main: CudaFunction,
    combine: CudaFunction,
    grid: (u32, u32, u32),
    /// Partial o and lse records (split, balanced).
    partial: Option<(CudaSlice<f32>, CudaSlice<f32>)>,
    /// cu_lens and rec_base (balanced).
    tables: Option<(CudaSlice<i64>, CudaSlice<i32>)>,
    /// Splits (split) or the chunk in tokens (balanced; sized here when the schedule says 0).
    pub param: u32,
}

/// Dynamic shared memory of a block (attention.cu's Smem): per warp two stages of a K and a V
/// tile of 16 rows of head_dim + 8 halves.
fn shared_bytes(head_dim: usize) -> usize {
    WARPS as usize * 4 * 16 * (head_dim + 8) * 2
}

fn kind(d: &DeviceBatch) -> &'static str {
    if d.dtype == Dtype::F16 {
        "f16"
    } else {
        "bf16"
    }
}

/// A batch on the GPU, with room for the output.
pub struct DeviceBatch {
    batch: usize,
    q_heads: usize,
    kv_heads: usize,
    head_dim: usize,
    dtype: Dtype,
    lens: Vec<usize>,
    q: CudaSlice<u16>,
    k: CudaSlice<u16>,
    v: CudaSlice<u16>,
    d_lens: CudaSlice<i32>,
    offsets: Option<CudaSlice<i32>>,
    table: Option<(CudaSlice<i32>, usize, usize)>,
    pub o: CudaSlice<f32>,
    pub lse: CudaSlice<f32>,
}

/// The attention kernels on one GPU.
pub struct CudaAttention {
    ctx: Arc<CudaContext>,
    /// Multiprocessors (the balanced schedule's chunk size).
    sms: usize,
    stream: Arc<CudaStream>,
    module: Arc<CudaModule>,
}

impl CudaAttention {
    pub fn new(ordinal: usize) -> Result<CudaAttention, KernelError> {
        let dev = super::device_info(ordinal)?;
        let ctx = CudaContext::new(ordinal).map_err(drv("cuCtxCreate"))?;
        let stream = super::own_stream(&ctx)?;
        let (ptx, _) = module::ptx(module::ATTENTION, dev.compute_capability)?;
        let module = ctx.load_module(ptx).map_err(drv("cuModuleLoadData"))?;
        Ok(CudaAttention {
            ctx,
            sms: dev.multiprocessors.max(1) as usize,
            stream,
            module,
        })
    }

    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    fn func(&self, name: &str) -> Result<CudaFunction, KernelError> {
        self.module
            .load_function(name)
            .map_err(|e| KernelError::Cuda(format!("kernel {name}: {e}")))
    }

    /// Upload `b` (inputs as 16-bit floats of its dtype) with a poisoned (NaN) output.
    pub fn upload(&self, b: &DecodeBatch) -> Result<DeviceBatch, KernelError> {
        let sh = &b.shape;
        let dtype = sh.dtype;
        if !matches!(dtype, Dtype::F16 | Dtype::Bf16) {
            return Err(KernelError::Cuda(format!(
                "decode attention takes f16 or bf16 inputs, not {dtype:?}"
            )));
        }
        if ![64, 128, 256].contains(&sh.head_dim) {
            return Err(KernelError::Cuda(format!(
                "head_dim {} (64, 128 or 256)",
                sh.head_dim
            )));
        }
        if sh.q_heads / sh.kv_heads > GMAX {
            return Err(KernelError::Cuda(format!(
                "{} query heads per KV head; at most {GMAX}",
                sh.q_heads / sh.kv_heads
            )));
        }
        let bits = |v: &[f32]| -> Result<Vec<u16>, KernelError> {
            use rayon::prelude::*;
            v.par_iter()
                .map(|&x| {
                    half_bits(dtype, x)
                        .ok_or_else(|| KernelError::Cuda(format!("{x} is not exact in {dtype:?}")))
                })
                .collect()
        };
        let s = &self.stream;
        let up16 = |v: Vec<u16>| s.clone_htod(&v).map_err(drv("upload"));
        let up32 = |v: Vec<i32>| s.clone_htod(&v).map_err(drv("upload"));
        let lens = sh.kv_lens.clone();
        let (offsets, table) = match &b.store {
            KvStore::Contiguous { offsets } => (
                Some(up32(
                    offsets[..lens.len()].iter().map(|&o| o as i32).collect(),
                )?),
                None,
            ),
            KvStore::Paged {
                page_size, table, ..
            } => {
                let maxp = table.iter().map(Vec::len).max().unwrap_or(0).max(1);
                let mut flat = vec![0i32; lens.len() * maxp];
                for (s, t) in table.iter().enumerate() {
                    for (j, &p) in t.iter().enumerate() {
                        flat[s * maxp + j] = p as i32;
                    }
                }
                (None, Some((up32(flat)?, maxp, *page_size)))
            }
        };
        let n_out = lens.len() * sh.q_heads * sh.head_dim;
        Ok(DeviceBatch {
            batch: lens.len(),
            q_heads: sh.q_heads,
            kv_heads: sh.kv_heads,
            head_dim: sh.head_dim,
            dtype,
            q: up16(bits(&b.q)?)?,
            k: up16(bits(&b.k)?)?,
            v: up16(bits(&b.v)?)?,
            d_lens: up32(lens.iter().map(|&l| l as i32).collect())?,
            offsets,
            table,
            o: s.clone_htod(&vec![f32::NAN; n_out])
                .map_err(drv("upload"))?,
            lse: s
                .clone_htod(&vec![f32::NAN; lens.len() * sh.q_heads])
                .map_err(drv("upload"))?,
            lens,
        })
    }

    /// Overwrite o and lse with NaN (before a checked run: a schedule that leaves an output
    /// unwritten fails the check instead of passing on another's result).
    pub fn poison(&self, d: &mut DeviceBatch) -> Result<(), KernelError> {
        let nan_o = vec![f32::NAN; d.o.len()];
        let nan_l = vec![f32::NAN; d.lse.len()];
        self.stream
            .memcpy_htod(&nan_o, &mut d.o)
            .and_then(|_| self.stream.memcpy_htod(&nan_l, &mut d.lse))
            .map_err(drv("poison"))
    }

    /// What `sched` needs on `d` besides the batch: the partial records (split, balanced) and
    /// the chunk tables (balanced), allocated once so that launches can be timed alone.
    pub fn prepare(&self, d: &DeviceBatch, sched: Schedule) -> Result<Prepared, KernelError> {
        let s = &self.stream;
        let mut param = sched.param();
        let (kernel, records, tables, grid) = match sched {
            Schedule::Head => (
                format!("decode_head_{}_{}", kind(d), d.head_dim),
                0,
                None,
                (d.batch as u32, d.q_heads as u32, 1),
            ),
            Schedule::Gqa => (
                format!("decode_gqa_{}_{}", kind(d), d.head_dim),
                0,
                None,
                (d.batch as u32, d.kv_heads as u32, 1),
            ),
            Schedule::Split(sp) => (
                format!("decode_split_{}_{}", kind(d), d.head_dim),
                d.batch * sp as usize,
                None,
                (d.batch as u32, d.kv_heads as u32, sp),
            ),
            Schedule::Balanced(chunk) => {
                let chunk = match chunk {
                    0 => balanced_chunk(&d.lens, d.kv_heads, self.sms) as u32,
                    c => c,
                };
                param = chunk;
                let (cu, rec) = balanced_records(&d.lens, chunk as usize);
                let total = *cu.last().expect("one") as usize;
                let chunks = total.div_ceil(chunk as usize).max(1) as u32;
                let records = *rec.last().expect("one") as usize;
                let t = (
                    s.clone_htod(&cu).map_err(drv("upload"))?,
                    s.clone_htod(&rec).map_err(drv("upload"))?,
                );
                (
                    format!("decode_balanced_{}_{}", kind(d), d.head_dim),
                    records,
                    Some(t),
                    (chunks, d.kv_heads as u32, 1),
                )
            }
        };
        let partial = if records > 0 || matches!(sched, Schedule::Split(_) | Schedule::Balanced(_))
        {
            Some((
                s.alloc_zeros::<f32>((records * d.q_heads * d.head_dim).max(1))
                    .map_err(drv("alloc"))?,
                s.alloc_zeros::<f32>((records * d.q_heads).max(1))
                    .map_err(drv("alloc"))?,
            ))
        } else {
            None
        };
        let main = self.func(&kernel)?;
        // Above 48 KiB a kernel must ask for its dynamic shared memory.
        main.set_attribute(
            cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            shared_bytes(d.head_dim) as i32,
        )
        .map_err(drv("cuFuncSetAttribute"))?;
        Ok(Prepared {
            sched,
            main,
            combine: self.func("decode_combine")?,
            grid,
            partial,
            tables,
            param,
        })
    }

    /// Enqueue `p` on `d` (the schedule's kernel, then its combine for split and balanced).
    pub fn launch(&self, d: &mut DeviceBatch, p: &mut Prepared) -> Result<(), KernelError> {
        let s = &self.stream;
        let dim = d.head_dim;
        let scale = 1.0f32 / (dim as f32).sqrt();
        let q_heads = d.q_heads as i32;
        let smem = shared_bytes(dim) as u32;
        let kv = {
            let (k, _g1) = d.k.device_ptr(s);
            let (v, _g2) = d.v.device_ptr(s);
            let (lens, _g3) = d.d_lens.device_ptr(s);
            let offsets = d.offsets.as_ref().map_or(0, |o| o.device_ptr(s).0);
            let (table, maxp, page) = match &d.table {
                Some((t, m, pg)) => (t.device_ptr(s).0, *m as i32, *pg as i32),
                None => (0, 0, 1),
            };
            KvArg {
                k,
                v,
                lens,
                offsets,
                table,
                max_pages: maxp,
                page,
                kv_heads: d.kv_heads as i32,
            }
        };
        let cfg = LaunchConfig {
            grid_dim: p.grid,
            block_dim: (WARPS * 32, 1, 1),
            shared_mem_bytes: smem,
        };
        let mut l = s.launch_builder(&p.main);
        l.arg(&d.q).arg(&kv).arg(&q_heads).arg(&scale);
        let (batch, splits) = (d.batch as i32, p.param as i32);
        match (&mut p.partial, &p.tables) {
            (None, _) => {
                l.arg(&mut d.o).arg(&mut d.lse);
            }
            (Some((po, plse)), None) => {
                l.arg(&splits).arg(po).arg(plse);
            }
            (Some((po, plse)), Some((cu, rec))) => {
                l.arg(&batch)
                    .arg(cu)
                    .arg(rec)
                    .arg(&splits)
                    .arg(po)
                    .arg(plse);
            }
        }
        // SAFETY: the argument lists match the kernels of attention.cu; every array is sized by
        // upload and prepare.
        unsafe { l.launch(cfg) }.map_err(drv("cuLaunchKernel"))?;
        if let Some((po, plse)) = &p.partial {
            let rec_ptr: u64 = p.tables.as_ref().map_or(0, |(_, rec)| rec.device_ptr(s).0);
            let dd = dim as i32;
            let wmax = COMBINE_WEIGHTS as i32;
            let mut l = s.launch_builder(&p.combine);
            l.arg(po)
                .arg(plse)
                .arg(&rec_ptr)
                .arg(&splits)
                .arg(&q_heads)
                .arg(&dd)
                .arg(&wmax)
                .arg(&mut d.o)
                .arg(&mut d.lse);
            // decode_combine's shared memory: COMBINE_THREADS / 32 + 4 x COMBINE_THREADS + wmax
            // floats.
            let cfg = LaunchConfig {
                grid_dim: (d.batch as u32, d.q_heads as u32, 1),
                block_dim: (COMBINE_THREADS, 1, 1),
                shared_mem_bytes: ((COMBINE_THREADS / 32 + 4 * COMBINE_THREADS) as usize
                    + COMBINE_WEIGHTS) as u32
                    * 4,
            };
            // SAFETY: as above.
            unsafe { l.launch(cfg) }.map_err(drv("cuLaunchKernel"))?;
        }
        Ok(())
    }

    /// Prepare and launch `sched` once (`output` waits for it).
    pub fn run(&self, d: &mut DeviceBatch, sched: Schedule) -> Result<(), KernelError> {
        let mut p = self.prepare(d, sched)?;
        self.launch(d, &mut p)?;
        self.stream
            .synchronize()
            .map_err(drv("cuStreamSynchronize"))
    }

    /// Seconds per launch of `p` (events, median of `reps` after `warmup`).
    pub fn time(
        &self,
        d: &mut DeviceBatch,
        p: &mut Prepared,
        warmup: usize,
        reps: usize,
    ) -> Result<f64, KernelError> {
        let plan = super::TimingPlan {
            warmup,
            iterations: reps.max(1),
        };
        let t = super::time_events(&self.stream, plan, None, || self.launch(d, p))?;
        Ok(crate::median(t))
    }

    /// o as `[batch][q_heads][head_dim]` (waits for the stream).
    pub fn output(&self, d: &DeviceBatch) -> Result<Vec<f32>, KernelError> {
        self.stream.clone_dtoh(&d.o).map_err(drv("download"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn balanced_chunk_aims_at_one_wave() {
        // 128000 tokens x 8 KV heads on 132 SMs: 528 blocks wanted, 66 per head -> 1940 tokens,
        // rounded up to 1984 (65 chunks x 8 heads = 520 blocks).
        assert_eq!(balanced_chunk(&[128000], 8, 132), 1984);
        // Few tokens: at least one 64-token tile.
        assert_eq!(balanced_chunk(&[3, 0, 5], 32, 132), 64);
        assert_eq!(balanced_chunk(&[], 8, 132), 64);
        // Always a multiple of 64, and never more blocks than a wave plus one per head.
        for (lens, kvh) in [(vec![1000; 256], 8), (vec![32000, 64, 64], 1), (vec![7], 4)] {
            let c = balanced_chunk(&lens, kvh, 132);
            assert_eq!(c % 64, 0);
            let total: usize = lens.iter().sum();
            assert!(total.div_ceil(c) * kvh <= 132 * 4 + kvh, "{c}");
        }
        assert_eq!(Schedule::parse("balanced"), Some(Schedule::Balanced(0)));
        assert_eq!(Schedule::Balanced(0).name(), "balanced");
        assert_eq!(
            Schedule::parse("balanced-256"),
            Some(Schedule::Balanced(256))
        );
    }

    #[test]
    fn schedule_names_round_trip() {
        for s in Schedule::all() {
            assert_eq!(Schedule::parse(&s.name()), Some(s));
        }
        assert_eq!(Schedule::parse("split-0"), None);
        assert_eq!(Schedule::parse("ring-2"), None);
    }

    #[test]
    fn balanced_records_cover_every_chunk_piece() {
        // lens 0, 5, 300, 1, 0 with chunks of 256: tokens 0..5 | 5..305 | 305 | -.
        let (cu, rec) = balanced_records(&[0, 5, 300, 1, 0], 256);
        assert_eq!(cu, vec![0, 0, 5, 305, 306, 306]);
        // seq 1: chunk 0; seq 2: chunks 0 and 1; seq 3: chunk 1.
        assert_eq!(rec, vec![0, 0, 1, 3, 4, 4]);
    }
}
