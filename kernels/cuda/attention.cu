// Decode attention (one query token per sequence) over a ragged KV cache, for augur's attention
// schedule selector (issue 8). FIRST VERSION: compiled by NVRTC in CI, not yet run on a GPU.
//
// Layout: q [batch][q_heads][D]; K and V [slots][kv_heads][D] as 16-bit floats (f16 or bf16);
// a sequence's token t lives in slot offsets[s] + t (contiguous) or
// table[s][t / page] * page + t % page (paged). Accumulation in f32. Query head h reads KV head
// h / group (grouped-query attention, group = q_heads / kv_heads <= GMAX).
//
// Every schedule runs the same block routine: 4 warps take the tokens of a range in turn; a warp's
// 32 lanes hold D/32 consecutive dimensions of each token (one coalesced row per token); each warp
// keeps an online softmax (running max m, sum l, accumulator acc) per query head of its group, and
// the block merges its warps at the end. Schedules:
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

#define WARPS 4
#define GMAX 8
#define NEG_INF __int_as_float(0xff800000)

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

struct F16 {
    __device__ static float f(u16 h) {
        float x;
        asm("cvt.f32.f16 %0, %1;" : "=f"(x) : "h"(h));
        return x;
    }
};
struct BF16 {
    __device__ static float f(u16 h) { return __uint_as_float(((unsigned)h) << 16); }
};

// One warp's online-softmax state for up to GMAX query heads, DPL dimensions per lane.
template <int DPL>
struct State {
    float m[GMAX], l[GMAX], acc[GMAX][DPL];
    __device__ void init() {
#pragma unroll
        for (int g = 0; g < GMAX; g++) {
            m[g] = NEG_INF;
            l[g] = 0.0f;
#pragma unroll
            for (int i = 0; i < DPL; i++) acc[g][i] = 0.0f;
        }
    }
};

__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}

// Tokens [t0, t1) of sequence s, KV head kvh, for query heads h0 .. h0 + G - 1: each warp's
// state after its share of the tokens.
template <class E, int D>
__device__ void attend(const float* qv, int G, const Kv& kv, int s, int kvh, int t0, int t1,
                       float scale, State<D / 32>& st) {
    const int DPL = D / 32;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    st.init();
    for (int t = t0 + warp; t < t1; t += WARPS) {
        i64 base = (slot_of(kv, s, t) * kv.kv_heads + kvh) * D + lane * DPL;
        float k[DPL], v[DPL];
#pragma unroll
        for (int i = 0; i < DPL; i++) {
            k[i] = E::f(kv.k[base + i]);
            v[i] = E::f(kv.v[base + i]);
        }
#pragma unroll
        for (int g = 0; g < GMAX; g++) {
            if (g >= G) break;
            float dot = 0.0f;
#pragma unroll
            for (int i = 0; i < DPL; i++) dot += qv[g * D + lane * DPL + i] * k[i];
            float x = warp_sum(dot) * scale;
            float mn = fmaxf(st.m[g], x);
            float c = __expf(st.m[g] - mn);  // 0 on the first token (m = -inf)
            float p = __expf(x - mn);
            st.l[g] = st.l[g] * c + p;
#pragma unroll
            for (int i = 0; i < DPL; i++) st.acc[g][i] = st.acc[g][i] * c + p * v[i];
            st.m[g] = mn;
        }
    }
}

// Merge the block's warps for G heads; thread (lane, warp 0) holds the result in `st`.
// Shared: WARPS x GMAX x (2 + D) floats.
template <int D>
__device__ void merge_warps(int G, State<D / 32>& st, float* sh) {
    const int DPL = D / 32;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int g = 0; g < G; g++) {
        float* w = sh + ((size_t)warp * GMAX + g) * (2 + D);
        if (lane == 0) {
            w[0] = st.m[g];
            w[1] = st.l[g];
        }
#pragma unroll
        for (int i = 0; i < DPL; i++) w[2 + lane * DPL + i] = st.acc[g][i];
    }
    __syncthreads();
    if (warp == 0) {
        for (int g = 0; g < G; g++) {
            float m = NEG_INF;
            for (int x = 0; x < WARPS; x++) m = fmaxf(m, sh[((size_t)x * GMAX + g) * (2 + D)]);
            float l = 0.0f, acc[DPL];
#pragma unroll
            for (int i = 0; i < DPL; i++) acc[i] = 0.0f;
            if (m != NEG_INF) {
                for (int x = 0; x < WARPS; x++) {
                    const float* w = sh + ((size_t)x * GMAX + g) * (2 + D);
                    float c = w[0] == NEG_INF ? 0.0f : __expf(w[0] - m);
                    l += w[1] * c;
#pragma unroll
                    for (int i = 0; i < DPL; i++) acc[i] += w[2 + lane * DPL + i] * c;
                }
            }
            st.m[g] = m;
            st.l[g] = l;
#pragma unroll
            for (int i = 0; i < DPL; i++) st.acc[g][i] = acc[i];
        }
    }
    __syncthreads();
}

