// What the calling thread pays to start host work beside an upload: waking a parked thread of
// our own (futex via condvar) vs enqueuing a CUDA host function (cudaLaunchHostFunc), after the
// process idled for T (the GPU hosts' wake cost grows with how long the helper slept).
#include <cuda_runtime.h>
#include <pthread.h>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>
#include <algorithm>
#include <cstdio>
#include <mutex>
#include <condition_variable>
using clk = std::chrono::steady_clock;
static double us(clk::time_point a, clk::time_point b) { return std::chrono::duration<double, std::micro>(b - a).count(); }
std::atomic<int> flag{0};
std::atomic<long long> ran_at{0};
static long long now_ns() { return std::chrono::duration_cast<std::chrono::nanoseconds>(clk::now().time_since_epoch()).count(); }
void CUDART_CB hf(void*) { ran_at.store(now_ns()); flag.store(1); }
std::mutex mu; std::condition_variable cv; bool go = false; bool quit = false;
void helper() {
  std::unique_lock<std::mutex> l(mu);
  while (true) {
    cv.wait(l, [] { return go || quit; });
    if (quit) return;
    go = false; ran_at.store(now_ns()); flag.store(1);
  }
}
static double med(std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }
static double pct(std::vector<double> v, double p) { std::sort(v.begin(), v.end()); return v[(size_t)(p * (v.size() - 1))]; }
int main() {
  cudaStream_t s; cudaStreamCreate(&s);
  size_t n = 64 << 20; std::vector<char> host(n, 1); char* dev; cudaMalloc(&dev, n);
  cudaMemcpy(dev, host.data(), n, cudaMemcpyHostToDevice);
  cudaLaunchHostFunc(s, hf, nullptr); cudaStreamSynchronize(s);
  std::thread th(helper);
  printf("idle_us,mechanism,caller_us_median,caller_us_p10,caller_us_p90,start_latency_us_median\n");
  for (double idle : {20.0, 100.0, 1000.0, 10000.0, 50000.0}) {
    for (int mech = 0; mech < 4; mech++) {
      std::vector<double> c, lat;
      for (int r = 0; r < 31; r++) {
        // Idle (mech 3: the caller spins, only the helper sleeps) the way a plan's caller does before the hand-off: a sleep (the pool and the
        // driver's threads asleep) or, for mech 2, a pageable upload of the same length.
        if (mech == 3) { auto e = clk::now() + std::chrono::microseconds((long)idle); while (clk::now() < e) {} }
        else std::this_thread::sleep_for(std::chrono::microseconds((long)idle));
        flag.store(0);
        auto t0 = clk::now();
        if (mech == 0 || mech == 3) { { std::lock_guard<std::mutex> l(mu); go = true; } cv.notify_one(); }
        else { cudaLaunchHostFunc(s, hf, nullptr); }
        auto t1 = clk::now();
        if (mech == 2) cudaMemcpy(dev, host.data(), 16 << 20, cudaMemcpyHostToDevice);
        while (!flag.load()) {}
        c.push_back(us(t0, t1));
        lat.push_back((ran_at.load() - std::chrono::duration_cast<std::chrono::nanoseconds>(t0.time_since_epoch()).count()) / 1e3);
        cudaStreamSynchronize(s);
      }
      const char* name = mech == 3 ? "condvar_notify_caller_busy" : mech == 0 ? "condvar_notify" : mech == 1 ? "cudaLaunchHostFunc" : "cudaLaunchHostFunc_then_16MiB_upload";
      printf("%.0f,%s,%.2f,%.2f,%.2f,%.1f\n", idle, name, med(c), pct(c, 0.1), pct(c, 0.9), med(lat));
    }
  }
  { std::lock_guard<std::mutex> l(mu); quit = true; } cv.notify_one(); th.join();
  return 0;
}
