// Decode attention (one query token per sequence) over a ragged KV cache, for augur's attention
// schedule selector (issue 8).
//
// Layout: q [batch][q_heads][D]; K and V [slots][kv_heads][D] as 16-bit floats (f16 or bf16);
// a sequence's token t lives in slot offsets[s] + t (contiguous) or
// table[s][t / page] * page + t % page (paged). Query head h reads KV head h / group
// (grouped-query attention, group = q_heads / kv_heads <= GMAX = 8).
//
// Every schedule runs the same block routine (`attend`), FlashAttention-2's inner loop with the
// group's query heads as the rows of the tile: the block's W warps (2, 3 or 4: instances _wW; the
// host uses 3 unless told otherwise) take tiles of 16 tokens in turn; a warp
// copies its tile's K and V rows into shared memory with cp.async (the next tile's copy in
// flight while it computes this one), computes S = Q K^T (16 head rows, of which G are real, x
// 16 tokens) and O += P V with tensor-core mma.sync (m16n8k16, f32 accumulation), keeping an
// online softmax per head row. The warps' (m, l, O) are merged at the end. P is rounded to the
// input type for the second product (as FlashAttention does); everything else is f32.
//
// Schedules:
//   decode_head:     one block per (sequence, query head);
//   decode_gqa:      one block per (sequence, KV head), all the group's query heads (K and V read
//                    once for the group);
//   decode_split:    one block per (sequence, KV head, split), splits of equal token counts,
//                    partial (o, lse) records merged by decode_combine;
//   decode_balanced: one block per (chunk, KV head), the batch's tokens cut into equal chunks
//                    regardless of sequence boundaries (merge-path style); a chunk writes one
//                    partial record per sequence piece it covers; decode_combine merges them.
// Output o [batch][q_heads][D] f32 and lse [batch][q_heads] (natural log; -inf and o = 0 for a
// sequence with no KV).

#ifndef GMAX
#error "GMAX comes from the host as -DGMAX=... (kernels/src/cuda/attention.rs; kernels/src/cuda/module.rs)"
#endif
#define TILE 16
#define NEG_INF __int_as_float(0xff800000)
#define LOG2E 1.4426950408889634f
#define LN2 0.6931471805599453f

typedef unsigned short u16;
typedef long long i64;

struct Kv {
    const u16* k;
    const u16* v;
    const int* lens;     // [batch]
    const int* offsets;  // [batch] first slot (contiguous), or null
    const int* table;    // [batch][max_pages] page ids (paged), or null
    int max_pages;
    int page;
    int kv_heads;
};

__device__ __forceinline__ i64 slot_of(const Kv& kv, int s, int t) {
    if (kv.table) {
        return (i64)kv.table[(i64)s * kv.max_pages + t / kv.page] * kv.page + t % kv.page;
    }
    return (i64)kv.offsets[s] + t;
}

// Shared memory of a block (bytes): per warp two stages of a K tile and a V tile, TILE rows of
// D halves each, rows padded by 16 bytes (ldmatrix without bank conflicts). After the token
// loop the same memory holds the warp merge: W x GMAX x (D + 2) floats.
template <int D>
struct Smem {
    static const int ROW = D + 8;                 // halves per padded row
    static const int TILE_HALVES = TILE * ROW;    // one K or V tile
    static const int WARP_HALVES = 4 * TILE_HALVES;  // 2 stages x (K, V)
};

// Tokens [t0, t1) of sequence s, KV head kvh, for the query heads h0 .. h0 + G - 1 (G <= 8) of
// sequence s; writes the normalised o (G x D floats at o + rec * q_heads * D + h0 * D ...) and
// lse of record `rec` (o[(rec * q_heads + h0 + g) * D + d], lse[rec * q_heads + h0 + g]).
// The block's W warps share the tokens and merge their results.
template <class E, int D, int W>
__device__ void attend(const u16* q, int q_heads, int h0, int G, float scale, const Kv& kv, int s,
                       int kvh, int t0, int t1, i64 rec, float* o, float* lse, u16* sh) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int g = lane >> 2, t = lane & 3;  // mma fragment coordinates
    const int KC = D / 16, ND = D / 8;
    u16* mine = sh + warp * Smem<D>::WARP_HALVES;
    const float sl2 = scale * LOG2E;

    // Q as A fragments (row-major 16 x D; rows >= G are zero): a[kc] = rows g, g + 8, columns
    // kc * 16 + 2t (+1) and + 8.
    unsigned qa[KC][4];