// Load the group's query rows (f16/bf16 bits) into shared memory as floats: G x D.
template <class E, int D>
__device__ void load_q(const u16* q, int s, int q_heads, int h0, int G, float* qs) {
    for (int i = threadIdx.x; i < G * D; i += blockDim.x)
        qs[i] = E::f(q[((i64)s * q_heads + h0) * D + i]);
    __syncthreads();
}

// Write the final o and lse (warp 0) for heads h0 .. h0 + G - 1 of sequence s.
template <int D>
__device__ void store_final(const State<D / 32>& st, int G, int s, int q_heads, int h0, float* o,
                            float* lse) {
    const int DPL = D / 32;
    int lane = threadIdx.x & 31;
    if (threadIdx.x >= 32) return;
    for (int g = 0; g < G; g++) {
        float inv = st.l[g] > 0.0f ? 1.0f / st.l[g] : 0.0f;
        float* out = o + ((i64)s * q_heads + h0 + g) * D + lane * DPL;
#pragma unroll
        for (int i = 0; i < DPL; i++) out[i] = st.acc[g][i] * inv;
        if (lane == 0)
            lse[(i64)s * q_heads + h0 + g] =
                st.l[g] > 0.0f ? st.m[g] + __logf(st.l[g]) : NEG_INF;
    }
}

// A partial record r for heads h0 .. h0 + G - 1: o (normalised) [r][q_heads][D] and lse
// [r][q_heads] in the workspace.
template <int D>
__device__ void store_partial(const State<D / 32>& st, int G, i64 r, int q_heads, int h0,
                              float* po, float* plse) {
    store_final<D>(st, G, (int)0, q_heads, h0, po + r * q_heads * D, plse + r * q_heads);
}

template <class E, int D>
__device__ void head_schedule(const u16* q, Kv kv, int q_heads, float scale, float* o,
                              float* lse) {
    extern __shared__ float sh[];
    float* qs = sh + WARPS * GMAX * (2 + D);
    int s = blockIdx.x, h = blockIdx.y;
    int group = q_heads / kv.kv_heads;
    load_q<E, D>(q, s, q_heads, h, 1, qs);
    State<D / 32> st;
    attend<E, D>(qs, 1, kv, s, h / group, 0, kv.lens[s], scale, st);
    merge_warps<D>(1, st, sh);
    store_final<D>(st, 1, s, q_heads, h, o, lse);
}

template <class E, int D>
__device__ void gqa_schedule(const u16* q, Kv kv, int q_heads, float scale, float* o,
                             float* lse) {
    extern __shared__ float sh[];
    float* qs = sh + WARPS * GMAX * (2 + D);
    int s = blockIdx.x, kvh = blockIdx.y;
    int G = q_heads / kv.kv_heads;
    load_q<E, D>(q, s, q_heads, kvh * G, G, qs);
    State<D / 32> st;
    attend<E, D>(qs, G, kv, s, kvh, 0, kv.lens[s], scale, st);
    merge_warps<D>(G, st, sh);
    store_final<D>(st, G, s, q_heads, kvh * G, o, lse);
}

// Split-KV: record index = s * splits + split.
template <class E, int D>
__device__ void split_schedule(const u16* q, Kv kv, int q_heads, float scale, int splits,
                               float* po, float* plse) {
    extern __shared__ float sh[];
    float* qs = sh + WARPS * GMAX * (2 + D);
    int s = blockIdx.x, kvh = blockIdx.y, sp = blockIdx.z;
    int G = q_heads / kv.kv_heads;
    int len = kv.lens[s];
    int per = (len + splits - 1) / splits;
    int t0 = min(len, sp * per), t1 = min(len, t0 + per);
    load_q<E, D>(q, s, q_heads, kvh * G, G, qs);
    State<D / 32> st;
    attend<E, D>(qs, G, kv, s, kvh, t0, t1, scale, st);
    merge_warps<D>(G, st, sh);
    store_partial<D>(st, G, (i64)s * splits + sp, q_heads, kvh * G, po, plse);
}

