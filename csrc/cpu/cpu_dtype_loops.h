/* cpu_dtype_loops.h: X-macros over dtypes for the CPU kernels.
 *
 * AMPC_FOR_EACH_DTYPE(X) calls X(ENUM, suffix, ctype, vtype, LOAD, STORE) once per dtype:
 * ctype is the storage type, vtype the type arithmetic runs in (float for fp16/bf16: PyTorch's
 * CPU "opmath"), LOAD(p) reads one element as vtype from a char pointer, STORE(p, v) rounds and
 * writes any arithmetic value. Conversions to fp16/bf16 go through fp32 with round-to-nearest-
 * even, as PyTorch does. */
#ifndef AMPC_CPU_DTYPE_LOOPS_H
#define AMPC_CPU_DTYPE_LOOPS_H

#include <stdbool.h>
#include <stdint.h>

#include "../core/half.h"

#define AMPC_LOAD_f32(p) (*(const float *)(p))
#define AMPC_LOAD_f16(p) ampc_half_to_f32(*(const ampc_half *)(p))
#define AMPC_LOAD_bf16(p) ampc_bf16_to_f32(*(const ampc_bfloat16 *)(p))
#define AMPC_LOAD_f64(p) (*(const double *)(p))
#define AMPC_LOAD_i64(p) (*(const int64_t *)(p))
#define AMPC_LOAD_i32(p) (*(const int32_t *)(p))
#define AMPC_LOAD_u8(p) (*(const uint8_t *)(p))
#define AMPC_LOAD_b8(p) (*(const bool *)(p))

#define AMPC_STORE_f32(p, v) (*(float *)(p) = (float)(v))
#define AMPC_STORE_f16(p, v) (*(ampc_half *)(p) = ampc_f32_to_half((float)(v)))
#define AMPC_STORE_bf16(p, v) (*(ampc_bfloat16 *)(p) = ampc_f32_to_bf16((float)(v)))
#define AMPC_STORE_f64(p, v) (*(double *)(p) = (double)(v))
#define AMPC_STORE_i64(p, v) (*(int64_t *)(p) = (int64_t)(v))
#define AMPC_STORE_i32(p, v) (*(int32_t *)(p) = (int32_t)(int64_t)(v))
#define AMPC_STORE_u8(p, v) (*(uint8_t *)(p) = (uint8_t)(int64_t)(v))
#define AMPC_STORE_b8(p, v) (*(bool *)(p) = ((v) != 0))

/* X(ENUM, suffix, ctype, vtype) */
#define AMPC_FOR_EACH_DTYPE(X)                     \
    X(AMPC_FLOAT32, f32, float, float)             \
    X(AMPC_FLOAT16, f16, ampc_half, float)         \
    X(AMPC_BFLOAT16, bf16, ampc_bfloat16, float)   \
    X(AMPC_FLOAT64, f64, double, double)           \
    X(AMPC_INT64, i64, int64_t, int64_t)           \
    X(AMPC_INT32, i32, int32_t, int32_t)           \
    X(AMPC_UINT8, u8, uint8_t, uint8_t)            \
    X(AMPC_BOOL, b8, bool, bool)

/* The same list with a fixed extra argument, for nesting (casts: src x dst). */
#define AMPC_FOR_EACH_DTYPE_ARG(X, A)                 \
    X(A, AMPC_FLOAT32, f32, float, float)             \
    X(A, AMPC_FLOAT16, f16, ampc_half, float)         \
    X(A, AMPC_BFLOAT16, bf16, ampc_bfloat16, float)   \
    X(A, AMPC_FLOAT64, f64, double, double)           \
    X(A, AMPC_INT64, i64, int64_t, int64_t)           \
    X(A, AMPC_INT32, i32, int32_t, int32_t)           \
    X(A, AMPC_UINT8, u8, uint8_t, uint8_t)            \
    X(A, AMPC_BOOL, b8, bool, bool)

#endif