#pragma unroll
    for (int kc = 0; kc < KC; kc++) {
        const u16* qr = q + ((i64)s * q_heads + h0 + g) * D + kc * 16 + 2 * t;
        qa[kc][0] = g < G ? *(const unsigned*)qr : 0u;
        qa[kc][1] = 0u;
        qa[kc][2] = g < G ? *(const unsigned*)(qr + 8) : 0u;
        qa[kc][3] = 0u;
    }
    float oacc[ND][4];
#pragma unroll
    for (int i = 0; i < ND; i++) oacc[i][0] = oacc[i][1] = oacc[i][2] = oacc[i][3] = 0.0f;
    float m0 = NEG_INF, m1 = NEG_INF, l0 = 0.0f, l1 = 0.0f;  // rows g, g + 8 (log2 units)

    const i64 rowstride = (i64)kv.kv_heads * D;
    // The slot of token tb + (lane & 15) of a tile, -1 past t1: each lane looks up one row (the
    // sequence's first slot is read once; a paged row reads the block table), the copy takes
    // the other rows' slots by shuffle. The lookup of the tile after next is issued before the
    // current tile's product, so the table read's latency hides behind it.
    const int* ptab = kv.table ? kv.table + (i64)s * kv.max_pages : nullptr;
    const int first = ptab ? 0 : kv.offsets[s];
    auto row_slot = [&](int tb) -> int {
        int tok = tb + (lane & (TILE - 1));
        if (tok >= t1) return -1;
        return ptab ? ptab[tok / kv.page] * kv.page + tok % kv.page : first + tok;
    };
    // Copy the tile starting at token tb (row slots `sl`) into stage st: TILE x D/8 16-byte
    // pieces of K and V.
    auto issue = [&](int st, int sl) {
        u16* kt = mine + st * 2 * Smem<D>::TILE_HALVES;
        u16* vt = kt + Smem<D>::TILE_HALVES;
        const int PER_ROW = D / 8;
#pragma unroll
        for (int j = lane; j < TILE * PER_ROW; j += 32) {
            int r = j / PER_ROW, c = j % PER_ROW;
            int slot = __shfl_sync(0xffffffffu, sl, r);
            bool valid = slot >= 0;
            i64 off = valid ? (i64)slot * rowstride + (i64)kvh * D + c * 8 : 0;
            cp_async16(smem_addr(kt + r * Smem<D>::ROW + c * 8), kv.k + off, valid);
            cp_async16(smem_addr(vt + r * Smem<D>::ROW + c * 8), kv.v + off, valid);
        }
    };
    const int step = W * TILE;
    int tb = t0 + warp * TILE;
    int sl = row_slot(tb);
    if (tb < t1) issue(0, sl);
    cp_async_commit();
    sl = row_slot(tb + step);
    for (int it = 0; tb < t1; it++, tb += step) {
        if (tb + step < t1) {
            __syncwarp();
            issue((it + 1) & 1, sl);
        }
        sl = row_slot(tb + 2 * step);
        cp_async_commit();
        cp_async_wait<1>();
        __syncwarp();
        const u16* kt = mine + (it & 1) * 2 * Smem<D>::TILE_HALVES;
        const u16* vt = kt + Smem<D>::TILE_HALVES;
        // S = Q K^T for tokens 0-7 (s0) and 8-15 (s1) of the tile.
        float s0[4] = {0.0f, 0.0f, 0.0f, 0.0f}, s1[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        {
            int mi = lane >> 3, r = lane & 7;
            // matrices: (tokens 0-7, dims +0), (0-7, +8), (8-15, +0), (8-15, +8)
            unsigned base = smem_addr(kt + ((mi >> 1) * 8 + r) * Smem<D>::ROW + (mi & 1) * 8);
#pragma unroll
            for (int kc = 0; kc < KC; kc++) {
                unsigned b[4];
                ldmatrix_x4(b, base + kc * 32);
                E::mma(s0, qa[kc], b[0], b[1]);
                E::mma(s1, qa[kc], b[2], b[3]);
            }
        }
        // Scores in log2 units; tokens past t1 masked. s0[0], s0[1]: row g, tokens 2t, 2t+1;
        // s0[2], s0[3]: row g + 8; s1: tokens + 8.
        float x[8];
        int tk = tb + 2 * t;
        x[0] = tk < t1 ? s0[0] * sl2 : NEG_INF;
        x[1] = tk + 1 < t1 ? s0[1] * sl2 : NEG_INF;
        x[2] = tk < t1 ? s0[2] * sl2 : NEG_INF;
        x[3] = tk + 1 < t1 ? s0[3] * sl2 : NEG_INF;
        x[4] = tk + 8 < t1 ? s1[0] * sl2 : NEG_INF;
        x[5] = tk + 9 < t1 ? s1[1] * sl2 : NEG_INF;
        x[6] = tk + 8 < t1 ? s1[2] * sl2 : NEG_INF;
        x[7] = tk + 9 < t1 ? s1[3] * sl2 : NEG_INF;
        float mx0 = fmaxf(fmaxf(x[0], x[1]), fmaxf(x[4], x[5]));
        float mx1 = fmaxf(fmaxf(x[2], x[3]), fmaxf(x[6], x[7]));
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
        float n0 = fmaxf(m0, mx0), n1 = fmaxf(m1, mx1);
        float c0 = m0 == NEG_INF ? 0.0f : exp2f(m0 - n0);
        float c1 = m1 == NEG_INF ? 0.0f : exp2f(m1 - n1);
        m0 = n0;
        m1 = n1;
        float p[8];
#pragma unroll
        for (int i = 0; i < 8; i++) {
            float m = (i & 2) ? n1 : n0;
            p[i] = x[i] == NEG_INF ? 0.0f : exp2f(x[i] - m);
        }
        l0 = l0 * c0 + p[0] + p[1] + p[4] + p[5];
        l1 = l1 * c1 + p[2] + p[3] + p[6] + p[7];
#pragma unroll
        for (int i = 0; i < ND; i++) {
            oacc[i][0] *= c0;
            oacc[i][1] *= c0;
            oacc[i][2] *= c1;
            oacc[i][3] *= c1;
        }
        // P as an A fragment (16 rows x 16 tokens): the two S tiles' accumulators.
        unsigned pa[4] = {E::pack(p[0], p[1]), E::pack(p[2], p[3]), E::pack(p[4], p[5]),
                          E::pack(p[6], p[7])};
        // O += P V: V^T fragments by transposed ldmatrix, two 8-dim tiles per load:
        // matrices (tokens 0-7, dims nd), (8-15, nd), (0-7, nd + 1), (8-15, nd + 1).
        {
            int mi = lane >> 3, r = lane & 7;
            unsigned base = smem_addr(vt + ((mi & 1) * 8 + r) * Smem<D>::ROW + (mi >> 1) * 8);
#pragma unroll
            for (int nd = 0; nd < ND; nd += 2) {
                unsigned b[4];
                ldmatrix_x4_trans(b, base + nd * 16);
                E::mma(oacc[nd], pa, b[0], b[1]);
                E::mma(oacc[nd + 1], pa, b[2], b[3]);
            }
        }
    }
    cp_async_wait<0>();
    // Row sums over the 4 lanes of a row.
    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    __syncthreads();  // every warp is done with its tiles: the memory becomes the merge area
    float* mg = (float*)sh;
    if (g < G) {
        float* w = mg + ((size_t)warp * GMAX + g) * (D + 2);
        if (t == 0) {
            w[0] = m0;
            w[1] = l0;
        }
#pragma unroll
        for (int i = 0; i < ND; i++) {
            w[2 + i * 8 + 2 * t] = oacc[i][0];
            w[2 + i * 8 + 2 * t + 1] = oacc[i][1];
        }
    }
    __syncthreads();
    for (int i = threadIdx.x; i < G * D; i += blockDim.x) {
        int h = i / D, d = i % D;
        float m = NEG_INF;
#pragma unroll
        for (int w = 0; w < W; w++) m = fmaxf(m, mg[((size_t)w * GMAX + h) * (D + 2)]);
        float l = 0.0f, acc = 0.0f;
        if (m != NEG_INF) {
#pragma unroll
            for (int w = 0; w < W; w++) {
                const float* x = mg + ((size_t)w * GMAX + h) * (D + 2);
                float c = x[0] == NEG_INF ? 0.0f : exp2f(x[0] - m);
                l += x[1] * c;
                acc += x[2 + d] * c;
            }
        }
        o[(rec * q_heads + h0 + h) * D + d] = l > 0.0f ? acc / l : 0.0f;
        if (d == 0) lse[rec * q_heads + h0 + h] = l > 0.0f ? m * LN2 + __logf(l) : NEG_INF;
    }
    __syncthreads();  // the merge area is tile memory again for the next call
}

