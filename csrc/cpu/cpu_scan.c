/* cpu_scan.c: the CPU SCAN kernel CUMSUM: running sums along one dim of a contiguous input
 * into a contiguous output of the same dtype (the frontend casts and copies first). Floats
 * accumulate in double and round each prefix once, like PyTorch's CPU kernel; integers wrap. */
#include "cpu_backend.h"
#include "cpu_dtype_loops.h"
#include "cpu_reduce.h"

/* out = running sums of `in` along a dim of length n, for columns [c0, c0 + w) of the `cols`
 * interleaved columns (the dims inside it). in and out are contiguous, of one dtype; floats
 * accumulate in double, integers in uint64 (wrapping, defined). */
#define SCAN_DTYPES(X)                                                                         \
    X(f32, float, double) X(f16, ampc_half, double) X(bf16, ampc_bfloat16, double)             \
    X(f64, double, double) X(i64, int64_t, uint64_t) X(i32, int32_t, uint64_t)                 \
    X(u8, uint8_t, uint64_t) X(b8, bool, uint64_t)

#define DEFINE_SCAN(SUF, CT, ACC)                                                              \
    static void scan_##SUF(char *out, const char *in, int64_t n, int64_t cols, int64_t c0, int64_t w) { \
        const CT *restrict x = (const CT *)in + c0;                                            \
        CT *restrict o = (CT *)out + c0;                                                       \
        if (cols == 1) { /* the scanned dim is innermost: one running sum */                   \
            ACC acc = 0;                                                                       \
            for (int64_t i = 0; i < n; i++) {                                                  \
                acc += (ACC)AMPC_LOAD_##SUF(x + i);                                            \
                AMPC_STORE_##SUF(o + i, acc);                                                  \
            }                                                                                  \
            return;                                                                            \
        }                                                                                      \
        ACC acc[COL_CHUNK];                                                                    \
        for (int64_t j = 0; j < w; j++) acc[j] = 0;                                            \
        for (int64_t i = 0; i < n; i++, x += cols, o += cols)                                  \
            for (int64_t j = 0; j < w; j++) {                                                  \
                acc[j] += (ACC)AMPC_LOAD_##SUF(x + j);                                         \
                AMPC_STORE_##SUF(o + j, acc[j]);                                               \
            }                                                                                  \
    }
SCAN_DTYPES(DEFINE_SCAN)

typedef void (*scan_fn)(char *out, const char *in, int64_t n, int64_t cols, int64_t c0, int64_t w);
static const scan_fn scan_loops[AMPC_NUM_DTYPES] = {
    [AMPC_FLOAT32] = scan_f32, [AMPC_FLOAT16] = scan_f16, [AMPC_BFLOAT16] = scan_bf16, [AMPC_FLOAT64] = scan_f64,
    [AMPC_INT64] = scan_i64,   [AMPC_INT32] = scan_i32,   [AMPC_UINT8] = scan_u8,      [AMPC_BOOL] = scan_b8};

static ampc_status cpu_cumsum(ampc_op op, const ampc_scan_args *a) {
    if (op != AMPC_OP_CUMSUM) return ampc_cpu_scan_more(op, a); /* issue 12's scan rows (cpu_scan_more.c) */
    ampc_tensor *out = a->output;
    const ampc_tensor *in = a->input;
    ampc_scan_plan sp = ampc_scan_plan_make(in, a->dim); /* (outer, n, cols): the scanned dim in the middle */
    int64_t outer = sp.outer, n = sp.n, cols = sp.cols;
    int64_t plane = n * cols * (int64_t)ampc_dtype_itemsize(in->dtype);
    int64_t n_chunks = (cols + COL_CHUNK - 1) / COL_CHUNK, tasks = outer * n_chunks;
    const char *x = (const char *)ampc_data_ptr(in);
    char *o = (char *)ampc_data_ptr(out);
    scan_fn fn = scan_loops[in->dtype];
    int nt = ampc_cpu_reduce_threads(outer * n * cols);
    if (tasks < nt) nt = (int)tasks;
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t t = 0; t < tasks; t++) {
        int64_t b = t / n_chunks, c0 = (t % n_chunks) * COL_CHUNK;
        fn(o + b * plane, x + b * plane, n, cols, c0, cols - c0 < COL_CHUNK ? cols - c0 : COL_CHUNK);
    }
    return AMPC_OK;
}

void ampc_cpu_register_scan(void) {
    ampc_register_scan(AMPC_CPU, cpu_cumsum);
    ampc_cpu_register_scan_more();
}
