//! Setting a kernel of the pool up for a matrix (its buffers, bins and entry points) and
//! enqueueing `y = A x`.

use super::*;

impl CudaSpmv {
    /// Set kernel `k` up for `y = A x` (merge-path: its partition; cuSPARSE: descriptors, buffer
    /// and preprocessing for these buffers; every kernel: its entry points looked up).
    pub fn prepare<T: GpuScalar>(
        &self,
        k: GpuKernel,
        a: &DeviceCsr<T>,
        x: &CudaSlice<T>,
        y: &mut CudaSlice<T>,
    ) -> Result<Prepared<T>, KernelError> {
        let mut p = self.prepare_buffers(k, a, x, y)?;
        let t = Instant::now();
        let sfx = T::SUFFIX;
        let mut f = Funcs::default();
        match &p.setup {
            Setup::Binned(b) => {
                if b.long.is_some() {
                    f.zero_rows = Some(self.function_named(&format!("zero_rows_{sfx}"))?);
                    f.chunks = Some(self.function_named(&format!("spmv_chunks_{sfx}"))?);
                }
                for (lanes, _, _) in &b.bins {
                    f.rows
                        .push(self.function_named(&format!("spmv_rows{lanes}_{sfx}"))?);
                }
            }
            Setup::Cusparse(_) => {}
            // The binned kernel has no single entry point: with no rows it has no bins and
            // launches nothing.
            Setup::Plain if k == GpuKernel::Binned => {}
            Setup::Plain => f.main = Some(self.function(k, sfx)?),
            Setup::Merge(_) => {
                f.main = Some(self.function(k, sfx)?);
                f.fixup = Some(self.function_named(&format!("merge_path_fixup_{sfx}"))?);
            }
        }
        p.funcs = f;
        p.setup_s += t.elapsed().as_secs_f64();
        Ok(p)
    }

    fn prepare_buffers<T: GpuScalar>(
        &self,
        k: GpuKernel,
        a: &DeviceCsr<T>,
        x: &CudaSlice<T>,
        y: &mut CudaSlice<T>,
    ) -> Result<Prepared<T>, KernelError> {
        if let GpuKernel::Cusparse { alg2 } = k {
            let t = Instant::now();
            let handle = self.cusparse_handle()?;
            let c = crate::cuda::cusparse::CusparseSpmv::new(handle, &self.stream, a, x, y, alg2)?;
            self.stream
                .synchronize()
                .map_err(drv("cuStreamSynchronize"))?;
            return Ok(Prepared {
                kernel: k,
                setup_s: t.elapsed().as_secs_f64(),
                setup: Setup::Cusparse(c),
                funcs: Funcs::default(),
            });
        }
        if k == GpuKernel::Binned && a.rows > 0 {
            let t = Instant::now();
            let bins = self.bin_rows(a)?;
            return Ok(Prepared {
                kernel: k,
                setup_s: t.elapsed().as_secs_f64(),
                setup: Setup::Binned(bins),
                funcs: Funcs::default(),
            });
        }
        let tiled = k == GpuKernel::MergeTiled;
        if !(k == GpuKernel::MergePath || tiled) || a.rows == 0 {
            return Ok(Prepared {
                kernel: k,
                setup_s: 0.0,
                setup: Setup::Plain,
                funcs: Funcs::default(),
            });
        }
        let t = Instant::now();
        let pieces = if tiled {
            merge_tiles(a.rows, a.nnz)
        } else {
            merge_pieces(a.rows, a.nnz)
        };
        let s = &self.stream;
        let mut start_row = s
            .alloc_zeros::<i32>(pieces as usize + 1)
            .map_err(drv("cuMemAlloc"))?;
        let carry_row = s
            .alloc_zeros::<i32>(pieces as usize)
            .map_err(drv("cuMemAlloc"))?;
        let carry_val = s
            .alloc_zeros::<T>(pieces as usize)
            .map_err(drv("cuMemAlloc"))?;
        let f = self
            .module
            .load_function("merge_partition")
            .map_err(drv("cuModuleGetFunction"))?;
        let (rows, nnz, pieces) = (a.rows as i32, a.nnz as i32, pieces as i64);
        let items = if tiled { MT_TILE } else { MP_ITEMS } as i64;
        let mut b = s.launch_builder(&f);
        b.arg(&rows)
            .arg(&nnz)
            .arg(&a.ptr)
            .arg(&pieces)
            .arg(&items)
            .arg(&mut start_row);
        // SAFETY: (int, int, int*, long long, long long, int*) as in merge_partition; start_row
        // holds pieces + 1 entries and the kernel writes indices 0..=pieces.
        unsafe { b.launch(threads_config(pieces as u64 + 1)) }.map_err(drv("cuLaunchKernel"))?;
        s.synchronize().map_err(drv("cuStreamSynchronize"))?;
        Ok(Prepared {
            kernel: k,
            setup_s: t.elapsed().as_secs_f64(),
            setup: Setup::Merge(MergeBuffers {
                pieces,
                start_row,
                carry_row,
                carry_val,
            }),
            funcs: Funcs::default(),
        })
    }