template <class E, int D, int W>
__device__ void head_schedule(const u16* q, Kv kv, int q_heads, float scale, float* o,
                              float* lse) {
    extern __shared__ __align__(16) u16 sh[];
    int s = blockIdx.x, h = blockIdx.y;
    int group = q_heads / kv.kv_heads;
    attend<E, D, W>(q, q_heads, h, 1, scale, kv, s, h / group, 0, kv.lens[s], s, o, lse, sh);
}

template <class E, int D, int W>
__device__ void gqa_schedule(const u16* q, Kv kv, int q_heads, float scale, float* o,
                             float* lse) {
    extern __shared__ __align__(16) u16 sh[];
    int s = blockIdx.x, kvh = blockIdx.y;
    int G = q_heads / kv.kv_heads;
    attend<E, D, W>(q, q_heads, kvh * G, G, scale, kv, s, kvh, 0, kv.lens[s], s, o, lse, sh);
}

// Split-KV: record index = s * splits + split.
template <class E, int D, int W>
__device__ void split_schedule(const u16* q, Kv kv, int q_heads, float scale, int splits,
                               float* po, float* plse) {
    extern __shared__ __align__(16) u16 sh[];
    int s = blockIdx.x, kvh = blockIdx.y, sp = blockIdx.z;
    int G = q_heads / kv.kv_heads;
    int len = kv.lens[s];
    int per = (len + splits - 1) / splits;
    int t0 = min(len, sp * per), t1 = min(len, t0 + per);
    attend<E, D, W>(q, q_heads, kvh * G, G, scale, kv, s, kvh, t0, t1, (i64)s * splits + sp, po,
                 plse, sh);
}

