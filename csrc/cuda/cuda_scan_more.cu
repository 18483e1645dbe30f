/* cuda_scan_more.cu: issue 12's scans on CUDA with the semantics of cpu/cpu_scan_more.c:
 * CUMPROD (floats in double, integers wrapping in uint64), LOGCUMSUMEXP (double, torch's
 * _log_add_exp_helper) and CUMMAX/CUMMIN (running extremum and int64 index; ties and NaN take the
 * latest index). The tensor is (outer, n, cols), the scanned dim in the middle; a thread scans
 * one (outer, col) line serially, neighbouring threads take neighbouring columns (coalesced when
 * cols > 1). Products, log-sum-exps and extrema are not split into chunks the way cumsum's scan
 * is (cuda_scan.cu): their combination is not the plain sum its carries rely on, so one long row
 * runs on one thread; correct and deterministic, slow for a single very long row. */
#include <math.h>

#include "../core/kernel_args.h"
#include "../core/reduce_plan.h"
#include "cuda_reduce.cuh"

template <typename T> struct more_acc { typedef uint64_t type; };
template <> struct more_acc<float> { typedef double type; };
template <> struct more_acc<double> { typedef double type; };
template <> struct more_acc<__half> { typedef double type; };
template <> struct more_acc<__nv_bfloat16> { typedef double type; };

enum { K_CUMPROD, K_LOGCUMSUMEXP, K_CUMMAX, K_CUMMIN };

__device__ __forceinline__ double log_add_exp_dev(double x, double y) {
    double lo = isnan(y) ? y : (x < y ? x : y), hi = isnan(y) ? y : (x < y ? y : x);
    if (lo != hi || isfinite(lo)) return log1p(exp(lo - hi)) + hi;
    return x;
}

template <typename V> __device__ __forceinline__ bool is_nan_v(V v) { return v != v; }

template <typename T, int KIND>
__global__ void scan_more_kernel(const T *__restrict__ in, T *__restrict__ out, int64_t *__restrict__ idx,
                                 int64_t outer, int64_t n, int64_t cols) {
    typedef typename more_acc<T>::type A;
    typedef ampc_opmath_t<T> V;
    AMPC_CUDA_KERNEL_LOOP(l, outer * cols) {
        const int64_t b = l / cols, c = l % cols;
        int64_t off = b * n * cols + c;
        if (KIND == K_CUMPROD) {
            A acc = 1;
            for (int64_t i = 0; i < n; i++, off += cols) {
                acc *= ampc_convert<A>(in[off]);
                out[off] = ampc_convert<T>(acc);
            }
        } else if (KIND == K_LOGCUMSUMEXP) {
            double acc = -INFINITY;
            for (int64_t i = 0; i < n; i++, off += cols) {
                acc = log_add_exp_dev(ampc_convert<double>(in[off]), acc);
                out[off] = ampc_convert<T>(acc);
            }
        } else {
            V best = ampc_convert<V>(in[off]);
            int64_t at = 0;
            for (int64_t i = 0; i < n; i++, off += cols) {
                V v = ampc_convert<V>(in[off]);
                bool wins = KIND == K_CUMMAX ? v >= best : v <= best;
                if (is_nan_v(v) || (!is_nan_v(best) && wins)) {
                    best = v;
                    at = i;
                }
                out[off] = ampc_convert<T>(best);
                idx[off] = at;
            }
        }
    }
}

template <typename T, int KIND>
static ampc_status launch_more(const ampc_tensor *in, ampc_tensor *out, ampc_tensor *idx, int dim) {
    ampc_scan_plan sp = ampc_scan_plan_make(in, dim);
    if (sp.outer * sp.n * sp.cols == 0) return AMPC_OK;
    scan_more_kernel<T, KIND><<<ampc_cuda_blocks(sp.outer * sp.cols), AMPC_CUDA_THREADS, 0, ampc_cuda_stream_of(in)>>>(
        (const T *)ampc_data_ptr(in), (T *)ampc_data_ptr(out), idx ? (int64_t *)ampc_data_ptr(idx) : nullptr, sp.outer,
        sp.n, sp.cols);
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

extern "C" ampc_status ampc_cuda_scan_more(ampc_op op, const ampc_scan_args *a) {
    ampc_cuda_guard guard(a->input);
    ampc_status s = AMPC_OK;
    if (op == AMPC_OP_CUMPROD) {
        AMPC_CUDA_SWITCH_ALL(a->input->dtype, "cumprod",
                             s = (launch_more<scalar_t, K_CUMPROD>(a->input, a->output, nullptr, a->dim));)
    } else if (op == AMPC_OP_LOGCUMSUMEXP) {
        switch (a->input->dtype) {
        case AMPC_FLOAT32: return launch_more<float, K_LOGCUMSUMEXP>(a->input, a->output, nullptr, a->dim);
        case AMPC_FLOAT64: return launch_more<double, K_LOGCUMSUMEXP>(a->input, a->output, nullptr, a->dim);
        case AMPC_FLOAT16: return launch_more<__half, K_LOGCUMSUMEXP>(a->input, a->output, nullptr, a->dim);
        case AMPC_BFLOAT16: return launch_more<__nv_bfloat16, K_LOGCUMSUMEXP>(a->input, a->output, nullptr, a->dim);
        default:
            return ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "logcumsumexp: the CUDA backend has no loop for dtype %s",
                                  ampc_dtype_name(a->input->dtype));
        }
    } else {
        return ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "%s: not a CUDA scan", ampc_op_name(op));
    }
    return s;
}

static ampc_status cuda_scan_indices(ampc_op op, const ampc_scan_indices_args *a) {
    ampc_cuda_guard guard(a->input);
    ampc_status s = AMPC_OK;
    if (op == AMPC_OP_CUMMAX) {
        AMPC_CUDA_SWITCH_ALL(a->input->dtype, "cummax",
                             s = (launch_more<scalar_t, K_CUMMAX>(a->input, a->values, a->indices, a->dim));)
    } else {
        AMPC_CUDA_SWITCH_ALL(a->input->dtype, "cummin",
                             s = (launch_more<scalar_t, K_CUMMIN>(a->input, a->values, a->indices, a->dim));)
    }
    return s;
}

extern "C" void ampc_cuda_register_scan_more(void) { ampc_register_scan_indices(AMPC_CUDA, cuda_scan_indices); }
