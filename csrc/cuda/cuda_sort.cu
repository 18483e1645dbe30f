/* cuda_sort.cu: the sorting and selection family on CUDA (ops.def "sorting and selection"):
 * SORT, TOPK / KTHVALUE / MEDIAN / NANMEDIAN / MODE, SEARCHSORTED / ISIN, UNIQUE_CONSECUTIVE,
 * HISTC and BINCOUNT, with the contracts and the order (core/sort_keys.h) of the CPU kernels.
 *
 * Sorting is segmented through one device-wide stable radix sort (cub::DeviceRadixSort), as
 * PyTorch and CuPy sort many rows at once: each element's key carries its row above its value
 * key, so one sort orders every row; a 64-bit value key has no room for the row, so the rows are
 * sorted by value first and then, stably, by row. The sorted positions feed small kernels that
 * write the sorted rows, the first k (topk) or one chosen element per row (one thread a row:
 * kthvalue, medians, mode), so every selection equals a stable sort's answer, ties included, on
 * both devices. searchsorted is one thread per value; histograms use atomics on integer counts
 * (exact); bincount's float weights use float atomics (order unspecified, as PyTorch's CUDA).
 * unique_consecutive is one serial thread (the run scan is short next to the sort before it). */
#include <cub/device/device_radix_sort.cuh>

#include "../core/kernel_args.h"
#include "../core/sort_keys.h"

#include "cuda_common.cuh"

/* ---------------------------------------------------------------- rows of a strided tensor */

struct sort_geom {
    char *base; /* element 0 */
    int64_t shape[AMPC_MAX_DIMS], strides[AMPC_MAX_DIMS];
    int nd, isz;
};

static sort_geom geom_of(const ampc_tensor *t) {
    sort_geom g;
    memset(&g, 0, sizeof g);
    g.base = (char *)ampc_data_ptr(t);
    g.nd = t->ndim ? t->ndim : 1;
    g.isz = (int)ampc_dtype_itemsize(t->dtype);
    for (int d = 0; d < t->ndim; d++) {
        g.shape[d] = t->shape[d];
        g.strides[d] = t->strides[d];
    }
    if (t->ndim == 0) {
        g.shape[0] = 1;
        g.strides[0] = 1;
    }
    return g;
}

/* address of element j of row r */
__device__ __forceinline__ char *g_at(const sort_geom &g, int64_t r, int64_t j) {
    int64_t off = j * g.strides[g.nd - 1];
    for (int d = g.nd - 2; d >= 0; d--) {
        off += (r % g.shape[d]) * g.strides[d];
        r /= g.shape[d];
    }
    return g.base + off * g.isz;
}

__device__ __forceinline__ void copy_bytes(char *dst, const char *src, int sz) {
    switch (sz) {
    case 1: *(uint8_t *)dst = *(const uint8_t *)src; break;
    case 2: *(uint16_t *)dst = *(const uint16_t *)src; break;
    case 4: *(uint32_t *)dst = *(const uint32_t *)src; break;
    default: *(uint64_t *)dst = *(const uint64_t *)src; break;
    }
}

/* the ascending key of the element at p (core/sort_keys.h) */
__device__ __forceinline__ uint64_t elem_key(int dt, const char *p) {
    switch (dt) {
    case AMPC_FLOAT32: return ampc_sort_key_f32(*(const float *)p);
    case AMPC_FLOAT16: return ampc_sort_key_f16(*(const ampc_half *)p);
    case AMPC_BFLOAT16: return ampc_sort_key_bf16(*(const ampc_bfloat16 *)p);
    case AMPC_FLOAT64: return ampc_sort_key_f64(*(const double *)p);
    case AMPC_INT64: return ampc_sort_key_i64(*(const int64_t *)p);
    case AMPC_INT32: return ampc_sort_key_i32(*(const int32_t *)p);
    case AMPC_UINT8: return ampc_sort_key_u8(*(const uint8_t *)p);
    default: return ampc_sort_key_b8(*(const uint8_t *)p);
    }
}