// Balanced: chunk c covers global tokens [c * chunk, (c + 1) * chunk) of the batch's
// concatenated sequences (cu_lens: prefix sums, batch + 1 entries). A sequence inside one chunk
// is written to (o, lse) directly; the piece of a sequence that spans chunks is its record
// rec_base[s] + c - cu_lens[s] / chunk of (po, plse), merged by decode_combine.
template <class E, int D, int W>
__device__ void balanced_schedule(const u16* q, Kv kv, int q_heads, float scale, int batch,
                                  const i64* cu_lens, const int* rec_base, int chunk, float* po,
                                  float* plse, float* o, float* lse) {
    extern __shared__ __align__(16) u16 sh[];
    int c = blockIdx.x, kvh = blockIdx.y;
    int G = q_heads / kv.kv_heads;
    i64 start = (i64)c * chunk, end = start + chunk;
    // The first sequence whose tokens reach past `start`.
    int lo = 0, hi = batch;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (cu_lens[mid + 1] <= start) lo = mid + 1;
        else hi = mid;
    }
    for (int s = lo; s < batch && cu_lens[s] < end; s++) {
        i64 len = cu_lens[s + 1] - cu_lens[s];
        if (len == 0) continue;
        int t0 = (int)(max(start, cu_lens[s]) - cu_lens[s]);
        int t1 = (int)(min(end, cu_lens[s + 1]) - cu_lens[s]);
        bool whole = t0 == 0 && t1 == len;
        i64 rec = whole ? (i64)s : (i64)rec_base[s] + c - cu_lens[s] / chunk;
        attend<E, D, W>(q, q_heads, kvh * G, G, scale, kv, s, kvh, t0, t1, rec, whole ? o : po,
                        whole ? lse : plse, sh);
    }
}

// Merge the partial records rec_base[s] .. rec_base[s + 1] of a (sequence, query head): one
// block of COMBINE_THREADS per (sequence, head), s = merged[blockIdx.x] (balanced: the sequences
// with records, and the empty ones) or blockIdx.x (split-KV: rec_base = merged = null, `splits`
// records per sequence).
// The block reduces the records' lse to their max and weights (weights in shared memory, the
// records taken in rounds of `wmax`), then lanes own 4 dimensions each and the block's threads
// share out the records (D / 4 x (COMBINE_THREADS / (D / 4)) layout), partial sums meeting in
// shared memory: a few records per thread instead of every record in one loop.
#define COMBINE_THREADS 256
__device__ __forceinline__ float block_max(float v, float* red) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();
    float r = NEG_INF;
    for (int w = 0; w < COMBINE_THREADS / 32; w++) r = fmaxf(r, red[w]);
    __syncthreads();
    return r;
}
__device__ __forceinline__ float block_sum(float v, float* red) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();
    float r = 0.0f;
    for (int w = 0; w < COMBINE_THREADS / 32; w++) r += red[w];
    __syncthreads();
    return r;
}

