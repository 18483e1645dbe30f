/* cpu_gemm_amx.c: bf16 GEMM on the AMX tile unit (Intel Sapphire Rapids and later), picked at run
 * time. C (fp32) = alpha * A @ B + beta * C for bf16 A and B with any strides.
 *
 * One TDPBF16PS multiplies a 16 x 32 bf16 tile of A by a 32 x 16 tile of B into a 16 x 16 fp32
 * tile: 8192 multiply-adds, about 16x what AVX-512 FMA does per cycle. Products of bf16 values
 * are exact in fp32 and summed in fp32, so the result is an fp32-accumulated GEMM, rounded
 * once by the caller, like the widen-to-fp32 path; but bf16 subnormal inputs and fp32 subnormal
 * results are flushed to zero (values below 1.2e-38).
 * (A vdpbf16ps AVX512-BF16 kernel was tried first: on this class of CPU it ran at ~0.7x of
 * widening to fp32 + OpenBLAS sgemm, so it was dropped.)
 *
 * Blocking follows cpu_gemm_blocked.c: a KC x NC panel of B is packed into 16-column strips in
 * the "VNNI" layout the tile unit wants (k in pairs: B[2q][j], B[2q+1][j] adjacent), each
 * MC x KC block of A row-major, both zero-padded to whole tiles; a 32 x 32 block of C lives in
 * four accumulator tiles (tiles 0-3), fed by two A tiles (4, 5) and two B tiles (6, 7).
 * Linux gives a process the (large) AMX register state only on request: arch_prctl once. */
#define _GNU_SOURCE /* syscall() */
#include <stdlib.h>
#include <string.h>

#include "cpu_gemm.h"

#if defined(__linux__) && defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#define AMPC_HAVE_AMX_KERNEL 1
#endif

#ifdef AMPC_HAVE_AMX_KERNEL
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18
#define AMX_ATTR __attribute__((target("amx-tile,amx-bf16,avx512f")))

#define TM 16 /* tile rows (of A and C) */
#define TN 16 /* tile columns of C and B */
#define TK 32 /* bf16 values along k per tile */
#define BM (2 * TM) /* the C block of one inner step: 2 x 2 tiles */
#define BN (2 * TN)
#define KC 512 /* C passes through memory once per KC block; B strips stay in L2 */
#define MC 128
#define NC 512

bool ampc_cpu_gemm_amx_supported(void) {
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("amx-tile") || !__builtin_cpu_supports("amx-bf16")) return false;
    return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
}

static int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

/* One TN-column strip of the packed B panel (columns j0.., kc_pad / 2 pair-rows of TN columns
 * x 2 bf16), at bp + j0 * kc_pad; padding zero. */
static void pack_b_strip(uint16_t *bp, const uint16_t *b, int64_t rsb, int64_t csb, int64_t kc, int64_t nc,
                         int64_t kc_pad, int64_t j0) {
    uint16_t *strip = bp + j0 * kc_pad;
    for (int64_t q = 0; q < kc_pad / 2; q++) {
        uint16_t *dst = strip + q * TN * 2;
        const uint16_t *r0 = b + 2 * q * rsb + j0 * csb, *r1 = r0 + rsb;
        if (csb == 1 && j0 + TN <= nc && 2 * q + 1 < kc) { /* the common case, branch-free */
            for (int c = 0; c < TN; c++) dst[2 * c] = r0[c], dst[2 * c + 1] = r1[c];
            continue;
        }
        for (int64_t c = 0; c < TN; c++) {
            bool col = j0 + c < nc;
            dst[2 * c] = col && 2 * q < kc ? r0[c * csb] : 0;
            dst[2 * c + 1] = col && 2 * q + 1 < kc ? r1[c * csb] : 0;
        }
    }
}