__device__ __forceinline__ bool key_is_nan(int dt, uint64_t key) {
    switch (dt) {
    case AMPC_FLOAT32: return key == 0xFFFFFFFFull;
    case AMPC_FLOAT16:
    case AMPC_BFLOAT16: return key == 0xFFFFull;
    case AMPC_FLOAT64: return key == ~0ull;
    default: return false;
    }
}

__device__ __forceinline__ double load_f(int dt, const char *p) {
    switch (dt) {
    case AMPC_FLOAT32: return *(const float *)p;
    case AMPC_FLOAT16: return ampc_half_to_f32(*(const ampc_half *)p);
    case AMPC_BFLOAT16: return ampc_bf16_to_f32(*(const ampc_bfloat16 *)p);
    default: return *(const double *)p;
    }
}

__device__ __forceinline__ long long load_i(int dt, const char *p) {
    switch (dt) {
    case AMPC_INT64: return *(const int64_t *)p;
    case AMPC_INT32: return *(const int32_t *)p;
    default: return *(const uint8_t *)p;
    }
}

#define GRID_STRIDE(i, n) for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

/* ---------------------------------------------------------------- the segmented sort */

/* keys (row << 32 | key) for keys of up to 32 bits, the 64-bit key otherwise; vals the flat positions */
__global__ void sort_keys_kernel(sort_geom in, int64_t n, int64_t total, int dt, bool descending, bool wide,
                                 unsigned long long *keys, long long *vals) {
    GRID_STRIDE(e, total) {
        int64_t r = e / n, j = e % n;
        uint64_t k = elem_key(dt, g_at(in, r, j));
        if (descending) k = wide ? ~k : (~k & 0xFFFFFFFFull);
        keys[e] = wide ? k : (((uint64_t)r << 32) | k);
        vals[e] = e;
    }
}

__global__ void row_of_kernel(const long long *vals, int64_t n, int64_t total, unsigned long long *keys) {
    GRID_STRIDE(i, total) keys[i] = (unsigned long long)(vals[i] / n);
}

static int bits_for(uint64_t v) {
    int b = 0;
    while (b < 64 && (v >> b) != 0) b++;
    return b;
}

static ampc_status radix_pairs(int dev, cudaStream_t stream, unsigned long long *kin, unsigned long long *kout,
                               long long *vin, long long *vout, int64_t total, int end_bit) {
    size_t temp_bytes = 0;
    AMPC_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, kin, kout, vin, vout, total, 0, end_bit, stream));
    if (temp_bytes == 0) temp_bytes = 16;
    ampc_cuda_scratch temp(dev, temp_bytes);
    if (!temp.ok()) return ampc_last_status();
    AMPC_CUDA_TRY(cub::DeviceRadixSort::SortPairs(temp.ptr, temp_bytes, kin, kout, vin, vout, total, 0, end_bit, stream));
    return AMPC_OK;
}

/* The flat positions (r * n + j) of every row's elements in stable sorted order, in *pos (one of
 * the buffers of s). */
struct sort_buffers {
    ampc_cuda_scratch k0, k1, v0, v1;
    sort_buffers(int dev, int64_t total)
        : k0(dev, (size_t)total * 8), k1(dev, (size_t)total * 8), v0(dev, (size_t)total * 8), v1(dev, (size_t)total * 8) {}
    bool ok() const { return k0.ok() && k1.ok() && v0.ok() && v1.ok(); }
};

