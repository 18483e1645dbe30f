/* cpu_copy.c: COPY (strided copy with a cast between any two dtypes, broadcasting the source)
 * and FILL (set every element to a scalar) on the CPU. Every contiguous(), .to(dtype), clone()
 * and setitem ends here. Host <-> CUDA copies are handled by the CUDA backend. */
#include <string.h>

#include "../core/kernel_args.h"
#include "cpu_backend.h"
#include "cpu_dtype_loops.h"
#include "cpu_iter.h"

/* One inner loop per (src, dst) pair: 64 functions, generated. */
#define DEFINE_CAST(SRC_SUF, DST_ENUM, DST_SUF, DST_CT, DST_VT)                                   \
    static void cast_##SRC_SUF##_to_##DST_SUF(char **d, const int64_t *s, int64_t n, const void *c) { \
        (void)c;                                                                                  \
        char *o = d[0];                                                                           \
        const char *i = d[1];                                                                     \
        for (int64_t k = 0; k < n; k++, o += s[0], i += s[1]) AMPC_STORE_##DST_SUF(o, AMPC_LOAD_##SRC_SUF(i)); \
    }
#define DEFINE_CASTS_FROM(SRC_ENUM, SRC_SUF, SRC_CT, SRC_VT) AMPC_FOR_EACH_DTYPE_ARG(DEFINE_CAST, SRC_SUF)
AMPC_FOR_EACH_DTYPE(DEFINE_CASTS_FROM)

#define CAST_ENTRY(SRC_SUF, DST_ENUM, DST_SUF, DST_CT, DST_VT) cast_##SRC_SUF##_to_##DST_SUF,
#define CAST_ROW(SRC_ENUM, SRC_SUF, SRC_CT, SRC_VT) {AMPC_FOR_EACH_DTYPE_ARG(CAST_ENTRY, SRC_SUF)},
static const ampc_cpu_loop_fn cast_loops[AMPC_NUM_DTYPES][AMPC_NUM_DTYPES] = {AMPC_FOR_EACH_DTYPE(CAST_ROW)};

/* Same dtype: byte copies; the contiguous case is one memcpy per row. Strided rows (a
 * transpose, flip's negative strides, repeat's broadcast source) move one item of a constant
 * size per step, which compiles to a load and a store (a memcpy of a variable size is a call). */
#define STRIDED_MOVE(T)                                                                   \
    for (int64_t k = 0; k < n; k++, o += s[0], i += s[1]) *(T *)(void *)o = *(const T *)(const void *)i
/* out[k] = in[-k]: a loop the compiler vectorises with a shuffle */
#define REVERSED_MOVE(T)                                                   \
    do {                                                                   \
        T *restrict ot = (T *)(void *)o;                                   \
        const T *restrict it = (const T *)(const void *)i;                 \
        for (int64_t k = 0; k < n; k++) ot[k] = it[-k];                    \
    } while (0)
static void copy_bytes(char **d, const int64_t *s, int64_t n, const void *c) {
    size_t item = *(const size_t *)c;
    if (s[0] == (int64_t)item && s[1] == (int64_t)item) {
        memcpy(d[0], d[1], (size_t)n * item);
        return;
    }
    char *o = d[0];
    const char *i = d[1];
    if (s[0] == (int64_t)item && s[1] == -(int64_t)item) { /* a reversed row (flip of the last dim) */
        switch (item) {
        case 2: REVERSED_MOVE(uint16_t); return;
        case 4: REVERSED_MOVE(uint32_t); return;
        case 8: REVERSED_MOVE(uint64_t); return;
        default: break;
        }
    }
    switch (item) { /* storage is aligned to its item size */
    case 1: STRIDED_MOVE(uint8_t); break;
    case 2: STRIDED_MOVE(uint16_t); break;
    case 4: STRIDED_MOVE(uint32_t); break;
    case 8: STRIDED_MOVE(uint64_t); break;
    default:
        for (int64_t k = 0; k < n; k++, o += s[0], i += s[1]) memcpy(o, i, item);
    }
}
#undef STRIDED_MOVE
#undef REVERSED_MOVE

static ampc_status cpu_copy(ampc_op op, const ampc_copy_args *p) {
    ampc_tensor *dst = p->dst;
    const ampc_tensor *src = p->src;
    if (src->device.type != AMPC_CPU || dst->device.type != AMPC_CPU)
        return ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "copy_: the CPU backend cannot copy to or from a device");
    ampc_cpu_iter it;
    AMPC_TRY(ampc_cpu_iter_init(&it, 1, &dst, 1, &src));
    if (src->dtype == dst->dtype) {
        size_t item = ampc_dtype_itemsize(src->dtype);
        ampc_cpu_iter_run(&it, copy_bytes, &item);
    } else {
        ampc_cpu_iter_run(&it, cast_loops[src->dtype][dst->dtype], NULL);
    }
    return AMPC_OK;
}

/* FILL: store the scalar once in the destination dtype, then replicate its bytes. */
static void fill_bytes(char **d, const int64_t *s, int64_t n, const void *c) {
    const unsigned char *v = (const unsigned char *)c + sizeof(size_t);
    size_t item = *(const size_t *)c;
    char *o = d[0];
    for (int64_t k = 0; k < n; k++, o += s[0]) memcpy(o, v, item);
}

static ampc_status cpu_fill(ampc_op op, const ampc_fill_args *p) {
    ampc_tensor *t = p->dst;
    struct {
        size_t item;
        unsigned char value[8];
    } ctx;
    ctx.item = ampc_dtype_itemsize(t->dtype);
    ampc_scalar v = p->value;
    double f = ampc_scalar_to_double(v);
    int64_t i = ampc_scalar_to_int(v);
    char *bytes = (char *)ctx.value;
    switch (t->dtype) {
    case AMPC_FLOAT32: AMPC_STORE_f32(bytes, f); break;
    case AMPC_FLOAT16: AMPC_STORE_f16(bytes, f); break;
    case AMPC_BFLOAT16: AMPC_STORE_bf16(bytes, f); break;
    case AMPC_FLOAT64: AMPC_STORE_f64(bytes, f); break;
    case AMPC_INT64: AMPC_STORE_i64(bytes, i); break;
    case AMPC_INT32: AMPC_STORE_i32(bytes, i); break;
    case AMPC_UINT8: AMPC_STORE_u8(bytes, i); break;
    case AMPC_BOOL: AMPC_STORE_b8(bytes, v.kind == AMPC_SCALAR_FLOAT ? (f != 0) : (i != 0)); break;
    default: return ampc_set_error(AMPC_E_TYPE, "fill_: unsupported dtype");
    }
    if (ampc_is_contiguous(t) && ctx.item == 1) {
        memset(ampc_data_ptr(t), ctx.value[0], (size_t)ampc_numel(t));
        return AMPC_OK;
    }
    ampc_cpu_iter it;
    AMPC_TRY(ampc_cpu_iter_init(&it, 1, &t, 0, NULL));
    ampc_cpu_iter_run(&it, fill_bytes, &ctx);
    return AMPC_OK;
}

void ampc_cpu_register_copy(void) {
    ampc_register_copy(AMPC_CPU, cpu_copy);
    ampc_register_fill(AMPC_CPU, cpu_fill);
}