/* ap: mc_pad x kc_pad, row-major; padding zero. */
static void pack_a(uint16_t *ap, const uint16_t *a, int64_t rsa, int64_t csa, int64_t mc, int64_t kc, int64_t mc_pad,
                   int64_t kc_pad) {
    memset(ap + mc * kc_pad, 0, sizeof(uint16_t) * (size_t)((mc_pad - mc) * kc_pad));
    if (csa != 1 && rsa == 1) { /* A transposed: read down its columns, along memory */
        for (int64_t i = 0; i < mc; i++) memset(ap + i * kc_pad + kc, 0, sizeof(uint16_t) * (size_t)(kc_pad - kc));
        for (int64_t p = 0; p < kc; p++)
            for (int64_t i = 0; i < mc; i++) ap[i * kc_pad + p] = a[i + p * csa];
        return;
    }
    for (int64_t i = 0; i < mc; i++) {
        uint16_t *dst = ap + i * kc_pad;
        const uint16_t *src = a + i * rsa;
        if (csa == 1) memcpy(dst, src, sizeof(uint16_t) * (size_t)kc);
        else
            for (int64_t p = 0; p < kc; p++) dst[p] = src[p * csa];
        memset(dst + kc, 0, sizeof(uint16_t) * (size_t)(kc_pad - kc));
    }
}

typedef struct tile_config {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;

/* Every tile used is 16 rows x 64 bytes: 16 fp32 of C, 32 bf16 of A, 16 pairs of B. */
AMX_ATTR static void configure_tiles(void) {
    tile_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int t = 0; t < 8; t++) cfg.colsb[t] = 64, cfg.rows[t] = 16;
    _tile_loadconfig(&cfg);
}

/* out (BM x BN, row stride ldo floats) = a (BM x kc_pad, row stride kc_pad) @ the two B strips
 * at b, plus out's own values when `accumulate`. */
