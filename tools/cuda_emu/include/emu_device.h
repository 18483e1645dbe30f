/* emu_device.h: the device side of the CUDA emulator (tools/cuda_emu/README.md).
 *
 * Every CUDA thread of a block is a fiber (a stack of its own and a cheap context switch); the
 * blocks of a grid run one after another on the calling OS thread. __syncthreads, __syncwarp
 * and the warp collectives (shuffles, votes) are barriers: a fiber that reaches one waits until
 * every live thread of its block (or warp) has reached one too. `__shared__` becomes `static`
 * (blocks never overlap), atomics are plain read-modify-writes. gen.py rewrites each launch
 * `k<<<g, b, smem, s>>>(args)` into `emu::cfg(g, b, smem, s).at(...).run(k, args)`.
 * C++17 only; the host API is in cuda_runtime_api.h. */
#ifndef AMPC_EMU_DEVICE_H
#define AMPC_EMU_DEVICE_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tuple>
#include <type_traits>
#include <utility>

#include "core/half.h"
#include "cuda_runtime_api.h"
#include "library_types.h"

#ifndef __CUDA_ARCH__
#define __CUDA_ARCH__ 900
#endif
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __constant__ static
#define __managed__
#define __grid_constant__
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))

/* ---------------------------------------------------------------- vector types */

struct uint3 {
    unsigned x, y, z;
};
struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    constexpr operator uint3() const { return uint3{x, y, z}; }
};

#define EMU_VEC2(T, N, A) \
    struct __align__(A) N##2 { T x, y; }; \
    static inline N##2 make_##N##2(T x, T y) { N##2 v; v.x = x; v.y = y; return v; }
#define EMU_VEC4(T, N, A) \
    struct __align__(A) N##4 { T x, y, z, w; }; \
    static inline N##4 make_##N##4(T x, T y, T z, T w) { N##4 v; v.x = x; v.y = y; v.z = z; v.w = w; return v; }
EMU_VEC2(float, float, 8)
EMU_VEC4(float, float, 16)
EMU_VEC2(double, double, 16)
EMU_VEC4(double, double, 32)
EMU_VEC2(int, int, 8)
EMU_VEC4(int, int, 16)
EMU_VEC2(unsigned, uint, 8)
EMU_VEC4(unsigned, uint, 16)
EMU_VEC2(short, short, 4)
EMU_VEC4(short, short, 8)
EMU_VEC2(unsigned short, ushort, 4)
EMU_VEC4(unsigned short, ushort, 8)
EMU_VEC2(signed char, char, 2)
EMU_VEC4(signed char, char, 4)
EMU_VEC2(unsigned char, uchar, 2)
EMU_VEC4(unsigned char, uchar, 4)
EMU_VEC2(long long, longlong, 16)
EMU_VEC4(long long, longlong, 32)
EMU_VEC2(unsigned long long, ulonglong, 16)
EMU_VEC4(unsigned long long, ulonglong, 32)
static inline uint3 make_uint3(unsigned x, unsigned y, unsigned z) { return uint3{x, y, z}; }
static constexpr int warpSize = 32;

/* ---------------------------------------------------------------- fp16 / bf16 */

struct __half_raw {
    unsigned short x;
};
struct __nv_bfloat16_raw {
    unsigned short x;
};

/* __half and __nv_bfloat16 differ only in their conversions (core/half.h's RNE): one definition
 * generates both. Every arithmetic type converts through float, as cuda_fp16.h's constructors do. */
#define EMU_FLOAT16_STRUCT(T, RAW, FROM_F32, TO_F32)                      \
    struct T {                                                            \
        unsigned short __x;                                               \
        T() = default;                                                    \
        constexpr T(RAW r) : __x(r.x) {}                                  \
        T(float f) : __x(FROM_F32(f)) {}                                  \
        T(double d) : __x(FROM_F32((float)d)) {}                          \
        T(int v) : __x(FROM_F32((float)v)) {}                             \
        T(unsigned v) : __x(FROM_F32((float)v)) {}                        \
        T(long long v) : __x(FROM_F32((float)v)) {}                       \
        T(unsigned long long v) : __x(FROM_F32((float)v)) {}              \
        T(long v) : __x(FROM_F32((float)v)) {}                            \
        T(short v) : __x(FROM_F32((float)v)) {}                           \
        T(unsigned short v) : __x(FROM_F32((float)v)) {}                  \
        operator float() const { return TO_F32(__x); }                    \
        operator RAW() const { return RAW{__x}; }                         \
        T &operator=(float f) { __x = FROM_F32(f); return *this; }        \
        T &operator=(double d) { __x = FROM_F32((float)d); return *this; } \
    };
