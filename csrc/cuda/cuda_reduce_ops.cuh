/* cuda_reduce_ops.cuh: the accumulators of the CUDA reductions (cuda_reduce.cu): the folds of
 * cpu_reduce_folds.h as device ops (identity, update with one element, merge of two partial
 * results), max/min with their index, and the stores that finish an accumulator into the output
 * the way cpu_reduce.c's store functions do (mean, root of a norm, var's degrees of freedom,
 * logsumexp's shift). The kernels only see an Op: acc, identity(), update(), merge(), store(). */
#ifndef AMPC_CUDA_REDUCE_OPS_CUH
#define AMPC_CUDA_REDUCE_OPS_CUH

#include <math.h>

#include <type_traits>

#include "../core/reduce_plan.h" /* enum fold */
#include "cuda_common.cuh"

template <typename T> struct is_float_storage : std::false_type {};
template <> struct is_float_storage<float> : std::true_type {};
template <> struct is_float_storage<double> : std::true_type {};
template <> struct is_float_storage<__half> : std::true_type {};
template <> struct is_float_storage<__nv_bfloat16> : std::true_type {};

/* The accumulator of an input's own precision: double for float64, float for the other floats,
 * int64 for integers and bool. */
template <typename T>
using red_acc_t = typename std::conditional<std::is_same<T, double>::value, double,
                  typename std::conditional<is_float_storage<T>::value, float, int64_t>::type>::type;

template <typename T> struct acc_limits;
template <> struct acc_limits<float> {
    __device__ static float lowest() { return -INFINITY; }
    __device__ static float highest() { return INFINITY; }
};
template <> struct acc_limits<double> {
    __device__ static double lowest() { return -INFINITY; }
    __device__ static double highest() { return INFINITY; }
};
template <> struct acc_limits<int64_t> {
    __device__ static int64_t lowest() { return INT64_MIN; }
    __device__ static int64_t highest() { return INT64_MAX; }
};

static __device__ __forceinline__ float acc_add(float a, float b) { return a + b; }
static __device__ __forceinline__ double acc_add(double a, double b) { return a + b; }
static __device__ __forceinline__ int64_t acc_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static __device__ __forceinline__ float acc_mul(float a, float b) { return a * b; }
static __device__ __forceinline__ double acc_mul(double a, double b) { return a * b; }
static __device__ __forceinline__ int64_t acc_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }
static __device__ __forceinline__ float acc_abs(float x) { return fabsf(x); }
static __device__ __forceinline__ double acc_abs(double x) { return fabs(x); }
static __device__ __forceinline__ float acc_exp(float x) { return expf(x); }
static __device__ __forceinline__ double acc_exp(double x) { return exp(x); }
static __device__ __forceinline__ float acc_log(float x) { return logf(x); }
static __device__ __forceinline__ double acc_log(double x) { return log(x); }
static __device__ __forceinline__ float acc_sqrt(float x) { return sqrtf(x); }
static __device__ __forceinline__ double acc_sqrt(double x) { return sqrt(x); }
/* out of line: pow is long and only the rare general norm order uses it */
static __device__ __noinline__ float acc_pow(float x, float p) { return powf(x, p); }
static __device__ __noinline__ double acc_pow(double x, double p) { return pow(x, p); }
/* NaN-propagating extremes (cpu_reduce_folds.h's FOLD_MAX_NAN/FOLD_MIN_NAN): a NaN wins. */
template <typename T> __device__ __forceinline__ T max_nan(T a, T b) { return (b > a || b != b) ? b : a; }
template <typename T> __device__ __forceinline__ T min_nan(T a, T b) { return (b < a || b != b) ? b : a; }


/* How a finished accumulator becomes the output (cpu_reduce.c's store functions). */
enum red_store {
    ST_PLAIN, ST_MEAN, ST_SQRT, ST_ROOT, ST_VAR, ST_STD, ST_LSE,
    ST_TO_MEAN_BUF, ST_TO_BUF, /* pass 1 of var (the mean) and logsumexp (the max) */
    ST_INDEX, ST_VALUE_INDEX   /* argmax/argmin; max/min with indices */
};

struct red_out {
    int kind, dtype0;
    void *out0;
    int64_t *out1;
    void *buf;          /* ST_TO_*: per output, in the accumulator's type */
    const void *params; /* ST_LSE: the max of each output (pass 1) */
    double p;           /* ST_ROOT: the norm's order; ST_VAR, ST_STD: the correction */
    int64_t n_red;
};

/* Out of line: the kinds and dtypes make it long, and it runs once per output. */
template <typename acc_t>
__device__ __noinline__ void store_fold(red_out s, int64_t o, int64_t off0, acc_t a) {
    if constexpr (std::is_integral<acc_t>::value) {
        ampc_store_dyn<int64_t>(s.out0, s.dtype0, off0, a); /* sums wrap, bool stores v != 0 */
    } else {
        acc_t v = a;
        switch (s.kind) {
        case ST_MEAN: v = a / (acc_t)s.n_red; break; /* empty: 0/0 = nan, as in PyTorch */
        case ST_SQRT: v = acc_sqrt(a); break;
        case ST_ROOT: v = acc_pow(a, (acc_t)(1.0 / s.p)); break;
        case ST_VAR:
        case ST_STD: { /* divide by max(0, N - correction): inf or nan when no dof are left */
            double dof = (double)s.n_red - s.p;
            v = a / (acc_t)(dof > 0 ? dof : 0.0);
            if (s.kind == ST_STD) v = acc_sqrt(v);
            break;
        }
        case ST_LSE: { /* an infinite or NaN max is the answer itself (an empty row: -inf) */
            acc_t m = ((const acc_t *)s.params)[o];
            v = isfinite(m) ? m + acc_log(a) : m;
            break;
        }
        case ST_TO_MEAN_BUF: ((acc_t *)s.buf)[o] = a / (acc_t)s.n_red; return;
        case ST_TO_BUF: ((acc_t *)s.buf)[o] = a; return;
        default: break;
        }
        ampc_store_dyn<acc_t>(s.out0, s.dtype0, off0, v);
    }
}

