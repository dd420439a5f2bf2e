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

/// Warps per block that attention.cu instantiates (its kernels `..._w{W}`).
pub const WARP_CHOICES: [u32; 3] = [2, 3, 4];

/// Warps per block, unless [`CudaAttention::set_warps`] says otherwise. Three: on the long-KV
/// shapes of bench/attention-long-kv.txt (H200), blocks of 3 warps fit 4 per SM at head_dim
/// 128 (4 warps: 3, by shared memory and registers) and 2 at 256 (4 warps: 1); the best
/// schedule per shape reached 0.990 of the best over 3 and 4 warps, 4 warps 0.974, and 2 warps
/// was no better as a geomean (bench/results/attention-warps-h200-2026-11-22/run1/). Four warps
/// for grids that fit on the GPU at once made the oracle faster but the tree worse
/// (docs/BENCHMARKS.md, decode attention, second round).
pub const WARPS: u32 = 3;
/// Most query heads per KV head (GMAX in attention.cu).
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

/// The chunk (tokens) of the balanced schedule with chunk 0 on a GPU that holds `slots` blocks
/// at once (multiprocessors x resident blocks of the kernel): the batch's tokens x KV heads cut
/// into about one wave, rounded up to 64 tokens, at least 64.
pub fn balanced_chunk(lens: &[usize], kv_heads: usize, slots: usize) -> usize {
    let total: usize = lens.iter().sum();
    let blocks = slots.max(1).div_ceil(kv_heads.max(1));
    total.div_ceil(blocks).next_multiple_of(64).max(64)
}

