/* cpu_gemm_avx512.c: bf16 GEMM with the AVX512-BF16 dot-product instruction (vdpbf16ps), picked
 * at run time on CPUs that have it (Cooper Lake, Sapphire Rapids, Zen 4). C (fp32) = alpha * A @ B
 * + beta * C for bf16 A and B with any strides.
 *
 * vdpbf16ps multiplies 16 pairs of bf16 and adds both products of each pair to an fp32 lane,
 * so one instruction does 32 multiply-adds where an fp32 FMA does 16, and A and B never need
 * converting to fp32. A product of two bf16 values is exact in fp32, so the sum is what an fp32
 * GEMM over the widened inputs gives, up to summation order, except that subnormal inputs and
 * results are flushed to zero. The blocking is cpu_gemm_blocked.c's, on pairs along k:
 *   B strips: for each pair q of k, NR columns x 2 bf16 (B[2q][j] in the low half of lane j)
 *   A strips: for each pair q, MR rows x (A[i][2q], A[i][2q+1]) as one 32-bit word, broadcast
 * The MR x NR = 12 x 32 tile lives in 24 zmm accumulators. Compiled with a target attribute, so
 * the rest of ampc needs no AVX-512 flags. */
#include <stdlib.h>
#include <string.h>

#include "cpu_gemm.h"

#if defined(__GNUC__) && defined(__x86_64__) && (__GNUC__ >= 10 || defined(__clang__))
#define AMPC_HAVE_AVX512BF16_KERNEL 1
#endif

#ifdef AMPC_HAVE_AVX512BF16_KERNEL
#include <immintrin.h>

#define MR 12
#define NR 32
#define KC 256 /* even: blocks of k start on a pair */
#define MC (8 * MR)
#define NC (64 * NR)
#define ATTR __attribute__((target("avx512f,avx512bf16,avx512bw,avx512vl")))

bool ampc_cpu_gemm_avx512bf16_supported(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
}

/* bp: ceil(nc / NR) strips of ceil(kc / 2) pairs x NR columns x 2; padding is zero. */
static void pack_b(uint16_t *bp, const uint16_t *b, int64_t rsb, int64_t csb, int64_t kc, int64_t nc) {
    int64_t kq = (kc + 1) / 2;
    for (int64_t j0 = 0; j0 < nc; j0 += NR, bp += kq * NR * 2) {
        int64_t nr = nc - j0 < NR ? nc - j0 : NR;
        for (int64_t q = 0; q < kq; q++) {
            uint16_t *dst = bp + q * NR * 2;
            const uint16_t *r0 = b + 2 * q * rsb + j0 * csb;
            bool has_r1 = 2 * q + 1 < kc;
            for (int64_t c = 0; c < NR; c++) {
                dst[2 * c] = c < nr ? r0[c * csb] : 0;
                dst[2 * c + 1] = c < nr && has_r1 ? r0[rsb + c * csb] : 0;
            }
        }
    }
}

/* ap: ceil(mc / MR) strips of ceil(kc / 2) pairs x MR rows, one 32-bit word per (pair, row). */
static void pack_a(uint32_t *ap, const uint16_t *a, int64_t rsa, int64_t csa, int64_t mc, int64_t kc) {
    int64_t kq = (kc + 1) / 2;
    for (int64_t i0 = 0; i0 < mc; i0 += MR, ap += kq * MR) {
        int64_t mr = mc - i0 < MR ? mc - i0 : MR;
        for (int64_t q = 0; q < kq; q++)
            for (int64_t r = 0; r < MR; r++) {
                uint32_t lo = 0, hi = 0;
                if (r < mr) {
                    const uint16_t *p = a + (i0 + r) * rsa + 2 * q * csa;
                    lo = p[0];
                    hi = 2 * q + 1 < kc ? p[csa] : 0;
                }
                ap[q * MR + r] = lo | hi << 16;
            }
    }
}