static ampc_status sorted_positions(const ampc_tensor *in, bool descending, sort_buffers &s, const long long **pos) {
    int dev = (int)in->device.index;
    cudaStream_t stream = ampc_cuda_stream_of(in);
    int64_t n = in->shape[in->ndim - 1], total = ampc_numel(in), rows = total / n;
    bool wide = ampc_dtype_itemsize(in->dtype) == 8;
    sort_keys_kernel<<<ampc_cuda_blocks(total), AMPC_CUDA_THREADS, 0, stream>>>(
        geom_of(in), n, total, (int)in->dtype, descending, wide, s.k0.as<unsigned long long>(), s.v0.as<long long>());
    AMPC_CUDA_CHECK_LAUNCH();
    int row_bits = bits_for((uint64_t)(rows - 1));
    if (!wide) {
        AMPC_TRY(radix_pairs(dev, stream, s.k0.as<unsigned long long>(), s.k1.as<unsigned long long>(),
                             s.v0.as<long long>(), s.v1.as<long long>(), total, 32 + row_bits));
        *pos = s.v1.as<long long>();
        return AMPC_OK;
    }
    AMPC_TRY(radix_pairs(dev, stream, s.k0.as<unsigned long long>(), s.k1.as<unsigned long long>(),
                         s.v0.as<long long>(), s.v1.as<long long>(), total, 64));
    if (rows == 1) {
        *pos = s.v1.as<long long>();
        return AMPC_OK;
    }
    row_of_kernel<<<ampc_cuda_blocks(total), AMPC_CUDA_THREADS, 0, stream>>>(s.v1.as<long long>(), n, total,
                                                                             s.k0.as<unsigned long long>());
    AMPC_CUDA_CHECK_LAUNCH();
    AMPC_TRY(radix_pairs(dev, stream, s.k0.as<unsigned long long>(), s.k1.as<unsigned long long>(),
                         s.v1.as<long long>(), s.v0.as<long long>(), total, row_bits));
    *pos = s.v0.as<long long>();
    return AMPC_OK;
}

/* the first k of each sorted row into values / indices (k = n: the whole sort) */
__global__ void write_sorted_kernel(sort_geom in, sort_geom vo, sort_geom io, int64_t n, int64_t k, int64_t rows,
                                    const long long *pos) {
    GRID_STRIDE(i, rows * k) {
        int64_t r = i / k, j = i % k, src = pos[r * n + j] % n;
        copy_bytes(g_at(vo, r, j), g_at(in, r, src), in.isz);
        *(int64_t *)g_at(io, r, j) = src;
    }
}