AMX_ATTR static void block_32x32(int64_t kc_pad, const uint16_t *a, const uint16_t *b, float *out, int64_t ldo,
                                 bool accumulate) {
    const uint16_t *a1 = a + TM * kc_pad, *b1 = b + TN * kc_pad;
    float *out1 = out + TM * ldo;
    if (accumulate) {
        _tile_loadd(0, out, ldo * 4);
        _tile_loadd(1, out + TN, ldo * 4);
        _tile_loadd(2, out1, ldo * 4);
        _tile_loadd(3, out1 + TN, ldo * 4);
    } else {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
    }
    for (int64_t s = 0; s < kc_pad; s += TK) {
        _tile_loadd(4, a + s, kc_pad * 2);
        _tile_loadd(5, a1 + s, kc_pad * 2);
        _tile_loadd(6, b + s * TN, TN * 4);
        _tile_loadd(7, b1 + s * TN, TN * 4);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    _tile_stored(0, out, ldo * 4);
    _tile_stored(1, out + TN, ldo * 4);
    _tile_stored(2, out1, ldo * 4);
    _tile_stored(3, out1 + TN, ldo * 4);
}

/* C tile (mr x nr) = alpha * acc + beta * C; beta 0 writes without reading C. */
static void store(float *c, int64_t ldc, const float *acc, int64_t mr, int64_t nr, float alpha, float beta) {
    for (int64_t i = 0; i < mr; i++) {
        float *row = c + i * ldc;
        const float *ar = acc + i * BN;
        if (beta == 0)
            for (int64_t j = 0; j < nr; j++) row[j] = alpha * ar[j];
        else
            for (int64_t j = 0; j < nr; j++) row[j] = beta * row[j] + alpha * ar[j];
    }
}

AMX_ATTR ampc_status ampc_cpu_gemm_bf16_amx(int64_t n, int64_t m, int64_t k, float alpha, const uint16_t *a,
                                            int64_t rsa, int64_t csa, const uint16_t *b, int64_t rsb, int64_t csb,
                                            float beta, float *c, int64_t ldc) {
    if (n <= 0 || m <= 0) return AMPC_OK;
    if (k <= 0) { /* C = beta * C */
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < m; j++) c[i * ldc + j] = beta == 0 ? 0.0f : beta * c[i * ldc + j];
        return AMPC_OK;
    }
    int64_t kc_max = round_up(k < KC ? k : KC, TK), nc_max = round_up(m < NC ? m : NC, BN);
    uint16_t *bp = (uint16_t *)malloc(sizeof(uint16_t) * (size_t)(kc_max * nc_max));
    if (!bp) return ampc_set_error(AMPC_E_NOMEM, "gemm: out of memory packing B");
    int64_t n_blocks = (n + MC - 1) / MC;
    int parallel = (double)n * (double)m * (double)k > 4e6 && n_blocks > 1;
    int failed = 0;
    for (int64_t jc = 0; jc < m; jc += NC) {
        int64_t nc = m - jc < NC ? m - jc : NC, nc_pad = round_up(nc, BN);
        for (int64_t pc = 0; pc < k && !failed; pc += KC) {
            int64_t kc = k - pc < KC ? k - pc : KC, kc_pad = round_up(kc, TK);
            float beta_block = pc == 0 ? beta : 1.0f; /* later k blocks accumulate onto the first */
            /* C = 1 * A @ B + (0 or 1) * C needs no epilogue: the tiles load and store C itself */
            bool direct = alpha == 1 && (beta_block == 0 || beta_block == 1) && ldc <= INT32_MAX / 4;
#pragma omp parallel if (parallel)
            {
#pragma omp for
                for (int64_t j0 = 0; j0 < nc_pad; j0 += TN)
                    pack_b_strip(bp, b + pc * rsb + jc * csb, rsb, csb, kc, nc, kc_pad, j0);
                uint16_t *ap = (uint16_t *)malloc(sizeof(uint16_t) * (size_t)(MC * kc_pad));
                float acc[BM * BN];
                if (!ap) {
#pragma omp atomic write
                    failed = 1;
                }
                configure_tiles(); /* per thread: the tile configuration is thread state */
#pragma omp for schedule(dynamic)
                for (int64_t blk = 0; blk < n_blocks; blk++) {
                    if (!ap) continue;
                    int64_t ic = blk * MC, mc = n - ic < MC ? n - ic : MC, mc_pad = round_up(mc, BM);
                    pack_a(ap, a + ic * rsa + pc * csa, rsa, csa, mc, kc, mc_pad, kc_pad);
                    for (int64_t jr = 0; jr < nc; jr += BN)
                        for (int64_t ir = 0; ir < mc; ir += BM) {
                            float *cb = c + (ic + ir) * ldc + jc + jr;
                            int64_t mr = mc - ir < BM ? mc - ir : BM, nr = nc - jr < BN ? nc - jr : BN;
                            const uint16_t *ab = ap + ir * kc_pad, *bb = bp + jr * kc_pad;
                            if (direct && mr == BM && nr == BN) { /* tiles straight to and from C */
                                block_32x32(kc_pad, ab, bb, cb, ldc, beta_block == 1);
                            } else {
                                block_32x32(kc_pad, ab, bb, acc, BN, false);
                                store(cb, ldc, acc, mr, nr, alpha, beta_block);
                            }
                        }
                }
                _tile_release(); /* hand the tile state back so context switches stay cheap */
                free(ap);
            }
        }
    }
    free(bp);
    if (failed) return ampc_set_error(AMPC_E_NOMEM, "gemm: out of memory packing A");
    return AMPC_OK;
}

#else /* no AMX toolchain or OS: the kernel does not exist and is never selected */

bool ampc_cpu_gemm_amx_supported(void) { return false; }

ampc_status ampc_cpu_gemm_bf16_amx(int64_t n, int64_t m, int64_t k, float alpha, const uint16_t *a, int64_t rsa,
                                   int64_t csa, const uint16_t *b, int64_t rsb, int64_t csb, float beta, float *c,
                                   int64_t ldc) {
    return ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "gemm: this build has no AMX kernel");
}

#endif
