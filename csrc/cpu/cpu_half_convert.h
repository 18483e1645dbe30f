/* cpu_half_convert.h: fp16/bf16 <-> fp32 conversion of whole contiguous runs on the CPU.
 *
 * Kernels that compute fp16/bf16 in float (elementwise loops, the nn kernels' buffers) widen a
 * block of inputs with these, compute on floats (which vectorizes like float32) and round the
 * block back once. Results are bit-identical to half.h's per-element functions (round to nearest
 * even, NaN quietened, subnormals kept); fp16 uses F16C/AVX-512 instructions where the CPU has
 * them, chosen at run time. */
#ifndef AMPC_CPU_HALF_CONVERT_H
#define AMPC_CPU_HALF_CONVERT_H

#include <stdint.h>

#include "../core/half.h"

void ampc_cpu_f16_to_f32(const ampc_half *src, float *dst, int64_t n);
void ampc_cpu_f32_to_f16(const float *src, ampc_half *dst, int64_t n);
void ampc_cpu_bf16_to_f32(const ampc_bfloat16 *src, float *dst, int64_t n);
void ampc_cpu_f32_to_bf16(const float *src, ampc_bfloat16 *dst, int64_t n);

#endif
