/* cuda_scatter_reduce.cuh: the device side of scatter_reduce / index_reduce's combine step
 * (prod, amax, amin; core/scatter_reduce.h holds the formula the CPU loops share): a functor for
 * cuda_index.cu's scatter form kernel that applies *p = combine(*p, v) atomically.
 *
 * CUDA has no atomic multiply or floating/byte max, so every dtype goes through compare-and-swap
 * on the aligned word holding the item: 8-byte items on a 64-bit word, 4-, 2- and 1-byte items
 * on a 32-bit word (a 2- or 1-byte item shares it with its neighbours, which the masked swap
 * leaves unchanged). Floats combine in fp32 (fp16/bf16 round once per combine, as the CPU). */
#ifndef AMPC_CUDA_SCATTER_REDUCE_CUH
#define AMPC_CUDA_SCATTER_REDUCE_CUH

#include <type_traits>

#include "../core/scatter_reduce.h"
#include "cuda_common.cuh"

/* scatter_reduce / index_reduce: *p = combine(*p, v) (core/scatter_reduce.h) by compare-and-swap
 * on the aligned word holding *p (2- and 1-byte items share a 32-bit word with neighbours). */
template <typename T> __device__ __forceinline__ T reduce_combine(int r, T a, T b) {
    if constexpr (std::is_same<T, double>::value) return ampc_convert<T>(ampc_scatter_combine_f(r, ampc_convert<double>(a), ampc_convert<double>(b)));
    else if constexpr (std::is_same<T, float>::value || std::is_same<T, __half>::value ||
                       std::is_same<T, __nv_bfloat16>::value)
        return ampc_convert<T>(ampc_scatter_combine_f32(r, ampc_convert<float>(a), ampc_convert<float>(b)));
    else return ampc_convert<T>(ampc_scatter_combine_i(r, ampc_convert<int64_t>(a), ampc_convert<int64_t>(b)));
}
template <typename T, typename W> __device__ __forceinline__ void atomic_combine_word(T *p, T v, int r) {
    /* W: the CAS word type; T sits at byte `shift / 8` of it */
    W *word = (W *)((uintptr_t)p & ~(uintptr_t)(sizeof(W) - 1));
    unsigned int shift = (unsigned int)((uintptr_t)p & (sizeof(W) - 1)) * 8u;
    W mask = sizeof(T) == sizeof(W) ? (W)~(W)0 : (W)((((W)1 << (8 * sizeof(T))) - 1) << shift);
    W old = *word, assumed;
    do {
        assumed = old;
        T cur;
        W bits = (assumed & mask) >> shift;
        memcpy(&cur, &bits, sizeof(T));
        T next = reduce_combine<T>(r, cur, v);
        W nb = 0;
        memcpy(&nb, &next, sizeof(T));
        W upd = (assumed & ~mask) | ((nb << shift) & mask);
        old = atomicCAS(word, assumed, upd);
    } while (old != assumed);
}
template <typename T> __device__ __forceinline__ void atomic_combine(T *p, T v, int r) {
    if constexpr (sizeof(T) == 8) atomic_combine_word<T, unsigned long long>(p, v, r);
    else atomic_combine_word<T, unsigned int>(p, v, r); /* 4, 2 and 1-byte items */
}
template <typename T> struct reduce_into {
    T *out;
    const T *values;
    int reduce;
    __device__ void operator()(const int64_t *off, int64_t extra) const {
        atomic_combine(out + off[0] + extra, values[off[1]], reduce);
    }
};

#endif