static ampc_status cuda_sort(ampc_op op, const ampc_sort_args *a) {
    (void)op;
    const ampc_tensor *in = a->input;
    int64_t total = ampc_numel(in);
    if (total == 0) return AMPC_OK;
    ampc_cuda_guard guard(in);
    int64_t n = in->shape[in->ndim - 1];
    sort_buffers s((int)in->device.index, total);
    if (!s.ok()) return ampc_last_status();
    const long long *pos;
    AMPC_TRY(sorted_positions(in, a->descending, s, &pos));
    write_sorted_kernel<<<ampc_cuda_blocks(total), AMPC_CUDA_THREADS, 0, ampc_cuda_stream_of(in)>>>(
        geom_of(in), geom_of(a->values), geom_of(a->indices), n, n, total / n, pos);
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

/* ---------------------------------------------------------------- selections on the sorted rows */

/* one thread per row picks its element of the ascending sorted row */
__global__ void pick_kernel(int op, sort_geom in, sort_geom vo, sort_geom io, int64_t n, int64_t k, int64_t rows,
                            int dt, const long long *pos) {
    GRID_STRIDE(r, rows) {
        const long long *p = pos + r * n;
        int64_t j = k - 1;
        if (op == AMPC_OP_MEDIAN || op == AMPC_OP_NANMEDIAN) {
            int64_t m = n; /* NaNs sort last: the non-NaN count */
            while (m > 0 && key_is_nan(dt, elem_key(dt, g_at(in, r, p[m - 1] % n)))) m--;
            if (op == AMPC_OP_MEDIAN && m < n) j = m; /* the first NaN (stable: the lowest index) */
            else j = m == 0 ? 0 : (m - 1) / 2;
        } else if (op == AMPC_OP_MODE) { /* the longest run; the first (smallest) wins ties */
            int64_t best = 0, best_len = 0;
            for (int64_t i = 0; i < n;) {
                uint64_t key = elem_key(dt, g_at(in, r, p[i] % n));
                int64_t e = i + 1;
                if (!key_is_nan(dt, key)) /* NaN equals nothing, as the CPU kernel */
                    while (e < n && elem_key(dt, g_at(in, r, p[e] % n)) == key) e++;
                if (e - i > best_len) {
                    best_len = e - i;
                    best = e - 1;
                }
                i = e;
            }
            j = best;
        }
        int64_t src = p[j] % n;
        copy_bytes(g_at(vo, r, 0), g_at(in, r, src), in.isz);
        *(int64_t *)g_at(io, r, 0) = src;
    }
}

static ampc_status cuda_select(ampc_op op, const ampc_select_args *a) {
    const ampc_tensor *in = a->input;
    int64_t total = ampc_numel(in);
    if (total == 0 || ampc_numel(a->values) == 0) return AMPC_OK;
    ampc_cuda_guard guard(in);
    cudaStream_t stream = ampc_cuda_stream_of(in);
    int64_t n = in->shape[in->ndim - 1], rows = total / n;
    sort_buffers s((int)in->device.index, total);
    if (!s.ok()) return ampc_last_status();
    const long long *pos;
    AMPC_TRY(sorted_positions(in, op == AMPC_OP_TOPK && a->largest, s, &pos));
    if (op == AMPC_OP_TOPK) { /* sorted or not, the first k of the sorted row */
        write_sorted_kernel<<<ampc_cuda_blocks(rows * a->k), AMPC_CUDA_THREADS, 0, stream>>>(
            geom_of(in), geom_of(a->values), geom_of(a->indices), n, a->k, rows, pos);
    } else {
        pick_kernel<<<ampc_cuda_blocks(rows), AMPC_CUDA_THREADS, 0, stream>>>(
            (int)op, geom_of(in), geom_of(a->values), geom_of(a->indices), n, a->k, rows, (int)in->dtype, pos);
    }
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

/* ---------------------------------------------------------------- searchsorted, isin */

__global__ void search_kernel(int op, sort_geom s, sort_geom v, sort_geom so, bool has_sorter, sort_geom out,
                              int64_t n, int64_t m, int64_t total, bool shared, int dt, bool floating, bool right,
                              bool invert, int out_dt) {
    GRID_STRIDE(e, total) {
        int64_t r = e / m, j = e % m, sr = shared ? 0 : r;
        const char *vp = g_at(v, r, j);
        double vf = floating ? load_f(dt, vp) : 0.0;
        long long vi = floating ? 0 : load_i(dt, vp);
        int64_t lo = 0, hi = n;
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            int64_t at = has_sorter ? *(const int64_t *)g_at(so, sr, mid) : mid;
            const char *mp = g_at(s, sr, at);
            bool go_right = floating ? (right ? !(load_f(dt, mp) > vf) : !(load_f(dt, mp) >= vf))
                                     : (right ? !(load_i(dt, mp) > vi) : !(load_i(dt, mp) >= vi));
            if (go_right) lo = mid + 1;
            else hi = mid;
        }
        char *op_ = g_at(out, r, j);
        if (op == AMPC_OP_ISIN) {
            bool eq = false;
            if (lo < n) {
                const char *mp = g_at(s, sr, has_sorter ? *(const int64_t *)g_at(so, sr, lo) : lo);
                eq = floating ? load_f(dt, mp) == vf : load_i(dt, mp) == vi;
            }
            *(bool *)op_ = eq != invert;
        } else if (out_dt == AMPC_INT32) {
            *(int32_t *)op_ = (int32_t)lo;
        } else {
            *(int64_t *)op_ = lo;
        }
    }
}

static ampc_status cuda_searchsorted(ampc_op op, const ampc_searchsorted_args *a) {
    const ampc_tensor *s = a->sorted, *v = a->values;
    int64_t total = ampc_numel(v);
    if (total == 0) return AMPC_OK;
    ampc_cuda_guard guard(v);
    int64_t m = v->ndim ? v->shape[v->ndim - 1] : 1, n = s->ndim ? s->shape[s->ndim - 1] : 1;
    bool shared = s->ndim <= 1 || (n ? ampc_numel(s) / n : 1) == 1;
    sort_geom sg = geom_of(s), sog = a->sorter ? geom_of(a->sorter) : sg;
    search_kernel<<<ampc_cuda_blocks(total), AMPC_CUDA_THREADS, 0, ampc_cuda_stream_of(v)>>>(
        (int)op, sg, geom_of(v), sog, a->sorter != NULL, geom_of(a->out), n, m, total, shared, (int)s->dtype,
        ampc_dtype_is_floating(s->dtype), a->right, a->invert, (int)a->out->dtype);
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

/* ---------------------------------------------------------------- unique_consecutive */

__global__ void unique_runs_kernel(const char *x, int64_t n, int dt, int isz, bool floating, char *vals,
                                   int64_t *counts, int64_t *inverse, const int64_t *perm, int64_t *n_unique) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    int64_t g = -1, start = 0;
    for (int64_t i = 0; i < n; i++) {
        const char *p = x + i * isz, *q = p - isz;
        bool same = i > 0 && (floating ? load_f(dt, p) == load_f(dt, q) : load_i(dt, p) == load_i(dt, q));
        if (!same) {
            if (g >= 0 && counts) counts[g] = i - start;
            g++;
            start = i;
            copy_bytes(vals + g * isz, p, isz);
        }
        if (inverse) inverse[perm ? perm[i] : i] = g;
    }
    if (g >= 0 && counts) counts[g] = n - start;
    *n_unique = g + 1;
}

static ampc_status cuda_unique_consecutive(ampc_op op, const ampc_unique_consecutive_args *a) {
    (void)op;
    const ampc_tensor *in = a->input;
    ampc_cuda_guard guard(in);
    int dt = (int)in->dtype;
    /* bool compares as 0/1 bytes, like uint8 */
    unique_runs_kernel<<<1, 1, 0, ampc_cuda_stream_of(in)>>>(
        (const char *)ampc_data_ptr(in), ampc_numel(in), dt == AMPC_BOOL ? (int)AMPC_UINT8 : dt,
        (int)ampc_dtype_itemsize(in->dtype), ampc_dtype_is_floating(in->dtype), (char *)ampc_data_ptr(a->values),
        a->counts ? (int64_t *)ampc_data_ptr(a->counts) : nullptr,
        a->inverse ? (int64_t *)ampc_data_ptr(a->inverse) : nullptr,
        a->perm ? (const int64_t *)ampc_data_ptr(a->perm) : nullptr, (int64_t *)ampc_data_ptr(a->n_unique));
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

/* ---------------------------------------------------------------- histc, bincount */

/* x rounded to dtype dt, as the CPU's histc edges (cpu_sort_search.c) */
__device__ __forceinline__ double round_to(int dt, double x) {
    switch (dt) {
    case AMPC_FLOAT32: return (float)x;
    case AMPC_FLOAT16: return ampc_half_to_f32(ampc_f32_to_half((float)x));
    case AMPC_BFLOAT16: return ampc_bf16_to_f32(ampc_f32_to_bf16((float)x));
    default: return x;
    }
}

__global__ void histc_edges_kernel(int dt, double min, double max, int64_t bins, double *edges) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    double lo = round_to(dt, min), hi = round_to(dt, max);
    double step = round_to(dt, round_to(dt, hi - lo) / (double)bins);
    int64_t half = (bins + 1) / 2;
    for (int64_t i = 0; i <= bins; i++)
        edges[i] = i < half ? round_to(dt, lo + round_to(dt, step * (double)i))
                            : round_to(dt, hi - round_to(dt, step * (double)(bins - i)));
}

__global__ void histc_count_kernel(const char *x, int64_t n, int dt, int isz, const double *edges, int64_t bins,
                                   unsigned long long *counts) {
    GRID_STRIDE(i, n) {
        double v = load_f(dt, x + i * isz), e0 = edges[0], e1 = edges[bins];
        if (!(v >= e0 && v <= e1)) continue;
        int64_t pos = (int64_t)round_to(dt, round_to(dt, round_to(dt, v - e0) * round_to(dt, (double)bins)) /
                                                round_to(dt, e1 - e0)); /* as the CPU kernel */
        if (pos < 0) pos = 0;
        if (pos >= bins) pos = bins - 1;
        atomicAdd(counts + pos, 1ull);
    }
}

template <typename T>
__global__ void histc_store_kernel(const unsigned long long *counts, int64_t bins, T *out) {
    GRID_STRIDE(i, bins) out[i] = ampc_convert<T>((double)counts[i]); /* counts are exact in every float type's range here */
}

__global__ void bincount_kernel(const char *x, int64_t n, int dt, int isz, const char *w, int out_dt, char *out) {
    GRID_STRIDE(i, n) {
        long long b = load_i(dt, x + i * isz);
        if (!w) atomicAdd((unsigned long long *)out + b, 1ull);
        else if (out_dt == AMPC_FLOAT32) atomicAdd((float *)out + b, ((const float *)w)[i]);
        else atomicAdd((double *)out + b, ((const double *)w)[i]);
    }
}

static ampc_status cuda_histogram(ampc_op op, const ampc_histogram_args *a) {
    const ampc_tensor *in = a->input;
    ampc_tensor *out = a->out;
    ampc_cuda_guard guard(in);
    cudaStream_t stream = ampc_cuda_stream_of(in);
    int64_t n = ampc_numel(in);
    int dt = (int)in->dtype, isz = (int)ampc_dtype_itemsize(in->dtype);
    if (op == AMPC_OP_BINCOUNT) {
        bincount_kernel<<<ampc_cuda_blocks(n), AMPC_CUDA_THREADS, 0, stream>>>(
            (const char *)ampc_data_ptr(in), n, dt, isz, a->weights ? (const char *)ampc_data_ptr(a->weights) : nullptr,
            (int)out->dtype, (char *)ampc_data_ptr(out));
        AMPC_CUDA_CHECK_LAUNCH();
        return AMPC_OK;
    }
    int64_t bins = ampc_numel(out);
    int dev = (int)in->device.index;
    ampc_cuda_scratch edges(dev, (size_t)(bins + 1) * sizeof(double)), counts(dev, (size_t)bins * 8);
    if (!edges.ok() || !counts.ok()) return ampc_last_status();
    AMPC_CUDA_TRY(cudaMemsetAsync(counts.ptr, 0, (size_t)bins * 8, stream));
    histc_edges_kernel<<<1, 1, 0, stream>>>(dt, a->min, a->max, bins, edges.as<double>());
    AMPC_CUDA_CHECK_LAUNCH();
    histc_count_kernel<<<ampc_cuda_blocks(n), AMPC_CUDA_THREADS, 0, stream>>>(
        (const char *)ampc_data_ptr(in), n, dt, isz, edges.as<double>(), bins, counts.as<unsigned long long>());
    AMPC_CUDA_CHECK_LAUNCH();
    AMPC_CUDA_SWITCH_FLOATING(out->dtype, "histc", {
        histc_store_kernel<scalar_t><<<ampc_cuda_blocks(bins), AMPC_CUDA_THREADS, 0, stream>>>(
            counts.as<unsigned long long>(), bins, (scalar_t *)ampc_data_ptr(out));
        AMPC_CUDA_CHECK_LAUNCH();
    })
    return AMPC_OK;
}

extern "C" void ampc_cuda_register_sort(void) {
    ampc_register_sort(AMPC_CUDA, cuda_sort);
    ampc_register_select(AMPC_CUDA, cuda_select);
    ampc_register_searchsorted(AMPC_CUDA, cuda_searchsorted);
    ampc_register_unique_consecutive(AMPC_CUDA, cuda_unique_consecutive);
    ampc_register_histogram(AMPC_CUDA, cuda_histogram);
}
