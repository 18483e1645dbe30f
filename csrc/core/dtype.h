/* dtype.h: the element types of ampc tensors and PyTorch's type-promotion rules over them. */
#ifndef AMPC_DTYPE_H
#define AMPC_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "half.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Every dtype once: X(ID, "name", "TorchName", itemsize, suffix). The enum and every per-dtype
 * table (dtype.c's facts, the kernels' loop tables indexed by dtype, the binding's dtype objects)
 * are generated from this list or indexed by the enum it makes, so no table depends on a
 * hand-kept order. `suffix` names the dtype in generated kernel code (f32, f16, ... b8). */
#define AMPC_DTYPES(X)                              \
    X(FLOAT32, "float32", "Float", 4, f32)          \
    X(FLOAT16, "float16", "Half", 2, f16)           \
    X(BFLOAT16, "bfloat16", "BFloat16", 2, bf16)    \
    X(FLOAT64, "float64", "Double", 8, f64)         \
    X(INT64, "int64", "Long", 8, i64)               \
    X(INT32, "int32", "Int", 4, i32)                \
    X(UINT8, "uint8", "Byte", 1, u8)                \
    X(BOOL, "bool", "Bool", 1, b8)

typedef enum ampc_dtype {
#define AMPC_DTYPE_ENUM(id, name, torch_name, size, suffix) AMPC_##id,
    AMPC_DTYPES(AMPC_DTYPE_ENUM)
#undef AMPC_DTYPE_ENUM
    AMPC_NUM_DTYPES,
    AMPC_DTYPE_UNDEFINED = -1
} ampc_dtype;

size_t ampc_dtype_itemsize(ampc_dtype dt);
const char *ampc_dtype_name(ampc_dtype dt);     /* "float32", "bfloat16", ... */
/* PyTorch's ScalarType name, which its error messages quote ("Float", "Long"); "Undefined" else. */
const char *ampc_dtype_torch_name(ampc_dtype dt);
bool ampc_dtype_is_floating(ampc_dtype dt);     /* f32 f16 bf16 f64 */
bool ampc_dtype_is_integral(ampc_dtype dt, bool include_bool);
bool ampc_dtype_is_valid(int dt);

/* torch.promote_types: the smallest dtype both inputs convert to without losing category. */
ampc_dtype ampc_promote_types(ampc_dtype a, ampc_dtype b);

/* torch.result_type over operands, following PyTorch's three priority tiers: tensors with
 * dim > 0, zero-dim tensors, and wrapped Python numbers. A tier only decides the result when it
 * has a higher category (bool < integral < floating) than the tiers above it; a wrapped Python
 * float becomes the default dtype (float32), a wrapped int int64. */
typedef struct ampc_result_type_state {
    ampc_dtype dim_result, zero_result, wrapped_result;
} ampc_result_type_state;

void ampc_result_type_init(ampc_result_type_state *st);
void ampc_result_type_update(ampc_result_type_state *st, ampc_dtype dt, int ndim,
                             bool is_wrapped_number);
ampc_dtype ampc_result_type_finish(const ampc_result_type_state *st);

/* The default floating dtype (torch.get_default_dtype); float32 unless changed. */
ampc_dtype ampc_get_default_dtype(void);
void ampc_set_default_dtype(ampc_dtype dt);

#ifdef __cplusplus
}
#endif
#endif
