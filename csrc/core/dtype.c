/* dtype.c: dtype facts and PyTorch's promotion lattice (c10/core/ScalarType.cpp). */
#include "dtype.h"

#define AMPC_DTYPE_SIZE(id, name, torch_name, size, suffix) [AMPC_##id] = size,
#define AMPC_DTYPE_NAME(id, name, torch_name, size, suffix) [AMPC_##id] = name,
#define AMPC_DTYPE_TORCH_NAME(id, name, torch_name, size, suffix) [AMPC_##id] = torch_name,
static const size_t itemsizes[AMPC_NUM_DTYPES] = {AMPC_DTYPES(AMPC_DTYPE_SIZE)};
static const char *const names[AMPC_NUM_DTYPES] = {AMPC_DTYPES(AMPC_DTYPE_NAME)};
static const char *const torch_names[AMPC_NUM_DTYPES] = {AMPC_DTYPES(AMPC_DTYPE_TORCH_NAME)};

static ampc_dtype default_dtype = AMPC_FLOAT32;

bool ampc_dtype_is_valid(int dt) { return dt >= 0 && dt < AMPC_NUM_DTYPES; }
size_t ampc_dtype_itemsize(ampc_dtype dt) { return ampc_dtype_is_valid(dt) ? itemsizes[dt] : 0; }
const char *ampc_dtype_name(ampc_dtype dt) { return ampc_dtype_is_valid(dt) ? names[dt] : "undefined"; }
const char *ampc_dtype_torch_name(ampc_dtype dt) { return ampc_dtype_is_valid(dt) ? torch_names[dt] : "Undefined"; }

bool ampc_dtype_is_floating(ampc_dtype dt) {
    return dt == AMPC_FLOAT32 || dt == AMPC_FLOAT16 || dt == AMPC_BFLOAT16 || dt == AMPC_FLOAT64;
}

bool ampc_dtype_is_integral(ampc_dtype dt, bool include_bool) {
    return dt == AMPC_INT64 || dt == AMPC_INT32 || dt == AMPC_UINT8 || (include_bool && dt == AMPC_BOOL);
}

ampc_dtype ampc_promote_types(ampc_dtype a, ampc_dtype b) {
#define f4 AMPC_FLOAT32
#define f2 AMPC_FLOAT16
#define bf AMPC_BFLOAT16
#define f8 AMPC_FLOAT64
#define i8 AMPC_INT64
#define i4 AMPC_INT32
#define u1 AMPC_UINT8
#define b1 AMPC_BOOL
    /* rows and columns in enum order: f32 f16 bf16 f64 i64 i32 u8 bool */
    static const ampc_dtype table[AMPC_NUM_DTYPES][AMPC_NUM_DTYPES] = {
        /* f32 */ {f4, f4, f4, f8, f4, f4, f4, f4},
        /* f16 */ {f4, f2, f4, f8, f2, f2, f2, f2},
        /* bf16*/ {f4, f4, bf, f8, bf, bf, bf, bf},
        /* f64 */ {f8, f8, f8, f8, f8, f8, f8, f8},
        /* i64 */ {f4, f2, bf, f8, i8, i8, i8, i8},
        /* i32 */ {f4, f2, bf, f8, i8, i4, i4, i4},
        /* u8  */ {f4, f2, bf, f8, i8, i4, u1, u1},
        /* bool*/ {f4, f2, bf, f8, i8, i4, u1, b1},
    };
#undef f4
#undef f2
#undef bf
#undef f8
#undef i8
#undef i4
#undef u1
#undef b1
    if (a == AMPC_DTYPE_UNDEFINED) return b;
    if (b == AMPC_DTYPE_UNDEFINED) return a;
    return table[a][b];
}

void ampc_result_type_init(ampc_result_type_state *st) {
    st->dim_result = st->zero_result = st->wrapped_result = AMPC_DTYPE_UNDEFINED;
}

void ampc_result_type_update(ampc_result_type_state *st, ampc_dtype dt, int ndim,
                             bool is_wrapped_number) {
    if (is_wrapped_number) {
        ampc_dtype d = ampc_dtype_is_floating(dt) ? default_dtype : dt;
        st->wrapped_result = ampc_promote_types(st->wrapped_result, d);
    } else if (ndim == 0) {
        st->zero_result = ampc_promote_types(st->zero_result, dt);
    } else {
        st->dim_result = ampc_promote_types(st->dim_result, dt);
    }
}

/* c10's combine_categories: the higher tier wins unless the lower one has a higher category. */
static ampc_dtype combine_categories(ampc_dtype higher, ampc_dtype lower) {
    if (higher != AMPC_DTYPE_UNDEFINED && ampc_dtype_is_floating(higher)) return higher;
    if (higher == AMPC_BOOL || (lower != AMPC_DTYPE_UNDEFINED && ampc_dtype_is_floating(lower)))
        return ampc_promote_types(higher, lower);
    if (higher != AMPC_DTYPE_UNDEFINED) return higher;
    return lower;
}

ampc_dtype ampc_result_type_finish(const ampc_result_type_state *st) {
    return combine_categories(st->dim_result, combine_categories(st->zero_result, st->wrapped_result));
}

ampc_dtype ampc_get_default_dtype(void) { return default_dtype; }
void ampc_set_default_dtype(ampc_dtype dt) { default_dtype = dt; }