    /// Bin the rows of `a` by length (setup of [`GpuKernel::Binned`]), from its row pointers.
    fn bin_rows<T>(&self, a: &DeviceCsr<T>) -> Result<BinBuffers, KernelError> {
        let ptr: Vec<i32> = self
            .stream
            .clone_dtoh(&a.ptr)
            .map_err(drv("device to host copy"))?;
        let host = bin_lists(&ptr);
        let mut bins = Vec::new();
        for (lanes, list) in host.bins {
            bins.push((lanes, list.len() as i32, self.htod(&list)?));
        }
        let long = match host.long {
            None => None,
            Some((long_rows, chunk_row, chunk_begin)) => Some(LongRows {
                count: long_rows.len() as i32,
                rows: self.htod(&long_rows)?,
                chunks: chunk_row.len() as i32,
                chunk_row: self.htod(&chunk_row)?,
                chunk_begin: self.htod(&chunk_begin)?,
            }),
        };
        Ok(BinBuffers { bins, long })
    }

    fn launch_binned<T: GpuScalar>(
        &self,
        b: &BinBuffers,
        funcs: &Funcs,
        a: &DeviceCsr<T>,
        x: &CudaSlice<T>,
        y: &mut CudaSlice<T>,
    ) -> Result<(), KernelError> {
        let s = &self.stream;
        if let Some(LongRows {
            count: n,
            rows,
            chunks: nchunks,
            chunk_row,
            chunk_begin,
        }) = b.long.as_ref()
        {
            let zero = funcs.zero_rows.as_ref().ok_or_else(unprepared)?;
            let mut l = s.launch_builder(zero);
            l.arg(n).arg(rows).arg(&mut *y);
            // SAFETY: (int, int*, T*): n row indices, all < rows.
            unsafe { l.launch(threads_config(*n as u64)) }.map_err(drv("cuLaunchKernel"))?;
            let f = funcs.chunks.as_ref().ok_or_else(unprepared)?;
            let mut l = s.launch_builder(f);
            l.arg(nchunks)
                .arg(chunk_row)
                .arg(chunk_begin)
                .arg(&a.ptr)
                .arg(&a.idx)
                .arg(&a.val)
                .arg(x)
                .arg(&mut *y);
            let cfg = LaunchConfig {
                grid_dim: (*nchunks as u32, 1, 1),
                block_dim: (BLOCK, 1, 1),
                shared_mem_bytes: 0,
            };
            // SAFETY: (int, int*, int*, int*, int*, T*, T*, T*) as in spmv_chunks; one block per
            // chunk, chunk starts inside their rows.
            unsafe { l.launch(cfg) }.map_err(drv("cuLaunchKernel"))?;
        }
        if funcs.rows.len() != b.bins.len() {
            return Err(unprepared());
        }
        for ((lanes, n, list), f) in b.bins.iter().zip(&funcs.rows) {
            let mut l = s.launch_builder(f);
            l.arg(n)
                .arg(list)
                .arg(&a.ptr)
                .arg(&a.idx)
                .arg(&a.val)
                .arg(x)
                .arg(&mut *y);
            // SAFETY: (int, int*, int*, int*, T*, T*, T*) as in spmv_rows; n rows, lanes each.
            unsafe { l.launch(threads_config(*n as u64 * *lanes as u64)) }
                .map_err(drv("cuLaunchKernel"))?;
        }
        Ok(())
    }