/* The 12 x 32 tile: acc = sum over pairs; then C tile = alpha * acc + beta * C (beta 0: no read). */
ATTR static void micro(int64_t kq, const uint32_t *ap, const uint16_t *bp, float *c, int64_t ldc, int64_t mr,
                       int64_t nr, float alpha, float beta) {
    __m512 acc[MR][2];
    for (int i = 0; i < MR; i++) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
    for (int64_t q = 0; q < kq; q++) {
        __m512bh b0 = (__m512bh)_mm512_loadu_si512(bp + q * NR * 2);
        __m512bh b1 = (__m512bh)_mm512_loadu_si512(bp + q * NR * 2 + NR);
        for (int i = 0; i < MR; i++) {
            __m512bh ai = (__m512bh)_mm512_set1_epi32((int)ap[q * MR + i]);
            acc[i][0] = _mm512_dpbf16_ps(acc[i][0], ai, b0);
            acc[i][1] = _mm512_dpbf16_ps(acc[i][1], ai, b1);
        }
    }
    __mmask16 m0 = nr >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << nr) - 1u);
    __mmask16 m1 = nr >= 32 ? (__mmask16)0xffff : nr > 16 ? (__mmask16)((1u << (nr - 16)) - 1u) : 0;
    __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
    for (int i = 0; i < MR; i++) {
        if (i >= mr) break;
        float *row = c + i * ldc;
        __m512 r0 = _mm512_mul_ps(va, acc[i][0]), r1 = _mm512_mul_ps(va, acc[i][1]);
        if (beta != 0) {
            r0 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, row), r0);
            r1 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, row + 16), r1);
        }
        _mm512_mask_storeu_ps(row, m0, r0);
        _mm512_mask_storeu_ps(row + 16, m1, r1);
    }
}

ampc_status ampc_cpu_gemm_bf16_avx512(int64_t n, int64_t m, int64_t k, float alpha, const uint16_t *a,
                                      int64_t rsa, int64_t csa, const uint16_t *b, int64_t rsb, int64_t csb,
                                      float beta, float *c, int64_t ldc) {
    if (n <= 0 || m <= 0) return AMPC_OK;
    if (k <= 0) { /* C = beta * C; not worth vector code */
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < m; j++) c[i * ldc + j] = beta == 0 ? 0.0f : beta * c[i * ldc + j];
        return AMPC_OK;
    }
    int64_t nc_max = m < NC ? m : NC, kc_max = k < KC ? k : KC;
    int64_t kq_max = (kc_max + 1) / 2;
    uint16_t *bp = (uint16_t *)aligned_alloc(64, sizeof(uint16_t) * (size_t)(kq_max * 2 * ((nc_max + NR - 1) / NR) * NR));
    if (!bp) return ampc_set_error(AMPC_E_NOMEM, "gemm: out of memory packing B");
    int64_t n_blocks = (n + MC - 1) / MC;
    int parallel = (double)n * (double)m * (double)k > 4e6 && n_blocks > 1;
    int failed = 0;
    for (int64_t jc = 0; jc < m; jc += NC) {
        int64_t nc = m - jc < NC ? m - jc : NC;
        for (int64_t pc = 0; pc < k && !failed; pc += KC) {
            int64_t kc = k - pc < KC ? k - pc : KC, kq = (kc + 1) / 2;
            float beta_block = pc == 0 ? beta : 1.0f; /* later k blocks accumulate onto the first */
            pack_b(bp, b + pc * rsb + jc * csb, rsb, csb, kc, nc);
#pragma omp parallel if (parallel)
            {
                uint32_t *ap = (uint32_t *)malloc(sizeof(uint32_t) * (size_t)(MC * kq));
                if (!ap) {
#pragma omp atomic write
                    failed = 1;
                }
#pragma omp for schedule(dynamic)
                for (int64_t blk = 0; blk < n_blocks; blk++) {
                    if (!ap) continue;
                    int64_t ic = blk * MC, mc = n - ic < MC ? n - ic : MC;
                    pack_a(ap, a + ic * rsa + pc * csa, rsa, csa, mc, kc);
                    for (int64_t jr = 0; jr < nc; jr += NR) {
                        int64_t nr = nc - jr < NR ? nc - jr : NR;
                        for (int64_t ir = 0; ir < mc; ir += MR) {
                            int64_t mr = mc - ir < MR ? mc - ir : MR;
                            micro(kq, ap + ir * kq, bp + jr * kq * 2, c + (ic + ir) * ldc + jc + jr, ldc, mr, nr,
                                  alpha, beta_block);
                        }
                    }
                }
                free(ap);
            }
        }
    }
    free(bp);
    if (failed) return ampc_set_error(AMPC_E_NOMEM, "gemm: out of memory packing A");
    return AMPC_OK;
}

#else /* not x86-64 GCC/Clang: the kernel does not exist and is never selected */

bool ampc_cpu_gemm_avx512bf16_supported(void) { return false; }

ampc_status ampc_cpu_gemm_bf16_avx512(int64_t n, int64_t m, int64_t k, float alpha, const uint16_t *a,
                                      int64_t rsa, int64_t csa, const uint16_t *b, int64_t rsb, int64_t csb,
                                      float beta, float *c, int64_t ldc) {
    return ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "gemm: this build has no AVX512-BF16 kernel");
}

#endif
