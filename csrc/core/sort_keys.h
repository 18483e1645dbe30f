/* sort_keys.h: the one sort order of ampc, as unsigned integer keys, shared by the CPU and CUDA
 * sorting kernels (cpu/cpu_sort.c, cuda/cuda_sort.cu).
 *
 * Every element maps to an unsigned key whose integer order is PyTorch's order of the values:
 * NaN above +inf with all NaNs equal, -0.0 equal to 0.0, integers by value. Sorting keys instead
 * of values lets both backends radix-sort every dtype with one code path, and makes ties exact
 * (equal values give equal keys, so a stable sort keeps them in index order). Dtypes of up to 4
 * bytes get 32-bit keys, float64 and int64 64-bit ones. Descending order is ~key: ties keep
 * their index order, as PyTorch's stable descending sort does. */
#ifndef AMPC_SORT_KEYS_H
#define AMPC_SORT_KEYS_H

#include <stdint.h>
#include <string.h>

#include "half.h"

/* A float's key: its bits with the sign bit set for positives and all bits flipped for negatives
 * (so integer order is value order), NaN the largest key, -0.0 as +0.0. */
AMPC_HD uint32_t ampc_sort_key_f32(float v) {
    if (v != v) return 0xFFFFFFFFu;
    if (v == 0.0f) v = 0.0f;
    uint32_t b;
    memcpy(&b, &v, sizeof b);
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

AMPC_HD uint64_t ampc_sort_key_f64(double v) {
    if (v != v) return 0xFFFFFFFFFFFFFFFFull;
    if (v == 0.0) v = 0.0;
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return (b & 0x8000000000000000ull) ? ~b : (b | 0x8000000000000000ull);
}

/* fp16 / bf16 bits: 16-bit keys (in a uint32, the top half zero) */
AMPC_HD uint32_t ampc_sort_key_16(uint16_t b, uint16_t exp_mask) {
    if ((b & 0x7FFFu) > exp_mask) return 0xFFFFu;    /* NaN: exponent all ones, mantissa nonzero */
    if ((b & 0x7FFFu) == 0) b = 0;                   /* -0 -> +0 */
    return (b & 0x8000u) ? (uint16_t)~b : (uint32_t)(b | 0x8000u);
}
AMPC_HD uint32_t ampc_sort_key_f16(ampc_half b) { return ampc_sort_key_16(b, 0x7C00u); }
AMPC_HD uint32_t ampc_sort_key_bf16(ampc_bfloat16 b) { return ampc_sort_key_16(b, 0x7F80u); }

AMPC_HD uint32_t ampc_sort_key_i32(int32_t v) { return (uint32_t)v ^ 0x80000000u; }
AMPC_HD uint64_t ampc_sort_key_i64(int64_t v) { return (uint64_t)v ^ 0x8000000000000000ull; }
AMPC_HD uint32_t ampc_sort_key_u8(uint8_t v) { return v; }
AMPC_HD uint32_t ampc_sort_key_b8(uint8_t v) { return v != 0; }

#endif