/* A fold F accumulating in acc_t. update() folds in element value v (r: its flat index among the
 * reduced elements, p: the output's parameter); merge(a, b) combines two partial results. */
template <typename acc_t, int F> struct fold_op {
    typedef acc_t acc;
    acc_t param;          /* p of a general norm */
    const acc_t *params;  /* pass 2 of var/logsumexp: the mean/max of each output; else NULL */

    __device__ __forceinline__ acc_t param_of(int64_t o) const { return params ? params[o] : param; }
    __device__ __forceinline__ acc_t identity() const {
        if (F == FOLD_prod || F == FOLD_all) return (acc_t)1;
        if (F == FOLD_max) return acc_limits<acc_t>::lowest();
        if (F == FOLD_min || F == FOLD_abs_min) return acc_limits<acc_t>::highest();
        return (acc_t)0;
    }
    template <typename V> __device__ __forceinline__ acc_t update(acc_t a, V v, int64_t, acc_t p) const {
        if constexpr (F == FOLD_any) return a | (acc_t)(v != (V)0);
        else if constexpr (F == FOLD_all) return a & (acc_t)(v != (V)0);
        else {
            acc_t x = (acc_t)v;
            if constexpr (F == FOLD_sum) return acc_add(a, x);
            else if constexpr (F == FOLD_prod) return acc_mul(a, x);
            else if constexpr (F == FOLD_max) return max_nan(a, x);
            else if constexpr (F == FOLD_min) return min_nan(a, x);
            else if constexpr (F == FOLD_abs_sum) return a + acc_abs(x);
            else if constexpr (F == FOLD_sq_sum) return a + x * x;
            else if constexpr (F == FOLD_pow_sum) return a + acc_pow(acc_abs(x), p);
            else if constexpr (F == FOLD_abs_max) return max_nan(a, acc_abs(x));
            else if constexpr (F == FOLD_abs_min) return min_nan(a, acc_abs(x));
            else if constexpr (F == FOLD_nonzero) return a + (acc_t)(x != (acc_t)0);
            else if constexpr (F == FOLD_sqdev) return a + (x - p) * (x - p);
            else return a + acc_exp(x - p); /* FOLD_expsum */
        }
    }
    __device__ __forceinline__ acc_t merge(acc_t a, acc_t b) const {
        if constexpr (F == FOLD_prod) return acc_mul(a, b);
        else if constexpr (F == FOLD_max || F == FOLD_abs_max) return max_nan(a, b);
        else if constexpr (F == FOLD_min || F == FOLD_abs_min) return min_nan(a, b);
        else if constexpr (F == FOLD_any) return a | b;
        else if constexpr (F == FOLD_all) return a & b;
        else return acc_add(a, b);
    }
    __device__ __forceinline__ void store(const red_out &s, int64_t o, int64_t off0, int64_t, acc_t a) const {
        store_fold<acc_t>(s, o, off0, a);
    }
};

template <typename T> struct arg_acc {
    T v;
    int64_t idx; /* INT64_MAX: no element yet */
};

template <typename acc_t>
__device__ __noinline__ void store_arg(red_out s, int64_t off0, int64_t off1, acc_t v, int64_t idx) {
    if (s.kind == ST_INDEX) {
        ((int64_t *)s.out0)[off0] = idx;
        return;
    }
    ampc_store_dyn<acc_t>(s.out0, s.dtype0, off0, v);
    s.out1[off1] = idx;
}

/* max/min with their index (argmax/argmin too). */
template <typename acc_t, bool MAX> struct arg_op {
    typedef arg_acc<acc_t> acc;

    __device__ __forceinline__ int param_of(int64_t) const { return 0; }
    __device__ __forceinline__ acc identity() const {
        return acc{MAX ? acc_limits<acc_t>::lowest() : acc_limits<acc_t>::highest(), INT64_MAX};
    }
    template <typename V> __device__ __forceinline__ acc update(acc a, V v, int64_t r, int) const {
        return merge(a, acc{(acc_t)v, r});
    }
    /* The first NaN; else the extreme; among equal extremes the first. Commutative, so the
     * order of merging does not matter. */
    __device__ __forceinline__ acc merge(acc a, acc b) const {
        bool a_nan = a.v != a.v, b_nan = b.v != b.v;
        if (a_nan || b_nan) return a_nan && b_nan ? (b.idx < a.idx ? b : a) : a_nan ? a : b;
        if (MAX ? b.v > a.v : b.v < a.v) return b;
        return b.v == a.v && b.idx < a.idx ? b : a;
    }
    __device__ __forceinline__ void store(const red_out &s, int64_t, int64_t off0, int64_t off1, acc a) const {
        store_arg<acc_t>(s, off0, off1, a.v, a.idx);
    }
};

template <typename T> __device__ __forceinline__ T shfl_down(T v, int d) { return __shfl_down_sync(0xffffffffu, v, d); }
template <typename T> __device__ __forceinline__ arg_acc<T> shfl_down(arg_acc<T> v, int d) {
    v.v = shfl_down(v.v, d);
    v.idx = shfl_down(v.idx, d);
    return v;
}

/* Merges the accumulators of a full warp; lane 0 gets the result. */
template <typename Op> __device__ __forceinline__ typename Op::acc warp_merge(const Op &op, typename Op::acc a) {
    for (int d = 16; d > 0; d >>= 1) a = op.merge(a, shfl_down(a, d));
    return a;
}

#endif