EMU_FLOAT16_STRUCT(__half, __half_raw, ampc_f32_to_half, ampc_half_to_f32)
EMU_FLOAT16_STRUCT(__nv_bfloat16, __nv_bfloat16_raw, ampc_f32_to_bf16, ampc_bf16_to_f32)
#undef EMU_FLOAT16_STRUCT
typedef __half half;
typedef __nv_bfloat16 nv_bfloat16;
struct __align__(4) __half2 {
    __half x, y;
};
struct __align__(4) __nv_bfloat162 {
    __nv_bfloat16 x, y;
};

static inline __half __float2half(float f) { return __half(f); }
static inline __half __float2half_rn(float f) { return __half(f); }
static inline __half __double2half(double d) { return __half((float)d); }
static inline float __half2float(__half h) { return ampc_half_to_f32(h.__x); }
static inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
static inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
static inline __nv_bfloat16 __double2bfloat16(double d) { return __nv_bfloat16((float)d); }
static inline float __bfloat162float(__nv_bfloat16 h) { return ampc_bf16_to_f32(h.__x); }
static inline unsigned short __half_as_ushort(__half h) { return h.__x; }
static inline __half __ushort_as_half(unsigned short u) { return __half(__half_raw{u}); }
static inline short __half_as_short(__half h) { return (short)h.__x; }
static inline __half __short_as_half(short u) { return __half(__half_raw{(unsigned short)u}); }
static inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.__x; }
static inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short u) { return __nv_bfloat16(__nv_bfloat16_raw{u}); }
static inline __half2 __floats2half2_rn(float a, float b) { return __half2{__half(a), __half(b)}; }
static inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) { return __nv_bfloat162{__nv_bfloat16(a), __nv_bfloat16(b)}; }
static inline float2 __half22float2(__half2 h) { return make_float2((float)h.x, (float)h.y); }
static inline float2 __bfloat1622float2(__nv_bfloat162 h) { return make_float2((float)h.x, (float)h.y); }
static inline float __low2float(__half2 h) { return (float)h.x; }
static inline float __high2float(__half2 h) { return (float)h.y; }
static inline bool __hisnan(__half h) { return isnan((float)h); }
static inline bool __hisinf(__half h) { return isinf((float)h) ? true : false; }
static inline bool __hisnan(__nv_bfloat16 h) { return isnan((float)h); }