/// The partial records of a balanced schedule. A sequence of `len` tokens starting at global
/// token `start` spans chunks `start / chunk ..= (start + len - 1) / chunk`; one that lies in a
/// single chunk is written to the output directly and has no records, one that spans several
/// has a record per chunk. Returns (cu_lens, rec_base, merged): rec_base's last entry is the
/// record count; `merged` lists the sequences the combine writes: those with records, and the
/// empty ones (o = 0, lse = -inf).
pub fn balanced_records(lens: &[usize], chunk: usize) -> (Vec<i64>, Vec<i32>, Vec<i32>) {
    let mut cu = vec![0i64];
    let mut rec = vec![0i32];
    let mut merged = Vec::new();
    for (s, &l) in lens.iter().enumerate() {
        let start = *cu.last().expect("one") as usize;
        let n = if l == 0 {
            0
        } else {
            (start + l - 1) / chunk - start / chunk + 1
        };
        if l == 0 || n > 1 {
            merged.push(s as i32);
        }
        let n = if n > 1 { n } else { 0 };
        cu.push((start + l) as i64);
        rec.push(rec.last().expect("one") + n as i32);
    }
    (cu, rec, merged)
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

/// The balanced schedule's tables ([`balanced_records`]).
struct Tables {
    cu_lens: CudaSlice<i64>,
    rec_base: CudaSlice<i32>,
    merged: CudaSlice<i32>,
    n_merged: usize,
}

/// A schedule made ready for a batch: its kernels, grid and workspace.
pub struct Prepared {
    pub sched: Schedule,
    main: CudaFunction,
    combine: CudaFunction,
    grid: (u32, u32, u32),
    /// Partial o and lse records (split, balanced).
    partial: Option<(CudaSlice<f32>, CudaSlice<f32>)>,
    /// cu_lens, rec_base and the sequences the combine merges (balanced).
    tables: Option<Tables>,
    /// Splits (split) or the chunk in tokens (balanced; sized here when the schedule says 0).
    pub param: u32,
    /// Warps per block and dynamic shared memory (bytes) of the main kernel.
    pub warps: u32,
    smem: u32,
}

/// Dynamic shared memory of a block of `warps` warps (attention.cu's Smem): per warp two stages
/// of a K and a V tile of 16 rows of head_dim + 8 halves.
fn shared_bytes(head_dim: usize, warps: u32) -> usize {
    warps as usize * 4 * 16 * (head_dim + 8) * 2
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
    /// Warps per block (None: [`WARPS`]).
    warps: Option<u32>,
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
            warps: None,
        })
    }

    /// Blocks of `w` warps (one of [`WARP_CHOICES`]) for every schedule prepared from now on;
    /// None: [`WARPS`]. For measuring that default.
    pub fn set_warps(&mut self, w: Option<u32>) -> Result<(), KernelError> {
        if let Some(w) = w.filter(|w| !WARP_CHOICES.contains(w)) {
            return Err(KernelError::Invalid(format!(
                "{w} warps per block; the kernels are built for {WARP_CHOICES:?}"
            )));
        }
        self.warps = w;
        Ok(())
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
            return Err(KernelError::Invalid(format!(
                "decode attention takes f16 or bf16 inputs, not {dtype:?}"
            )));
        }
        if ![64, 128, 256].contains(&sh.head_dim) {
            return Err(KernelError::Invalid(format!(
                "head_dim {} (64, 128 or 256)",
                sh.head_dim
            )));
        }
        if sh.q_heads / sh.kv_heads > GMAX {
            return Err(KernelError::Invalid(format!(
                "{} query heads per KV head; at most {GMAX}",
                sh.q_heads / sh.kv_heads
            )));
        }
        let bits = |v: &[f32]| -> Result<Vec<u16>, KernelError> {
            use rayon::prelude::*;
            v.par_iter()
                .map(|&x| {
                    half_bits(dtype, x).ok_or_else(|| {
                        KernelError::Invalid(format!("{x} is not exact in {dtype:?}"))
                    })
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
        let w = self.warps.unwrap_or(WARPS);
        let smem = shared_bytes(d.head_dim, w);
        let kernel = match sched {
            Schedule::Head => "head",
            Schedule::Gqa => "gqa",
            Schedule::Split(_) => "split",
            Schedule::Balanced(_) => "balanced",
        };
        let main = self.func(&format!("decode_{kernel}_{}_{}_w{w}", kind(d), d.head_dim))?;
        // Above 48 KiB a kernel must ask for its dynamic shared memory.
        main.set_attribute(
            cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            smem as i32,
        )
        .map_err(drv("cuFuncSetAttribute"))?;
        let mut param = sched.param();
        let (records, tables, grid) = match sched {
            Schedule::Head => (0, None, (d.batch as u32, d.q_heads as u32, 1)),
            Schedule::Gqa => (0, None, (d.batch as u32, d.kv_heads as u32, 1)),
            Schedule::Split(sp) => (
                d.batch * sp as usize,
                None,
                (d.batch as u32, d.kv_heads as u32, sp),
            ),
            Schedule::Balanced(chunk) => {
                let chunk = match chunk {
                    0 => {
                        // One wave: the blocks that fit on the GPU at once.
                        let per_sm = main
                            .occupancy_max_active_blocks_per_multiprocessor(w * 32, smem, None)
                            .map_err(drv("cuOccupancyMaxActiveBlocksPerMultiprocessor"))?
                            .max(1) as usize;
                        balanced_chunk(&d.lens, d.kv_heads, self.sms * per_sm) as u32
                    }
                    c => c,
                };
                param = chunk;
                let (cu, rec, merged) = balanced_records(&d.lens, chunk as usize);
                let total = *cu.last().expect("one") as usize;
                let chunks = total.div_ceil(chunk as usize).max(1) as u32;
                let records = *rec.last().expect("one") as usize;
                let t = Tables {
                    cu_lens: s.clone_htod(&cu).map_err(drv("upload"))?,
                    rec_base: s.clone_htod(&rec).map_err(drv("upload"))?,
                    n_merged: merged.len(),
                    merged: s.clone_htod(&merged).map_err(drv("upload"))?,
                };
                (records, Some(t), (chunks, d.kv_heads as u32, 1))
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
        Ok(Prepared {
            sched,
            main,
            combine: self.func("decode_combine")?,
            grid,
            partial,
            tables,
            param,
            warps: w,
            smem: smem as u32,
        })
    }

    /// Enqueue `p` on `d` (the schedule's kernel, then its combine for split and balanced).
    pub fn launch(&self, d: &mut DeviceBatch, p: &mut Prepared) -> Result<(), KernelError> {
        let s = &self.stream;
        let dim = d.head_dim;
        let scale = 1.0f32 / (dim as f32).sqrt();
        let q_heads = d.q_heads as i32;
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
            block_dim: (p.warps * 32, 1, 1),
            shared_mem_bytes: p.smem,
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
            (Some((po, plse)), Some(t)) => {
                l.arg(&batch)
                    .arg(&t.cu_lens)
                    .arg(&t.rec_base)
                    .arg(&splits)
                    .arg(po)
                    .arg(plse)
                    .arg(&mut d.o)
                    .arg(&mut d.lse);
            }
        }
        // SAFETY: the argument lists match the kernels of attention.cu; every array is sized by
        // upload and prepare.
        unsafe { l.launch(cfg) }.map_err(drv("cuLaunchKernel"))?;
        // The combine: every sequence (split), or those the balanced kernel left to it.
        let merged = p.tables.as_ref().map_or(d.batch, |t| t.n_merged);
        if let (Some((po, plse)), true) = (&p.partial, merged > 0) {
            let (rec_ptr, list_ptr): (u64, u64) = p.tables.as_ref().map_or((0, 0), |t| {
                (t.rec_base.device_ptr(s).0, t.merged.device_ptr(s).0)
            });
            let dd = dim as i32;
            let wmax = COMBINE_WEIGHTS as i32;
            let mut l = s.launch_builder(&p.combine);
            l.arg(po)
                .arg(plse)
                .arg(&rec_ptr)
                .arg(&list_ptr)
                .arg(&splits)
                .arg(&q_heads)
                .arg(&dd)
                .arg(&wmax)
                .arg(&mut d.o)
                .arg(&mut d.lse);
            // decode_combine's shared memory: COMBINE_THREADS / 32 + 4 x COMBINE_THREADS + wmax
            // floats.
            let cfg = LaunchConfig {
                grid_dim: (merged as u32, d.q_heads as u32, 1),
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

    /// Seconds per launch of `p` in latency mode (events, median of `reps` after `warmup`).
    pub fn time(
        &self,
        d: &mut DeviceBatch,
        p: &mut Prepared,
        warmup: usize,
        reps: usize,
    ) -> Result<f64, KernelError> {
        let plan = super::TimingPlan::new(warmup, reps);
        let t = super::time_events(&self.stream, plan, None, || self.launch(d, p))?;
        Ok(crate::median(t))
    }

    /// `p` timed in the latency, throughput and graph modes ([`super::time_modes`]).
    pub fn time_modes(
        &self,
        d: &mut DeviceBatch,
        p: &mut Prepared,
        warmup: usize,
        reps: usize,
    ) -> Result<super::ModeTimes, KernelError> {
        let plan = super::TimingPlan::new(warmup, reps);
        super::time_modes(&self.stream, plan, None, || self.launch(d, p))
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
        // 128000 tokens x 8 KV heads on 132 SMs x 4 resident blocks: 528 blocks wanted, 66 per
        // head -> 1940 tokens, rounded up to 1984 (65 chunks x 8 heads = 520 blocks).
        assert_eq!(balanced_chunk(&[128000], 8, 528), 1984);
        // 3 resident blocks per SM: 396 blocks, 50 per head -> 2560 tokens (50 x 8 = 400).
        assert_eq!(balanced_chunk(&[128000], 8, 396), 2560);
        // Few tokens: at least one 64-token tile.
        assert_eq!(balanced_chunk(&[3, 0, 5], 32, 528), 64);
        assert_eq!(balanced_chunk(&[], 8, 528), 64);
        // Always a multiple of 64, and never more blocks than a wave plus one per head.
        for slots in [132, 264, 396, 528, 1056] {
            for (lens, kvh) in [(vec![1000; 256], 8), (vec![32000, 64, 64], 1), (vec![7], 4)] {
                let c = balanced_chunk(&lens, kvh, slots);
                assert_eq!(c % 64, 0);
                let total: usize = lens.iter().sum();
                assert!(total.div_ceil(c) * kvh <= slots + kvh, "{c}");
            }
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
        let (cu, rec, merged) = balanced_records(&[0, 5, 300, 1, 0], 256);
        assert_eq!(cu, vec![0, 0, 5, 305, 306, 306]);
        // seq 1: chunk 0 only (written directly); seq 2: chunks 0 and 1 (two records); seq 3:
        // chunk 1 only.
        assert_eq!(rec, vec![0, 0, 0, 2, 2, 2]);
        // The combine writes the empty sequences and seq 2.
        assert_eq!(merged, vec![0, 2, 4]);
        // One chunk for everything: no records, only the empty sequences merged.
        let (_, rec, merged) = balanced_records(&[0, 5, 300, 1, 0], 1024);
        assert_eq!(rec, vec![0; 6]);
        assert_eq!(merged, vec![0, 4]);
    }
}
