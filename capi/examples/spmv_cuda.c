/* augur from C on device pointers (a GPU machine; not built in CI, which has no GPU): the 2-D
 * Laplacian's plan on the CUDA backend, x and y in cudaMalloc'd memory, the product enqueued on a
 * stream of the caller's behind other work, checked against the product computed here; then the
 * same matrix made from device arrays (augur_plan_create_device).
 * Build and run: nvcc -I capi/include capi/examples/spmv_cuda.c -L <dir of libaugur.so> -laugur
 * Exits 0 when every check holds. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "augur.h"

#define CK(call)                                                                      \
  do {                                                                                \
    cudaError_t e_ = (call);                                                          \
    if (e_ != cudaSuccess) {                                                          \
      fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_));                     \
      return 1;                                                                       \
    }                                                                                 \
  } while (0)

/* y = A x on the device into a NaN-poisoned dy, enqueued on st; *worst: the largest relative
 * error against want. Returns nonzero (with a message) when a call fails. */
static int product_error(AugurPlan *plan, const float *dx, float *dy, float *y, const double *want,
                         int rows, cudaStream_t st, double *worst) {
  CK(cudaMemsetAsync(dy, 0xff, sizeof(float) * rows, st));
  if (augur_plan_run_device(plan, dx, dy, st) != AUGUR_STATUS_OK) {
    fprintf(stderr, "augur_plan_run_device: %s\n", augur_last_error());
    return 1;
  }
  CK(cudaMemcpyAsync(y, dy, sizeof(float) * rows, cudaMemcpyDeviceToHost, st));
  CK(cudaStreamSynchronize(st));
  *worst = 0.0;
  for (int i = 0; i < rows; i++) {
    const double e = fabs((double)y[i] - want[i]) / (fabs(want[i]) + 1e-30);
    if (!(e <= *worst)) *worst = e;
  }
  return 0;
}

int main(void) {
  const int n = 300, rows = n * n;
  int32_t *ptr = (int32_t *)malloc(sizeof(int32_t) * (rows + 1));
  int32_t *idx = (int32_t *)malloc(sizeof(int32_t) * 5 * rows);
  float *val = (float *)malloc(sizeof(float) * 5 * rows);
  float *x = (float *)malloc(sizeof(float) * rows), *y = (float *)malloc(sizeof(float) * rows);
  double *want = (double *)malloc(sizeof(double) * rows);
  int nnz = 0;
  for (int i = 0; i < rows; i++) x[i] = 1.0f + (i % 5) * 0.5f;
  for (int r = 0; r < rows; r++) {
    const int gi = r / n, gj = r % n;
    const int cols[5] = {r - n, r - 1, r, r + 1, r + n};
    const int ok[5] = {gi > 0, gj > 0, 1, gj < n - 1, gi < n - 1};
    ptr[r] = nnz;
    want[r] = 0.0;
    for (int k = 0; k < 5; k++) {
      if (!ok[k]) continue;
      idx[nnz] = cols[k];
      val[nnz] = cols[k] == r ? 4.0f : -1.0f;
      want[r] += (double)val[nnz] * x[cols[k]];
      nnz++;
    }
  }
  ptr[rows] = nnz;
  AugurPlanOptions o = augur_plan_options_default();
  o.backend = AUGUR_BACKEND_CUDA;
  o.iterations = 1000;
  AugurPlan *plan = NULL;
  AugurStatus s = augur_plan_create(rows, rows, ptr, idx, val, AUGUR_VALUE_TYPE_F32, &o, &plan);
  if (s != AUGUR_STATUS_OK) {
    fprintf(stderr, "augur_plan_create: %s\n", augur_last_error());
    return 1;
  }
  float *dx, *dy;
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  CK(cudaMalloc((void **)&dx, sizeof(float) * rows));
  CK(cudaMalloc((void **)&dy, sizeof(float) * rows));
  CK(cudaMemcpyAsync(dx, x, sizeof(float) * rows, cudaMemcpyHostToDevice, st));
  double worst;
  if (product_error(plan, dx, dy, y, want, rows, st, &worst)) return 1;
  /* The same matrix made from device arrays (as a CUDA code holds it): copied on the GPU after
   * the uploads on st, then run on the poisoned y again. */
  int32_t *dptr, *didx;
  float *dval;
  CK(cudaMalloc((void **)&dptr, sizeof(int32_t) * (rows + 1)));
  CK(cudaMalloc((void **)&didx, sizeof(int32_t) * nnz));
  CK(cudaMalloc((void **)&dval, sizeof(float) * nnz));
  CK(cudaMemcpyAsync(dptr, ptr, sizeof(int32_t) * (rows + 1), cudaMemcpyHostToDevice, st));
  CK(cudaMemcpyAsync(didx, idx, sizeof(int32_t) * nnz, cudaMemcpyHostToDevice, st));
  CK(cudaMemcpyAsync(dval, val, sizeof(float) * nnz, cudaMemcpyHostToDevice, st));
  AugurPlan *dplan = NULL;
  s = augur_plan_create_device(rows, rows, nnz, dptr, didx, dval, AUGUR_VALUE_TYPE_F32, st, &o,
                               &dplan);
  if (s != AUGUR_STATUS_OK) {
    fprintf(stderr, "augur_plan_create_device: %s\n", augur_last_error());
    return 1;
  }
  CK(cudaFree(dval)); /* the plan holds its own copy */
  double worst_dev;
  if (product_error(dplan, dx, dy, y, want, rows, st, &worst_dev)) return 1;
  printf("from device arrays: kernel %s, max relative error %.3g\n", augur_plan_kernel(dplan),
         worst_dev);
  augur_plan_destroy(dplan);
  cudaFree(dptr);
  cudaFree(didx);
  /* A host pointer where device memory is expected: refused with a message, not a crash. */
  s = augur_plan_run_device(plan, x, dy, st);
  const int refused = s == AUGUR_STATUS_INVALID;
  printf("augur %s C API on CUDA: %d x %d, kernel %s, max relative error %.3g; host pointer "
         "refused: %s (%s)\n",
         augur_version(), rows, rows, augur_plan_kernel(plan), worst, refused ? "yes" : "NO",
         augur_last_error());
  augur_plan_destroy(plan);
  cudaFree(dx);
  cudaFree(dy);
  return worst < 1e-5 && worst_dev < 1e-5 && refused ? 0 : 1;
}