/* Arithmetic of one half value: computed in float and rounded once, as the hardware does. */
#define EMU_HALF_OPS(H)                                                                                       \
    static inline H operator+(H a, H b) { return H((float)a + (float)b); }                                   \
    static inline H operator-(H a, H b) { return H((float)a - (float)b); }                                   \
    static inline H operator*(H a, H b) { return H((float)a * (float)b); }                                   \
    static inline H operator/(H a, H b) { return H((float)a / (float)b); }                                   \
    static inline H operator-(H a) { H r = a; r.__x ^= 0x8000u; return r; }                                  \
    static inline H operator+(H a) { return a; }                                                             \
    static inline H &operator+=(H &a, H b) { return a = a + b; }                                             \
    static inline H &operator-=(H &a, H b) { return a = a - b; }                                             \
    static inline H &operator*=(H &a, H b) { return a = a * b; }                                             \
    static inline H &operator/=(H &a, H b) { return a = a / b; }                                             \
    static inline bool operator==(H a, H b) { return (float)a == (float)b; }                                 \
    static inline bool operator!=(H a, H b) { return (float)a != (float)b; }                                 \
    static inline bool operator<(H a, H b) { return (float)a < (float)b; }                                   \
    static inline bool operator<=(H a, H b) { return (float)a <= (float)b; }                                 \
    static inline bool operator>(H a, H b) { return (float)a > (float)b; }                                   \
    static inline bool operator>=(H a, H b) { return (float)a >= (float)b; }                                 \
    static inline H __hadd(H a, H b) { return a + b; }                                                       \
    static inline H __hsub(H a, H b) { return a - b; }                                                       \
    static inline H __hmul(H a, H b) { return a * b; }                                                       \
    static inline H __hdiv(H a, H b) { return a / b; }                                                       \
    static inline H __hneg(H a) { return -a; }                                                               \
    static inline H __habs(H a) { H r = a; r.__x &= 0x7fffu; return r; }                                    \
    static inline H __hmax(H a, H b) { return (float)a > (float)b || isnan((float)b) ? a : b; }              \
    static inline H __hmin(H a, H b) { return (float)a < (float)b || isnan((float)b) ? a : b; }              \
    static inline H __hfma(H a, H b, H c) { return H((float)((double)(float)a * (float)b + (float)c)); }      \
    static inline bool __hlt(H a, H b) { return a < b; }                                                     \
    static inline bool __hgt(H a, H b) { return a > b; }                                                     \
    static inline bool __heq(H a, H b) { return a == b; }
EMU_HALF_OPS(__half)
EMU_HALF_OPS(__nv_bfloat16)
#undef EMU_HALF_OPS

/* ---------------------------------------------------------------- the emulator core */