extern "C" __global__ void __launch_bounds__(COMBINE_THREADS)
    decode_combine(const float* po, const float* plse, const int* rec_base, const int* merged,
                   int splits, int q_heads, int D, int wmax, float* o, float* lse) {
    extern __shared__ float csh[];  // red[COMBINE_THREADS / 32], acc[COMBINE_THREADS][4], w[wmax]
    float* red = csh;
    float4* part = (float4*)(csh + COMBINE_THREADS / 32);
    float* w = csh + COMBINE_THREADS / 32 + 4 * COMBINE_THREADS;
    int s = merged ? merged[blockIdx.x] : blockIdx.x, h = blockIdx.y;
    i64 r0 = rec_base ? rec_base[s] : (i64)s * splits;
    i64 r1 = rec_base ? rec_base[s + 1] : r0 + splits;
    float m = NEG_INF;
    for (i64 r = r0 + threadIdx.x; r < r1; r += COMBINE_THREADS)
        m = fmaxf(m, plse[r * q_heads + h]);
    m = block_max(m, red);
    const int cols = D / 4, groups = COMBINE_THREADS / cols;
    int col = threadIdx.x % cols, grp = threadIdx.x / cols;
    float l = 0.0f;
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (m != NEG_INF) {
        for (i64 base = r0; base < r1; base += wmax) {
            i64 n = min((i64)wmax, r1 - base);
            for (i64 i = threadIdx.x; i < n; i += COMBINE_THREADS) {
                float x = plse[(base + i) * q_heads + h];
                float e = x == NEG_INF ? 0.0f : __expf(x - m);
                w[i] = e;
                l += e;
            }
            __syncthreads();
            if (grp < groups) {
                for (i64 i = grp; i < n; i += groups) {
                    float e = w[i];
                    if (e == 0.0f) continue;
                    float4 v = ((const float4*)(po + ((base + i) * q_heads + h) * D))[col];
                    acc.x += e * v.x;
                    acc.y += e * v.y;
                    acc.z += e * v.z;
                    acc.w += e * v.w;
                }
            }
            __syncthreads();
        }
    }
    l = block_sum(l, red);
    part[threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.x < cols) {
        float4 t = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        for (int g = 0; g < groups; g++) {
            float4 v = part[g * cols + threadIdx.x];
            t.x += v.x;
            t.y += v.y;
            t.z += v.z;
            t.w += v.w;
        }
        float inv = l > 0.0f ? 1.0f / l : 0.0f;
        ((float4*)(o + ((i64)s * q_heads + h) * D))[threadIdx.x] =
            make_float4(t.x * inv, t.y * inv, t.z * inv, t.w * inv);
    }
    if (threadIdx.x == 0) lse[(i64)s * q_heads + h] = l > 0.0f ? m + __logf(l) : NEG_INF;
}

#define INSTANCES(E, NAME, D, W)                                                              \
    extern "C" __global__ void __launch_bounds__(W * 32)                                        \
        decode_head_##NAME##_##D##_w##W(const u16* q, Kv kv, int q_heads, float scale,          \
                                        float* o, float* lse) {                                 \
        head_schedule<E, D, W>(q, kv, q_heads, scale, o, lse);                                  \
    }                                                                                           \
    extern "C" __global__ void __launch_bounds__(W * 32)                                        \
        decode_gqa_##NAME##_##D##_w##W(const u16* q, Kv kv, int q_heads, float scale,           \
                                       float* o, float* lse) {                                  \
        gqa_schedule<E, D, W>(q, kv, q_heads, scale, o, lse);                                   \
    }                                                                                           \
    extern "C" __global__ void __launch_bounds__(W * 32)                                        \
        decode_split_##NAME##_##D##_w##W(const u16* q, Kv kv, int q_heads, float scale,         \
                                         int splits, float* po, float* plse) {                  \
        split_schedule<E, D, W>(q, kv, q_heads, scale, splits, po, plse);                       \
    }                                                                                           \
    extern "C" __global__ void __launch_bounds__(W * 32) decode_balanced_##NAME##_##D##_w##W(   \
        const u16* q, Kv kv, int q_heads, float scale, int batch, const i64* cu_lens,           \
        const int* rec_base, int chunk, float* po, float* plse, float* o, float* lse) {         \
        balanced_schedule<E, D, W>(q, kv, q_heads, scale, batch, cu_lens, rec_base, chunk, po,  \
                                   plse, o, lse);                                               \
    }

#define ALL_WARPS(E, NAME, D) INSTANCES(E, NAME, D, 2) INSTANCES(E, NAME, D, 3) INSTANCES(E, NAME, D, 4)
ALL_WARPS(F16, f16, 64)
ALL_WARPS(F16, f16, 128)
ALL_WARPS(F16, f16, 256)
ALL_WARPS(BF16, bf16, 64)
ALL_WARPS(BF16, bf16, 128)
ALL_WARPS(BF16, bf16, 256)
