/* cpu_gemm.h: the CPU GEMM family's internal interface, shared by cpu_gemm.c (the GEMM kernel:
 * batching, dtype routing, CBLAS), cpu_gemm_blocked.c (ampc's own cache-tiled float/double
 * GEMM, used when there is no CBLAS) and cpu_gemm_amx.c (the AMX bf16 kernel).
 *
 * Every routine here computes one matrix product in the same form:
 *   C (n x m) = alpha * A (n x k) @ B (k x m) + beta * C
 * A and B are read through element strides (rs: between rows, cs: between columns), so
 * transposed, sliced and broadcast (stride 0) operands need no copy; C is row-major with unit
 * column stride and row stride ldc. beta == 0 overwrites C without reading it (NaN in C does
 * not leak through, as in BLAS). */
#ifndef AMPC_CPU_GEMM_H
#define AMPC_CPU_GEMM_H

#include <stdbool.h>
#include <stdint.h>

#include "../core/status.h"

/* Which implementation the GEMM kernel uses; chosen once from the environment variable
 * AMPC_GEMM ("auto", "blas", "fallback") and changeable at run time (tests, benchmarks).
 *   auto      CBLAS for float32/float64 when built with it, the AMX kernel for bf16 when the
 *             CPU and OS offer AMX, else what "blas" does
 *   blas      CBLAS for float32/float64; fp16/bf16 convert to fp32 and call sgemm
 *   fallback  ampc's blocked C kernel for every floating dtype (no CBLAS, no AMX) */
typedef enum ampc_cpu_gemm_backend {
    AMPC_CPU_GEMM_AUTO = 0,
    AMPC_CPU_GEMM_BLAS,
    AMPC_CPU_GEMM_FALLBACK
} ampc_cpu_gemm_backend;

/* By name; fails with AMPC_E_VALUE for an unknown name or "blas" in a build without CBLAS. */
ampc_status ampc_cpu_gemm_set_backend(const char *name);
const char *ampc_cpu_gemm_get_backend(void);
/* True when this build links a CBLAS / this CPU and OS run the AMX bf16 kernel (checked once). */
bool ampc_cpu_gemm_has_blas(void);
bool ampc_cpu_gemm_has_amx(void);

/* ---- cpu_gemm_blocked.c: packed, cache-tiled GEMM in plain C (OpenMP over row blocks) ---- */
ampc_status ampc_cpu_gemm_blocked_f32(int64_t n, int64_t m, int64_t k, float alpha, const float *a,
                                      int64_t rsa, int64_t csa, const float *b, int64_t rsb, int64_t csb,
                                      float beta, float *c, int64_t ldc);
ampc_status ampc_cpu_gemm_blocked_f64(int64_t n, int64_t m, int64_t k, double alpha, const double *a,
                                      int64_t rsa, int64_t csa, const double *b, int64_t rsb, int64_t csb,
                                      double beta, double *c, int64_t ldc);

/* ---- cpu_gemm_amx.c: bf16 inputs, fp32 C, products summed in fp32 by the AMX tile unit ----
 * _supported() asks the OS for the AMX state (once is enough: callers go through
 * ampc_cpu_gemm_has_amx). The kernel treats bf16 subnormal inputs as zero and flushes
 * subnormal results to zero (values below 1.2e-38). */
bool ampc_cpu_gemm_amx_supported(void);
ampc_status ampc_cpu_gemm_bf16_amx(int64_t n, int64_t m, int64_t k, float alpha, const uint16_t *a, int64_t rsa,
                                   int64_t csa, const uint16_t *b, int64_t rsb, int64_t csb, float beta, float *c,
                                   int64_t ldc);

#endif