namespace emu {
enum { RUN = 0, WAIT_BLOCK = 1, WAIT_WARP = 2, DONE = 3 };
struct fiber {
    void *sp; /* saved stack pointer (or ucontext in emu_runtime.cpp) */
    uint3 tid;
    int linear, warp, lane, state;
    unsigned mask;   /* of the warp collective it waits in */
    int site_line;   /* of the barrier it waits at */
    const char *site_file;
};
extern fiber *cur;
extern uint3 block_idx;
extern dim3 block_dim, grid_dim;
extern unsigned char warp_slots[32][2][32][16];
extern unsigned char warp_parity[32];

void block_barrier(int line, const char *file);
void warp_barrier(unsigned mask, int line, const char *file);
/* Logs a fidelity problem of the running kernel (a real GPU could misbehave): once per site. */
void report(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void check_bounds(long max_threads, const char *file, int line);
void check_pointer(const void *p, int index);
void device_trap(const char *file, int line);

struct launch_info {
    dim3 grid, block;
    size_t smem;
    cudaStream_t stream;
    const char *name, *file;
    int line;
    size_t param_bytes;
};
void launch(const launch_info &info, void (*body)(void *), void *ctx);
bool launch_begin(const launch_info &info); /* validates; false: launch refused */

template <typename T> T shfl(unsigned mask, T v, int src, int line, const char *file) {
    static_assert(sizeof(T) <= 16, "shuffle of a type larger than 16 bytes");
    fiber *f = cur;
    int w = f->warp, p = warp_parity[w];
    memcpy(warp_slots[w][p][f->lane], &v, sizeof v);
    warp_barrier(mask, line, file);
    T r;
    memcpy(&r, warp_slots[w][p][src & 31], sizeof r);
    return r;
}
template <typename T> unsigned vote(unsigned mask, T pred, int line, const char *file) {
    fiber *f = cur;
    int w = f->warp, p = warp_parity[w];
    int b = pred ? 1 : 0;
    memcpy(warp_slots[w][p][f->lane], &b, sizeof b);
    warp_barrier(mask, line, file);
    unsigned r = 0;
    for (int l = 0; l < 32; l++) {
        if (!(mask >> l & 1u)) continue;
        int x;
        memcpy(&x, warp_slots[w][p][l], sizeof x);
        if (x) r |= 1u << l;
    }
    return r;
}

template <typename Fn> static void body_thunk(void *ctx) { (*(Fn *)ctx)(); }

template <typename T> static inline void check_arg(const T &v, int index) {
    if constexpr (std::is_pointer<T>::value) check_pointer((const void *)v, index);
}

struct cfg {
    launch_info info;
    cfg(dim3 g, dim3 b, size_t smem = 0, cudaStream_t s = 0) {
        info.grid = g;
        info.block = b;
        info.smem = smem;
        info.stream = s;
        info.name = "?";
        info.file = "?";
        info.line = 0;
        info.param_bytes = 0;
    }
    cfg &at(const char *name, const char *file, int line) {
        info.name = name;
        info.file = file;
        info.line = line;
        return *this;
    }
    template <typename... P, typename... A> void run(void (*f)(P...), A &&...a) {
        static_assert(sizeof...(P) == sizeof...(A), "kernel launched with the wrong number of arguments");
        std::tuple<std::decay_t<P>...> params(std::forward<A>(a)...); /* converted as a launch does */
        info.param_bytes = (0 + ... + sizeof(std::decay_t<P>));
        if (!launch_begin(info)) return;
        check_args(params, std::index_sequence_for<P...>{});
        auto body = [&]() { std::apply(f, params); };
        launch(info, body_thunk<decltype(body)>, &body);
    }
    template <typename F, typename... A> void run(F f, A &&...a) { /* a generic lambda around the kernel */
        std::tuple<std::decay_t<A>...> params(std::forward<A>(a)...);
        info.param_bytes = (0 + ... + sizeof(std::decay_t<A>));
        if (!launch_begin(info)) return;
        check_args(params, std::index_sequence_for<A...>{});
        auto body = [&]() { std::apply(f, params); };
        launch(info, body_thunk<decltype(body)>, &body);
    }
    template <typename Tup, size_t... I> static void check_args(const Tup &t, std::index_sequence<I...>) {
        (check_arg(std::get<I>(t), (int)I), ...);
    }
};
} // namespace emu

#define threadIdx (emu::cur->tid)
#define blockIdx (emu::block_idx)
#define blockDim (emu::block_dim)
#define gridDim (emu::grid_dim)

#define __syncthreads() emu::block_barrier(__LINE__, __FILE__)
#define __syncwarp(...) emu::warp_barrier(emu_mask_or_full(__VA_ARGS__), __LINE__, __FILE__)
static inline unsigned emu_mask_or_full(unsigned m = 0xffffffffu) { return m; }
#define __threadfence() ((void)0)
#define __threadfence_block() ((void)0)
#define __threadfence_system() ((void)0)
#define __trap() emu::device_trap(__FILE__, __LINE__)
#define EMU_BOUNDS(n) emu::check_bounds((long)(n), __FILE__, __LINE__)

static inline int emu_lane() { return emu::cur->lane; }
/* Shuffles per the PTX rules: a source lane outside the caller's width-segment gives the
 * caller's own value. */
#define __shfl_sync(mask, v, src, ...) emu_shfl_idx((mask), (v), (src), __LINE__, __FILE__, ##__VA_ARGS__)
#define __shfl_xor_sync(mask, v, m, ...) emu_shfl_xor((mask), (v), (m), __LINE__, __FILE__, ##__VA_ARGS__)
#define __shfl_down_sync(mask, v, d, ...) emu_shfl_down((mask), (v), (d), __LINE__, __FILE__, ##__VA_ARGS__)
#define __shfl_up_sync(mask, v, d, ...) emu_shfl_up((mask), (v), (d), __LINE__, __FILE__, ##__VA_ARGS__)
template <typename T> T emu_shfl_idx(unsigned mask, T v, int src, int line, const char *file, int width = 32) {
    int lane = emu_lane(), base = lane & ~(width - 1);
    return emu::shfl(mask, v, base + (src & (width - 1)), line, file);
}
template <typename T> T emu_shfl_xor(unsigned mask, T v, int m, int line, const char *file, int width = 32) {
    int lane = emu_lane(), base = lane & ~(width - 1), src = lane ^ m;
    if (src >= base + width) src = lane;
    return emu::shfl(mask, v, src, line, file);
}
template <typename T> T emu_shfl_down(unsigned mask, T v, unsigned d, int line, const char *file, int width = 32) {
    int lane = emu_lane(), src = lane + (int)d;
    if ((lane & (width - 1)) + (int)d >= width) src = lane;
    return emu::shfl(mask, v, src, line, file);
}
template <typename T> T emu_shfl_up(unsigned mask, T v, unsigned d, int line, const char *file, int width = 32) {
    int lane = emu_lane(), src = lane - (int)d;
    if ((lane & (width - 1)) < (int)d) src = lane;
    return emu::shfl(mask, v, src, line, file);
}
#define __ballot_sync(mask, pred) emu::vote((mask), (pred), __LINE__, __FILE__)
#define __any_sync(mask, pred) (emu::vote((mask), (pred), __LINE__, __FILE__) != 0u)
#define __all_sync(mask, pred) (emu::vote((mask), (pred), __LINE__, __FILE__) == (unsigned)(mask))
static inline unsigned __activemask() { return 0xffffffffu; }
static inline unsigned __lanemask_lt() { return (1u << emu_lane()) - 1u; }

/* ---------------------------------------------------------------- atomics (one thread at a time) */

#define EMU_ATOMIC_RMW(NAME, T, EXPR) \
    static inline T NAME(T *p, T v) { T o = *p; *p = (EXPR); return o; }
EMU_ATOMIC_RMW(atomicAdd, int, o + v)
EMU_ATOMIC_RMW(atomicAdd, unsigned, o + v)
EMU_ATOMIC_RMW(atomicAdd, unsigned long long, o + v)
EMU_ATOMIC_RMW(atomicAdd, float, o + v)
EMU_ATOMIC_RMW(atomicAdd, double, o + v)
EMU_ATOMIC_RMW(atomicAdd, __half, __half((float)o + (float)v))
EMU_ATOMIC_RMW(atomicAdd, __nv_bfloat16, __nv_bfloat16((float)o + (float)v))
EMU_ATOMIC_RMW(atomicSub, int, o - v)
EMU_ATOMIC_RMW(atomicSub, unsigned, o - v)
EMU_ATOMIC_RMW(atomicExch, int, v)
EMU_ATOMIC_RMW(atomicExch, unsigned, v)
EMU_ATOMIC_RMW(atomicExch, unsigned long long, v)
EMU_ATOMIC_RMW(atomicExch, float, v)
EMU_ATOMIC_RMW(atomicMax, int, o > v ? o : v)
EMU_ATOMIC_RMW(atomicMax, unsigned, o > v ? o : v)
EMU_ATOMIC_RMW(atomicMax, long long, o > v ? o : v)
EMU_ATOMIC_RMW(atomicMax, unsigned long long, o > v ? o : v)
EMU_ATOMIC_RMW(atomicMin, int, o < v ? o : v)
EMU_ATOMIC_RMW(atomicMin, unsigned, o < v ? o : v)
EMU_ATOMIC_RMW(atomicMin, long long, o < v ? o : v)
EMU_ATOMIC_RMW(atomicMin, unsigned long long, o < v ? o : v)
EMU_ATOMIC_RMW(atomicOr, int, o | v)
EMU_ATOMIC_RMW(atomicOr, unsigned, o | v)
EMU_ATOMIC_RMW(atomicOr, unsigned long long, o | v)
EMU_ATOMIC_RMW(atomicAnd, int, o & v)
EMU_ATOMIC_RMW(atomicAnd, unsigned, o & v)
EMU_ATOMIC_RMW(atomicAnd, unsigned long long, o & v)
EMU_ATOMIC_RMW(atomicXor, int, o ^ v)
EMU_ATOMIC_RMW(atomicXor, unsigned, o ^ v)
EMU_ATOMIC_RMW(atomicXor, unsigned long long, o ^ v)
#undef EMU_ATOMIC_RMW
#define EMU_ATOMIC_CAS(T) \
    static inline T atomicCAS(T *p, T cmp, T v) { T o = *p; if (o == cmp) *p = v; return o; }
EMU_ATOMIC_CAS(int)
EMU_ATOMIC_CAS(unsigned)
EMU_ATOMIC_CAS(unsigned long long)
EMU_ATOMIC_CAS(unsigned short)
#undef EMU_ATOMIC_CAS

/* ---------------------------------------------------------------- intrinsics and math */

static inline float __int_as_float(int v) { float f; memcpy(&f, &v, 4); return f; }
static inline int __float_as_int(float f) { int v; memcpy(&v, &f, 4); return v; }
static inline float __uint_as_float(unsigned v) { float f; memcpy(&f, &v, 4); return f; }
static inline unsigned __float_as_uint(float f) { unsigned v; memcpy(&v, &f, 4); return v; }
static inline double __longlong_as_double(long long v) { double f; memcpy(&f, &v, 8); return f; }
static inline long long __double_as_longlong(double f) { long long v; memcpy(&v, &f, 8); return v; }
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
static inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
static inline unsigned __brev(unsigned x) {
    unsigned r = 0;
    for (int i = 0; i < 32; i++) r |= ((x >> i) & 1u) << (31 - i);
    return r;
}
static inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
static inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
static inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
static inline long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
template <typename T> static inline T __ldg(const T *p) { return *p; }
template <typename T> static inline T __ldcs(const T *p) { return *p; }
template <typename T> static inline T __ldcg(const T *p) { return *p; }
template <typename T> static inline void __stcs(T *p, T v) { *p = v; }
template <typename T> static inline void __stcg(T *p, T v) { *p = v; }
static inline float __fmul_rn(float a, float b) { volatile float r = a * b; return r; }
static inline float __fadd_rn(float a, float b) { volatile float r = a + b; return r; }
static inline float __fsub_rn(float a, float b) { volatile float r = a - b; return r; }
static inline float __fdiv_rn(float a, float b) { volatile float r = a / b; return r; }
static inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
static inline double __dmul_rn(double a, double b) { volatile double r = a * b; return r; }
static inline double __dadd_rn(double a, double b) { volatile double r = a + b; return r; }
static inline double __dsub_rn(double a, double b) { volatile double r = a - b; return r; }
static inline double __ddiv_rn(double a, double b) { volatile double r = a / b; return r; }
static inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
static inline float __frcp_rn(float a) { return 1.0f / a; }
static inline float __fsqrt_rn(float a) { return sqrtf(a); }
static inline double __dsqrt_rn(double a) { return sqrt(a); }
/* glibc declares __expf & co. itself (its exact functions): the fast-math intrinsics map there */
#define __expf(x) expf(x)
#define __logf(x) logf(x)
#define __log2f(x) log2f(x)
#define __log10f(x) log10f(x)
#define __sinf(x) sinf(x)
#define __cosf(x) cosf(x)
#define __tanf(x) tanf(x)
#define __powf(x, y) powf(x, y)
#define __exp10f(x) powf(10.0f, x)
static inline float __fdividef(float a, float b) { return a / b; }
static inline float fdividef(float a, float b) { return a / b; }
static inline float __saturatef(float x) { return x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x; }
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
static inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
static inline float normcdff(float x) { return 0.5f * erfcf(-x * 0.70710678118654752f); }
static inline double normcdf(double x) { return 0.5 * erfc(-x * 0.70710678118654752); }

/* CUDA's global min/max overloads (device code has them for every arithmetic pair). */
template <typename A, typename B,
          typename = std::enable_if_t<std::is_arithmetic<A>::value && std::is_arithmetic<B>::value>>
static inline std::common_type_t<A, B> min(A a, B b) {
    typedef std::common_type_t<A, B> C;
    if constexpr (std::is_floating_point<C>::value) return fmin((C)a, (C)b);
    else return (C)a < (C)b ? (C)a : (C)b;
}
template <typename A, typename B,
          typename = std::enable_if_t<std::is_arithmetic<A>::value && std::is_arithmetic<B>::value>>
static inline std::common_type_t<A, B> max(A a, B b) {
    typedef std::common_type_t<A, B> C;
    if constexpr (std::is_floating_point<C>::value) return fmax((C)a, (C)b);
    else return (C)a > (C)b ? (C)a : (C)b;
}
static inline long long clock64() { return 0; }

#endif