    /// Enqueue `y = A x` with a prepared kernel (no synchronisation).
    pub fn launch<T: GpuScalar>(
        &self,
        p: &mut Prepared<T>,
        a: &DeviceCsr<T>,
        x: &CudaSlice<T>,
        y: &mut CudaSlice<T>,
    ) -> Result<(), KernelError> {
        if x.len() != a.cols || y.len() != a.rows {
            return Err(KernelError::Dimension {
                what: if x.len() != a.cols { "x" } else { "y" },
                expected: if x.len() != a.cols { a.cols } else { a.rows },
                got: if x.len() != a.cols { x.len() } else { y.len() },
                rows: a.rows,
                cols: a.cols,
            });
        }
        if a.rows == 0 {
            return Ok(());
        }
        let k = p.kernel;
        let mut merge = match &mut p.setup {
            Setup::Cusparse(c) => return c.run(self.cusparse_handle()?, &self.stream, x, y),
            Setup::Binned(b) => return self.launch_binned::<T>(b, &p.funcs, a, x, y),
            Setup::Merge(m) => Some(m),
            Setup::Plain => None,
        };
        let f = p.funcs.main.as_ref().ok_or_else(unprepared)?;
        let (rows, nnz) = (a.rows as i32, a.nnz as i32);
        // The adaptive kernel's lanes per row (set in its arm below, where it is an argument).
        let lanes: i32;
        let s = &self.stream;
        if k == GpuKernel::NnzSplit {
            s.memset_zeros(y).map_err(drv("cuMemsetD8"))?;
            if a.nnz == 0 {
                return Ok(());
            }
        }
        let mut b = s.launch_builder(f);
        b.arg(&rows)
            .arg(&a.ptr)
            .arg(&a.idx)
            .arg(&a.val)
            .arg(x)
            .arg(&mut *y);
        match (k, merge.as_deref_mut()) {
            (GpuKernel::NnzSplit, _) => {
                b.arg(&nnz);
            }
            (GpuKernel::Adaptive, _) => {
                lanes = adaptive_lanes(a.rows, a.nnz) as i32;
                b.arg(&lanes);
            }
            (GpuKernel::MergePath | GpuKernel::MergeTiled, Some(m)) => {
                b.arg(&nnz)
                    .arg(&m.pieces)
                    .arg(&m.start_row)
                    .arg(&mut m.carry_row)
                    .arg(&mut m.carry_val);
            }
            (GpuKernel::MergePath, None) => {
                return Err(KernelError::Cuda(
                    "merge_path launched without prepare".into(),
                ))
            }
            _ => {}
        }
        // SAFETY: the arguments match the entry point's signature in spmv_csr.cu (rows, ptr, idx,
        // val, x, y, then nnz / pieces and the merge buffers for the balanced kernels, the lanes
        // per row for the adaptive one), and the buffers hold rows+1, nnz, nnz, cols, rows,
        // pieces+1 and pieces elements.
        unsafe { b.launch(k.config(a.rows, a.nnz)) }.map_err(drv("cuLaunchKernel"))?;
        if let Some(m) = merge {
            let fix = p.funcs.fixup.as_ref().ok_or_else(unprepared)?;
            let mut b = s.launch_builder(fix);
            b.arg(&rows)
                .arg(&m.pieces)
                .arg(&m.carry_row)
                .arg(&m.carry_val)
                .arg(y);
            // SAFETY: (int, long long, int*, T*, T*) as in merge_path_fixup.
            unsafe { b.launch(threads_config(m.pieces as u64)) }.map_err(drv("cuLaunchKernel"))?;
        }
        Ok(())
    }
}
