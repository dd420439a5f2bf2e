/* augur from C: a plan for the 2-D Laplacian (5-point stencil) on an n x n grid, run, checked
 * against the product computed here, and the plan's explanation; then a bad matrix, refused with
 * a status and a message. Build and run: bash capi/examples/run.sh
 * Exits 0 when every check holds. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "augur.h"

static int fail(const char *what, AugurStatus s) {
  fprintf(stderr, "%s failed (status %d): %s\n", what, (int)s, augur_last_error());
  return 1;
}

int main(int argc, char **argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 64, rows = n * n;
  int32_t *ptr = malloc(sizeof(int32_t) * (rows + 1));
  int32_t *idx = malloc(sizeof(int32_t) * 5 * rows);
  double *val = malloc(sizeof(double) * 5 * rows);
  double *x = malloc(sizeof(double) * rows), *y = malloc(sizeof(double) * rows);
  double *want = malloc(sizeof(double) * rows);
  int nnz = 0;
  for (int i = 0; i < rows; i++) x[i] = 1.0 + (i % 7) * 0.25;
  for (int r = 0; r < rows; r++) {
    const int gi = r / n, gj = r % n;
    const int cols[5] = {r - n, r - 1, r, r + 1, r + n};
    const int ok[5] = {gi > 0, gj > 0, 1, gj < n - 1, gi < n - 1};
    ptr[r] = nnz;
    want[r] = 0.0;
    for (int k = 0; k < 5; k++) {
      if (!ok[k]) continue;
      idx[nnz] = cols[k];
      val[nnz] = cols[k] == r ? 4.0 : -1.0;
      want[r] += val[nnz] * x[cols[k]];
      nnz++;
    }
  }
  ptr[rows] = nnz;

  AugurPlanOptions o = augur_plan_options_default();
  o.iterations = 100;
  AugurPlan *plan = NULL;
  AugurStatus s = augur_plan_create(rows, rows, ptr, idx, val, AUGUR_VALUE_TYPE_F64, &o, &plan);
  if (s != AUGUR_STATUS_OK) return fail("augur_plan_create", s);
  /* The arrays were copied: they may go now. */
  free(ptr);
  free(idx);
  free(val);
  for (int i = 0; i < rows; i++) y[i] = NAN;
  s = augur_plan_run(plan, x, y);
  if (s != AUGUR_STATUS_OK) return fail("augur_plan_run", s);
  double worst = 0.0;
  for (int i = 0; i < rows; i++) {
    const double e = fabs(y[i] - want[i]);
    if (!(e <= worst)) worst = e; /* NaN propagates into worst */
  }
  printf("augur %s: %d x %d Laplacian, %d entries, kernel %s, setup %.1f us, max error %.3g\n",
         augur_version(), rows, rows, nnz, augur_plan_kernel(plan),
         augur_plan_setup_seconds(plan) * 1e6, worst);
  printf("%s\n", augur_plan_explain(plan));
  augur_plan_destroy(plan);
  if (!(worst < 1e-12)) {
    fprintf(stderr, "wrong product: max error %g\n", worst);
    return 1;
  }

  /* A column index out of range: refused, with the entry named. */
  const int32_t bptr[3] = {0, 1, 2}, bidx[2] = {0, 7};
  const float bval[2] = {1.0f, 2.0f};
  plan = NULL;
  s = augur_plan_create(2, 2, bptr, bidx, bval, AUGUR_VALUE_TYPE_F32, NULL, &plan);
  if (s != AUGUR_STATUS_INVALID || plan != NULL || !strstr(augur_last_error(), "indices[1] = 7")) {
    fprintf(stderr, "a bad matrix was not refused as expected (status %d: %s)\n", (int)s,
            augur_last_error());
    return 1;
  }
  printf("bad matrix refused: %s\n", augur_last_error());
  return 0;
}
