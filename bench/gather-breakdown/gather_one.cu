// The feature gather of kernels/cuda/features.cu (feat_rows + feat_cols), timed alone: GPU time
// (events around 20 back-to-back gathers) and wall time (launches + copy back of the results,
// what a plan pays), per size, against an empty launch + copy back; `rows` times feat_rows alone
// to place the time.
#include <cstdio>
#include <vector>
#include <chrono>
#include <algorithm>
#include <string>
#include <cuda_runtime.h>
#include FEATURES_CU

__global__ void empty_kernel() {}
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
static double median(std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }

int main(int argc, char** argv) {
    const char* variant = argc > 1 ? argv[1] : "full";
    int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    u64 *acc, *longs, *first; unsigned* bins; u64 host[17];
    cudaMalloc(&acc, ACC_N * 8); cudaMalloc(&bins, BINS * 4); cudaMalloc(&longs, (1 << 20) * 8);
    cudaMalloc(&first, (1 << 20) * 8);
    feat_init<<<1, 256>>>(acc, bins);
    cudaStream_t s; cudaStreamCreate(&s);
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    for (long long rows : {1000LL, 100000LL, 1000000LL, 5000000LL}) {
        int len = 10; long long nnz = rows * len;
        std::vector<int> hp(rows + 1), hi(nnz);
        for (long long r = 0; r <= rows; ++r) hp[r] = (int)(r * len);
        for (long long k = 0; k < nnz; ++k) hi[k] = (int)((k * 2654435761ull) % rows);
        for (long long r = 0; r < rows; ++r) std::sort(hi.begin() + hp[r], hi.begin() + hp[r + 1]);
        int *dp, *di; cudaMalloc(&dp, (rows + 1) * 4); cudaMalloc(&di, nnz * 4);
        cudaMemcpy(dp, hp.data(), (rows + 1) * 4, cudaMemcpyHostToDevice);
        cudaMemcpy(di, hi.data(), nnz * 4, cudaMemcpyHostToDevice);
        long long threads = std::max(rows * 4, nnz / 32);
        int blocks = (int)std::min<long long>(std::max<long long>((threads + 2047) / 2048, 1), 16 * sms);
        u64 k = (rows + 99) / 100; int r32 = (int)rows, n32 = (int)nnz;
        int rblocks = (int)std::min<long long>(std::max<long long>((rows + 2047) / 2048, 1), 16 * sms);
        bool rows_only = std::string(variant) == "rows";
        (void)n32;
        auto go = [&] {
            feat_rows<<<rblocks, 256, 0, s>>>(r32, dp, acc, bins, longs, first, k);
            if (!rows_only) feat_cols4<<<blocks, 256, 0, s>>>(r32, dp, di, acc, bins, longs, first);
        };
        std::vector<double> wall, empty, gpu;
        for (int rep = 0; rep < 30; ++rep) {
            double t = now(); go(); cudaMemcpy(host, acc, 17 * 8, cudaMemcpyDeviceToHost); wall.push_back((now() - t) * 1e6);
            t = now(); empty_kernel<<<1, 32, 0, s>>>(); cudaMemcpy(host, acc, 17 * 8, cudaMemcpyDeviceToHost); empty.push_back((now() - t) * 1e6);
        }
        for (int rep = 0; rep < 5; ++rep) {
            cudaEventRecord(e0, s); for (int i = 0; i < 20; ++i) go(); cudaEventRecord(e1, s); cudaEventSynchronize(e1);
            float ms; cudaEventElapsedTime(&ms, e0, e1); gpu.push_back(ms * 1e3 / 20);
        }
        printf("%s,%lld,%lld,%d,%.2f,%.2f,%.2f,%llu,%llu\n", variant, rows, nnz, blocks, median(gpu), median(wall), median(empty), host[1], host[16]);
        cudaFree(dp); cudaFree(di);
    }
    cudaError_t err = cudaDeviceSynchronize();
    if (err != cudaSuccess) { printf("error %s\n", cudaGetErrorString(err)); return 1; }
    return 0;
}