// Balanced: chunk c covers global tokens [c * chunk, (c + 1) * chunk) of the batch's
// concatenated sequences (cu_lens: prefix sums, batch + 1 entries); its piece of sequence s is
// record rec_base[s] + c - cu_lens[s] / chunk.
template <class E, int D>
__device__ void balanced_schedule(const u16* q, Kv kv, int q_heads, float scale, int batch,
                                  const i64* cu_lens, const int* rec_base, int chunk, float* po,
                                  float* plse) {
    extern __shared__ float sh[];
    float* qs = sh + WARPS * GMAX * (2 + D);
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
        if (cu_lens[s + 1] == cu_lens[s]) continue;
        int t0 = (int)(max(start, cu_lens[s]) - cu_lens[s]);
        int t1 = (int)(min(end, cu_lens[s + 1]) - cu_lens[s]);
        load_q<E, D>(q, s, q_heads, kvh * G, G, qs);
        State<D / 32> st;
        attend<E, D>(qs, G, kv, s, kvh, t0, t1, scale, st);
        merge_warps<D>(G, st, sh);
        store_partial<D>(st, G, rec_base[s] + c - cu_lens[s] / chunk, q_heads, kvh * G, po,
                         plse);
        __syncthreads();
    }
}

// Merge the partial records rec_base[s] .. rec_base[s + 1] of every (sequence, query head): one
// block of D threads per (sequence, head). Split-KV passes rec_base = null and `splits`.
extern "C" __global__ void decode_combine(const float* po, const float* plse, const int* rec_base,
                                          int splits, int q_heads, int D, float* o, float* lse) {
    int s = blockIdx.x, h = blockIdx.y, d = threadIdx.x;
    i64 r0 = rec_base ? rec_base[s] : (i64)s * splits;
    i64 r1 = rec_base ? rec_base[s + 1] : r0 + splits;
    float m = NEG_INF;
    for (i64 r = r0; r < r1; r++) m = fmaxf(m, plse[r * q_heads + h]);
    float l = 0.0f, acc = 0.0f;
    if (m != NEG_INF) {
        for (i64 r = r0; r < r1; r++) {
            float x = plse[r * q_heads + h];
            if (x == NEG_INF) continue;
            float w = __expf(x - m);
            l += w;
            if (d < D) acc += w * po[(r * q_heads + h) * D + d];
        }
    }
    if (d < D) o[((i64)s * q_heads + h) * D + d] = l > 0.0f ? acc / l : 0.0f;
    if (d == 0) lse[(i64)s * q_heads + h] = l > 0.0f ? m + __logf(l) : NEG_INF;
}

#define INSTANCES(E, NAME, D)                                                                   \
    extern "C" __global__ void __launch_bounds__(WARPS * 32)                                    \
        decode_head_##NAME##_##D(const u16* q, Kv kv, int q_heads, float scale, float* o,       \
                                 float* lse) {                                                  \
        head_schedule<E, D>(q, kv, q_heads, scale, o, lse);                                     \
    }                                                                                           \
    extern "C" __global__ void __launch_bounds__(WARPS * 32)                                    \
        decode_gqa_##NAME##_##D(const u16* q, Kv kv, int q_heads, float scale, float* o,        \
                                float* lse) {                                                   \
        gqa_schedule<E, D>(q, kv, q_heads, scale, o, lse);                                      \
    }                                                                                           \
    extern "C" __global__ void __launch_bounds__(WARPS * 32)                                    \
        decode_split_##NAME##_##D(const u16* q, Kv kv, int q_heads, float scale, int splits,    \
                                  float* po, float* plse) {                                     \
        split_schedule<E, D>(q, kv, q_heads, scale, splits, po, plse);                          \
    }                                                                                           \
    extern "C" __global__ void __launch_bounds__(WARPS * 32) decode_balanced_##NAME##_##D(      \
        const u16* q, Kv kv, int q_heads, float scale, int batch, const i64* cu_lens,           \
        const int* rec_base, int chunk, float* po, float* plse) {                               \
        balanced_schedule<E, D>(q, kv, q_heads, scale, batch, cu_lens, rec_base, chunk, po,     \
                                plse);                                                          \
    }

INSTANCES(F16, f16, 64)
INSTANCES(F16, f16, 128)
INSTANCES(F16, f16, 256)
INSTANCES(BF16, bf16, 64)
INSTANCES(BF16, bf16, 128)
INSTANCES(BF16, bf16, 256)
