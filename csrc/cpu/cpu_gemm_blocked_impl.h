/* cpu_gemm_blocked_impl.h: the body of cpu_gemm_blocked.c's driver, written once and included
 * once per element type with T (float, double) and SUF (f32, f64) defined, and MR, NR, KC, MC, NC
 * micro_fn_<SUF> and pick_<SUF>() in scope. Not a public header. */
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define FN(name) CAT(name, SUF)

/* ap: ceil(mc / MR) strips of kc x MR, rows past mc zero, so the micro-kernel has no edges. */
static void FN(pack_a_)(T *ap, const T *a, int64_t rsa, int64_t csa, int64_t mc, int64_t kc) {
    for (int64_t i0 = 0; i0 < mc; i0 += MR, ap += kc * MR) {
        int64_t mr = mc - i0 < MR ? mc - i0 : MR;
        for (int64_t p = 0; p < kc; p++)
            for (int64_t r = 0; r < MR; r++) ap[p * MR + r] = r < mr ? a[(i0 + r) * rsa + p * csa] : (T)0;
    }
}

/* The strip of the packed B panel for columns j0..j0+NR (kc x NR at bp + j0 * kc); columns past
 * nc zero. */
static void FN(pack_b_strip_)(T *bp, const T *b, int64_t rsb, int64_t csb, int64_t kc, int64_t nc, int64_t j0) {
    T *strip = bp + j0 * kc;
    int64_t nr = nc - j0 < NR ? nc - j0 : NR;
    for (int64_t p = 0; p < kc; p++)
        for (int64_t c = 0; c < NR; c++) strip[p * NR + c] = c < nr ? b[p * rsb + (j0 + c) * csb] : (T)0;
}

/* C tile (mr x nr) = alpha * acc + beta * C; beta 0 writes without reading C. */
static void FN(store_)(T *c, int64_t ldc, const T *acc, int64_t mr, int64_t nr, T alpha, T beta) {
    for (int64_t i = 0; i < mr; i++) {
        T *row = c + i * ldc;
        const T *ar = acc + i * NR;
        if (beta == 0)
            for (int64_t j = 0; j < nr; j++) row[j] = alpha * ar[j];
        else if (beta == 1)
            for (int64_t j = 0; j < nr; j++) row[j] += alpha * ar[j];
        else
            for (int64_t j = 0; j < nr; j++) row[j] = beta * row[j] + alpha * ar[j];
    }
}

ampc_status FN(ampc_cpu_gemm_blocked_)(int64_t n, int64_t m, int64_t k, T alpha, const T *a, int64_t rsa,
                                      int64_t csa, const T *b, int64_t rsb, int64_t csb, T beta, T *c,
                                      int64_t ldc) {
    if (n <= 0 || m <= 0) return AMPC_OK;
    if (k <= 0) { /* nothing to multiply: C = beta * C */
        T zeros[NR] = {0};
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < m; j += NR) FN(store_)(c + i * ldc + j, ldc, zeros, 1, m - j < NR ? m - j : NR, alpha, beta);
        return AMPC_OK;
    }
    FN(micro_fn_) micro = FN(pick_)();
    int64_t nc_max = m < NC ? m : NC, kc_max = k < KC ? k : KC;
    T *bp = (T *)malloc(sizeof(T) * (size_t)(kc_max * ((nc_max + NR - 1) / NR) * NR));
    if (!bp) return ampc_set_error(AMPC_E_NOMEM, "gemm: out of memory packing B");
    int64_t n_blocks = (n + MC - 1) / MC;
    /* Worth sharing out: each thread takes whole MC row blocks and packs its own A block. */
    int parallel = (double)n * (double)m * (double)k > 4e6 && n_blocks > 1;
    int failed = 0;
    for (int64_t jc = 0; jc < m; jc += NC) {
        int64_t nc = m - jc < NC ? m - jc : NC;
        for (int64_t pc = 0; pc < k && !failed; pc += KC) {
            int64_t kc = k - pc < KC ? k - pc : KC;
            T beta_block = pc == 0 ? beta : (T)1; /* later k blocks accumulate onto the first */
#pragma omp parallel if (parallel)
            {
#pragma omp for
                for (int64_t j0 = 0; j0 < nc; j0 += NR) FN(pack_b_strip_)(bp, b + pc * rsb + jc * csb, rsb, csb, kc, nc, j0);
                T *ap = (T *)malloc(sizeof(T) * (size_t)(MC * kc));
                T acc[MR * NR];
                if (!ap) {
#pragma omp atomic write
                    failed = 1;
                }
#pragma omp for schedule(dynamic)
                for (int64_t blk = 0; blk < n_blocks; blk++) {
                    if (!ap) continue;
                    int64_t ic = blk * MC, mc = n - ic < MC ? n - ic : MC;
                    FN(pack_a_)(ap, a + ic * rsa + pc * csa, rsa, csa, mc, kc);
                    for (int64_t jr = 0; jr < nc; jr += NR) {
                        int64_t nr = nc - jr < NR ? nc - jr : NR;
                        for (int64_t ir = 0; ir < mc; ir += MR) {
                            int64_t mr = mc - ir < MR ? mc - ir : MR;
                            micro(kc, ap + ir * kc, bp + jr * kc, acc);
                            FN(store_)(c + (ic + ir) * ldc + jc + jr, ldc, acc, mr, nr, alpha, beta_block);
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

#undef FN
#undef CAT
#undef CAT_
