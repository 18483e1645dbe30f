/* cpu_sort.c: the CPU kernels of sorting and selection (ops.def "sorting and selection"): SORT,
 * the selections TOPK / KTHVALUE / MEDIAN / NANMEDIAN / MODE, SEARCHSORTED and ISIN,
 * UNIQUE_CONSECUTIVE, HISTC and BINCOUNT.
 *
 * Every kernel works along the last dim of its tensors (any strides; the frontend, core/sort.c,
 * moved the user's dim there). Rows run in parallel over OpenMP threads, each thread with its own
 * scratch. Values become the order-preserving integer keys of core/sort_keys.h, so one code path
 * serves every dtype and NaN / -0.0 / ties follow PyTorch:
 *  - sort: a stable LSD radix sort of (key, index) pairs, 8 bits a pass, passes whose digit is
 *    the same for the whole row skipped (fp16, bool and small integers cost 1-2 passes);
 *    insertion sort for short rows;
 *  - selections: (key, index) packed into one integer that orders by key, then index, so an
 *    nth_element-style quickselect finds the k-th element in O(n) and ties resolve by index;
 *    MODE sorts the row and scans its runs.
 * Outputs copy the selected input elements (bits kept: NaN payloads, -0.0). */
#include <stdlib.h>
#include <string.h>

#include "../core/kernel_args.h"
#include "../core/sort_keys.h"
#include "cpu_backend.h"
#include "cpu_reduce.h"
#include "cpu_sort_rows.h"

/* ------------------------------------------------------------------ rows */

static char *row_ptr(const ampc_tensor *t, int64_t r) {
    return (char *)ampc_data_ptr(t) + row_offset(t, r) * (int64_t)ampc_dtype_itemsize(t->dtype);
}

/* copies element `from` of a row (stride sf) to element `to` of another (stride st), by size */
static inline void copy_elem(char *dst, int64_t st, int64_t to, const char *src, int64_t sf, int64_t from, size_t sz) {
    switch (sz) {
    case 1: ((uint8_t *)dst)[to * st] = ((const uint8_t *)src)[from * sf]; break;
    case 2: ((uint16_t *)dst)[to * st] = ((const uint16_t *)src)[from * sf]; break;
    case 4: ((uint32_t *)dst)[to * st] = ((const uint32_t *)src)[from * sf]; break;
    default: ((uint64_t *)dst)[to * st] = ((const uint64_t *)src)[from * sf]; break;
    }
}

static int n_threads(int64_t rows, int64_t work) {
    int nt = ampc_cpu_reduce_threads(work);
    return rows < nt ? (int)(rows < 1 ? 1 : rows) : nt;
}

/* ------------------------------------------------------------------ keys of a row */

static bool wide_keys(ampc_dtype dt) { return ampc_dtype_itemsize(dt) == 8; }

/* 32-bit keys of n elements at p (stride st, elements), xor flip (~0: descending) */
static void keys32(ampc_dtype dt, const char *p, int64_t st, int64_t n, uint32_t flip, uint32_t *k) {
    switch (dt) {
    case AMPC_FLOAT32: for (int64_t i = 0; i < n; i++) k[i] = ampc_sort_key_f32(((const float *)p)[i * st]) ^ flip; break;
    case AMPC_FLOAT16: for (int64_t i = 0; i < n; i++) k[i] = ampc_sort_key_f16(((const ampc_half *)p)[i * st]) ^ flip; break;
    case AMPC_BFLOAT16: for (int64_t i = 0; i < n; i++) k[i] = ampc_sort_key_bf16(((const ampc_bfloat16 *)p)[i * st]) ^ flip; break;
    case AMPC_INT32: for (int64_t i = 0; i < n; i++) k[i] = ampc_sort_key_i32(((const int32_t *)p)[i * st]) ^ flip; break;
    case AMPC_UINT8: for (int64_t i = 0; i < n; i++) k[i] = ampc_sort_key_u8(((const uint8_t *)p)[i * st]) ^ flip; break;
    default: for (int64_t i = 0; i < n; i++) k[i] = ampc_sort_key_b8(((const uint8_t *)p)[i * st]) ^ flip; break;
    }
}

static void keys64(ampc_dtype dt, const char *p, int64_t st, int64_t n, uint64_t flip, uint64_t *k) {
    if (dt == AMPC_FLOAT64)
        for (int64_t i = 0; i < n; i++) k[i] = ampc_sort_key_f64(((const double *)p)[i * st]) ^ flip;
    else
        for (int64_t i = 0; i < n; i++) k[i] = ampc_sort_key_i64(((const int64_t *)p)[i * st]) ^ flip;
}

/* the NaN key of a floating dtype (ascending), or 0 with *has_nan false for the others */
static uint64_t nan_key(ampc_dtype dt, bool *has_nan) {
    *has_nan = ampc_dtype_is_floating(dt);
    size_t sz = ampc_dtype_itemsize(dt);
    return sz == 8 ? ~0ull : sz == 4 ? 0xFFFFFFFFull : 0xFFFFull;
}

/* ------------------------------------------------------------------ stable radix sort of (key, index)
 * On return (k, ix) hold the row in key order, equal keys in their incoming order; k2 and ix2
 * are scratch of the same size. */
#define DEFINE_RADIX(KT, NB)                                                                       \
    static void radix_##KT(KT *k, uint32_t *ix, KT *k2, uint32_t *ix2, int64_t n) {                \
        if (n <= 32) { /* insertion sort: stable, and cheaper than 256-bucket passes */           \
            for (int64_t i = 1; i < n; i++) {                                                      \
                KT kv = k[i];                                                                      \
                uint32_t iv = ix[i];                                                               \
                int64_t j = i - 1;                                                                 \
                for (; j >= 0 && k[j] > kv; j--) {                                                 \
                    k[j + 1] = k[j];                                                               \
                    ix[j + 1] = ix[j];                                                             \
                }                                                                                  \
                k[j + 1] = kv;                                                                     \
                ix[j + 1] = iv;                                                                    \
            }                                                                                      \
            return;                                                                                \
        }                                                                                          \
        /* the bytes that differ somewhere in the row: only they need a histogram and a pass */ \
        KT all_or = 0, all_and = (KT)~(KT)0;                                                       \
        for (int64_t i = 0; i < n; i++) {                                                          \
            all_or |= k[i];                                                                        \
            all_and &= k[i];                                                                       \
        }                                                                                          \
        KT varying = all_or ^ all_and;                                                             \
        int bytes[NB], nb = 0;                                                                     \
        for (int b = 0; b < NB; b++)                                                               \
            if ((varying >> (8 * b)) & 255) bytes[nb++] = b;                                       \
        uint32_t hist[NB][256];                                                                    \
        memset(hist, 0, sizeof(uint32_t) * 256 * (size_t)nb);                                      \
        for (int64_t i = 0; i < n; i++) {                                                          \
            KT v = k[i];                                                                           \
            for (int j = 0; j < nb; j++) hist[j][(v >> (8 * bytes[j])) & 255]++;                   \
        }                                                                                          \
        KT *src = k, *dst = k2;                                                                    \
        uint32_t *isrc = ix, *idst = ix2;                                                          \
        for (int j = 0; j < nb; j++) {                                                             \
            uint32_t *h = hist[j];                                                                 \
            int shift = 8 * bytes[j];                                                              \
            uint32_t sum = 0;                                                                      \
            for (int d = 0; d < 256; d++) {                                                        \
                uint32_t c = h[d];                                                                 \
                h[d] = sum;                                                                        \
                sum += c;                                                                          \
            }                                                                                      \
            for (int64_t i = 0; i < n; i++) {                                                      \
                KT v = src[i];                                                                     \
                uint32_t p = h[(v >> shift) & 255]++;                                              \
                dst[p] = v;                                                                        \
                idst[p] = isrc[i];                                                                 \
            }                                                                                      \
            KT *t = src;                                                                           \
            src = dst;                                                                             \
            dst = t;                                                                               \
            uint32_t *ti = isrc;                                                                   \
            isrc = idst;                                                                           \
            idst = ti;                                                                             \
        }                                                                                          \
        if (src != k) {                                                                            \
            memcpy(k, src, sizeof(KT) * (size_t)n);                                                \
            memcpy(ix, isrc, sizeof(uint32_t) * (size_t)n);                                        \
        }                                                                                          \
    }
DEFINE_RADIX(uint32_t, 4)
DEFINE_RADIX(uint64_t, 8)

/* Scratch of one thread for rows of n elements: keys, indices and their second halves. */
typedef struct row_scratch {
    void *keys, *keys2;
    uint32_t *ix, *ix2;
} row_scratch;

static bool scratch_alloc(row_scratch *s, int64_t n, size_t key_size) {
    s->keys = malloc(key_size * (size_t)n * 2 + 1);
    s->ix = (uint32_t *)malloc(sizeof(uint32_t) * (size_t)n * 2 + 1);
    s->keys2 = s->keys ? (char *)s->keys + key_size * (size_t)n : NULL;
    s->ix2 = s->ix ? s->ix + n : NULL;
    return s->keys && s->ix;
}

static void scratch_free(row_scratch *s) {
    free(s->keys);
    free(s->ix);
}

/* Sorts one row (n elements at p, stride st) into s->ix (and the keys), stable. */
static void sort_row(ampc_dtype dt, const char *p, int64_t st, int64_t n, bool descending, row_scratch *s) {
    for (int64_t i = 0; i < n; i++) s->ix[i] = (uint32_t)i;
    if (wide_keys(dt)) {
        keys64(dt, p, st, n, descending ? ~0ull : 0, (uint64_t *)s->keys);
        radix_uint64_t((uint64_t *)s->keys, s->ix, (uint64_t *)s->keys2, s->ix2, n);
    } else {
        keys32(dt, p, st, n, descending ? ~0u : 0, (uint32_t *)s->keys);
        radix_uint32_t((uint32_t *)s->keys, s->ix, (uint32_t *)s->keys2, s->ix2, n);
    }
}

static ampc_status cpu_sort(ampc_op op, const ampc_sort_args *a) {
    (void)op;
    const ampc_tensor *in = a->input;
    int64_t n = last_dim(in), total = ampc_numel(in);
    if (total == 0) return AMPC_OK;
    int64_t rows = total / n;
    ampc_dtype dt = in->dtype;
    size_t sz = ampc_dtype_itemsize(dt);
    int64_t sin = last_stride(in), sv = last_stride(a->values), si = last_stride(a->indices);
    bool failed = false;
#pragma omp parallel num_threads(n_threads(rows, total * 8))
    {
        row_scratch s;
        bool ok = scratch_alloc(&s, n, wide_keys(dt) ? 8 : 4);
        if (!ok) {
#pragma omp atomic write
            failed = true;
        }
#pragma omp for schedule(static)
        for (int64_t r = 0; r < rows; r++) {
            if (!ok) continue;
            const char *p = row_ptr(in, r);
            char *v = row_ptr(a->values, r);
            int64_t *ix = (int64_t *)row_ptr(a->indices, r);
            sort_row(dt, p, sin, n, a->descending, &s);
            for (int64_t j = 0; j < n; j++) {
                copy_elem(v, sv, j, p, sin, s.ix[j], sz);
                ix[j * si] = s.ix[j];
            }
        }
        scratch_free(&s);
    }
    return failed ? ampc_set_error(AMPC_E_NOMEM, "sort: out of memory for a row of %lld elements", (long long)n)
                  : AMPC_OK;
}

/* ------------------------------------------------------------------ selection
 * A packed element orders by key, then by index: for 32-bit keys one uint64 (key << 32 | index),
 * for 64-bit keys a pair. select_P leaves a[kth] where a sorted array would have it, smaller
 * elements before it and larger after (nth_element). */
typedef struct wide_pair {
    uint64_t key;
    uint64_t ix;
} wide_pair;

#define LESS_u64(x, y) ((x) < (y))
#define LESS_wide(x, y) ((x).key < (y).key || ((x).key == (y).key && (x).ix < (y).ix))

#define DEFINE_SELECT(NAME, PT, LESS)                                                              \
    static void isort_##NAME(PT *a, int64_t lo, int64_t hi) {                                      \
        for (int64_t i = lo + 1; i <= hi; i++) {                                                   \
            PT v = a[i];                                                                           \
            int64_t j = i - 1;                                                                     \
            for (; j >= lo && LESS(v, a[j]); j--) a[j + 1] = a[j];                                 \
            a[j + 1] = v;                                                                          \
        }                                                                                          \
    }                                                                                              \
    static void select_##NAME(PT *a, int64_t n, int64_t kth) {                                     \
        int64_t lo = 0, hi = n - 1;                                                                \
        while (hi > lo) {                                                                          \
            if (hi - lo < 16) {                                                                    \
                isort_##NAME(a, lo, hi);                                                           \
                return;                                                                            \
            }                                                                                      \
            int64_t mid = lo + (hi - lo) / 2;                                                      \
            PT x = a[lo], y = a[mid], z = a[hi], p; /* median of three: sorted rows stay O(n) */   \
            if (LESS(x, y)) p = LESS(y, z) ? y : (LESS(x, z) ? z : x);                             \
            else p = LESS(x, z) ? x : (LESS(y, z) ? z : y);                                        \
            int64_t i = lo, j = hi;                                                                \
            while (i <= j) {                                                                       \
                while (LESS(a[i], p)) i++;                                                         \
                while (LESS(p, a[j])) j--;                                                         \
                if (i <= j) {                                                                      \
                    PT t = a[i];                                                                   \
                    a[i] = a[j];                                                                   \
                    a[j] = t;                                                                      \
                    i++;                                                                           \
                    j--;                                                                           \
                }                                                                                  \
            }                                                                                      \
            if (kth <= j) hi = j;                                                                  \
            else if (kth >= i) lo = i;                                                             \
            else return;                                                                           \
        }                                                                                          \
    }                                                                                              \
    static int cmp_##NAME(const void *pa, const void *pb) {                                        \
        PT x = *(const PT *)pa, y = *(const PT *)pb;                                               \
        return LESS(x, y) ? -1 : LESS(y, x) ? 1 : 0;                                               \
    }
DEFINE_SELECT(u64, uint64_t, LESS_u64)
DEFINE_SELECT(wide, wide_pair, LESS_wide)

/* The k smallest packed elements of a row for k small next to n (k * 64 <= n, as PyTorch's
 * partial sort): a max-heap of the best k so far; most elements lose one comparison against its
 * top and are never moved. h[0..k) on return, in heap order. */
#define DEFINE_HEAP(NAME, PT, LESS)                                                                \
    static void sift_##NAME(PT *h, int64_t k, int64_t i) {                                         \
        PT v = h[i];                                                                               \
        for (;;) {                                                                                 \
            int64_t c = 2 * i + 1;                                                                 \
            if (c >= k) break;                                                                     \
            if (c + 1 < k && LESS(h[c], h[c + 1])) c++;                                            \
            if (!LESS(v, h[c])) break;                                                             \
            h[i] = h[c];                                                                           \
            i = c;                                                                                 \
        }                                                                                          \
        h[i] = v;                                                                                  \
    }                                                                                              \
    static void heap_push_all_##NAME(PT *h, int64_t k) {                                           \
        for (int64_t i = k / 2 - 1; i >= 0; i--) sift_##NAME(h, k, i);                             \
    }
DEFINE_HEAP(u64, uint64_t, LESS_u64)
DEFINE_HEAP(wide, wide_pair, LESS_wide)

static void heap_select_row(ampc_dtype dt, const void *keys, int64_t n, int64_t k, void *heap) {
    if (wide_keys(dt)) {
        const uint64_t *kk = (const uint64_t *)keys;
        wide_pair *h = (wide_pair *)heap;
        for (int64_t i = 0; i < k; i++) h[i] = (wide_pair){kk[i], (uint64_t)i};
        heap_push_all_wide(h, k);
        for (int64_t i = k; i < n; i++)
            if (kk[i] < h[0].key) { /* equal keys lose: the earlier index stays */
                h[0] = (wide_pair){kk[i], (uint64_t)i};
                sift_wide(h, k, 0);
            }
    } else {
        const uint32_t *kk = (const uint32_t *)keys;
        uint64_t *h = (uint64_t *)heap;
        for (int64_t i = 0; i < k; i++) h[i] = ((uint64_t)kk[i] << 32) | (uint64_t)i;
        heap_push_all_u64(h, k);
        uint32_t top = (uint32_t)(h[0] >> 32);
        for (int64_t i = k; i < n; i++)
            if (kk[i] < top) {
                h[0] = ((uint64_t)kk[i] << 32) | (uint64_t)i;
                sift_u64(h, k, 0);
                top = (uint32_t)(h[0] >> 32);
            }
    }
}

/* A thread's scratch for selections: a sort's (keys, indices) and n packed elements. */
typedef struct select_scratch {
    row_scratch rs;  /* MODE and the large-k TOPK: a full sort */
    void *packed;    /* n packed elements */
} select_scratch;

/* the packed (key, index) row, ascending unless flip */
static void pack_row(ampc_dtype dt, const char *p, int64_t st, int64_t n, bool flip, void *packed, void *keys) {
    if (wide_keys(dt)) {
        uint64_t *k = (uint64_t *)keys;
        wide_pair *w = (wide_pair *)packed;
        keys64(dt, p, st, n, flip ? ~0ull : 0, k);
        for (int64_t i = 0; i < n; i++) w[i] = (wide_pair){k[i], (uint64_t)i};
    } else {
        uint32_t *k = (uint32_t *)keys;
        uint64_t *w = (uint64_t *)packed;
        keys32(dt, p, st, n, flip ? ~0u : 0, k);
        for (int64_t i = 0; i < n; i++) w[i] = ((uint64_t)k[i] << 32) | (uint64_t)i;
    }
}

static uint64_t packed_ix(ampc_dtype dt, const void *packed, int64_t i) {
    return wide_keys(dt) ? ((const wide_pair *)packed)[i].ix : (((const uint64_t *)packed)[i] & 0xFFFFFFFFull);
}

static void select_packed(ampc_dtype dt, void *packed, int64_t n, int64_t kth) {
    if (wide_keys(dt)) select_wide((wide_pair *)packed, n, kth);
    else select_u64((uint64_t *)packed, n, kth);
}

/* the selected index of a one-result op (KTHVALUE, MEDIAN, NANMEDIAN, MODE) on one row */
static int64_t select_one(ampc_op op, ampc_dtype dt, const char *p, int64_t st, int64_t n, int64_t k,
                          select_scratch *s) {
    bool floating;
    uint64_t nan = nan_key(dt, &floating);
    if (op == AMPC_OP_MODE) { /* the longest run of the sorted row; the first (smallest) wins ties */
        sort_row(dt, p, st, n, false, &s->rs);
        int64_t best = 0, best_len = 0;
        for (int64_t i = 0; i < n;) {
            int64_t j = i + 1;
            uint64_t key = wide_keys(dt) ? ((uint64_t *)s->rs.keys)[i] : ((uint32_t *)s->rs.keys)[i];
            if (floating && key == nan) /* NaN equals nothing, as PyTorch's ==: runs of one */
                ;
            else if (wide_keys(dt))
                while (j < n && ((uint64_t *)s->rs.keys)[j] == ((uint64_t *)s->rs.keys)[i]) j++;
            else
                while (j < n && ((uint32_t *)s->rs.keys)[j] == ((uint32_t *)s->rs.keys)[i]) j++;
            if (j - i > best_len) {
                best_len = j - i;
                best = j - 1; /* stable: the last of the run is the value's last index */
            }
            i = j;
        }
        return s->rs.ix[best];
    }
    pack_row(dt, p, st, n, false, s->packed, s->rs.keys);
    int64_t kth = k - 1;
    if (op == AMPC_OP_MEDIAN || op == AMPC_OP_NANMEDIAN) {
        int64_t n_nan = 0, first_nan = -1;
        if (floating) {
            for (int64_t i = 0; i < n; i++) {
                uint64_t key = wide_keys(dt) ? ((uint64_t *)s->rs.keys)[i] : ((uint32_t *)s->rs.keys)[i];
                if (key == nan) {
                    if (first_nan < 0) first_nan = i;
                    n_nan++;
                }
            }
        }
        if (op == AMPC_OP_MEDIAN && n_nan) return first_nan; /* NaN propagates */
        int64_t m = n - n_nan;
        if (m == 0) return first_nan; /* nanmedian of NaNs only */
        kth = (m - 1) / 2;            /* the lower median; NaN keys sort above every value */
    }
    select_packed(dt, s->packed, n, kth);
    return (int64_t)packed_ix(dt, s->packed, kth);
}

static ampc_status cpu_select(ampc_op op, const ampc_select_args *a) {
    const ampc_tensor *in = a->input;
    int64_t n = last_dim(in), total = ampc_numel(in);
    if (total == 0 || ampc_numel(a->values) == 0) return AMPC_OK;
    int64_t rows = total / n, k = a->k;
    ampc_dtype dt = in->dtype;
    size_t sz = ampc_dtype_itemsize(dt), psz = wide_keys(dt) ? sizeof(wide_pair) : sizeof(uint64_t);
    int64_t sin = last_stride(in), sv = last_stride(a->values), si = last_stride(a->indices);
    /* TOPK with k a large part of n: a full sort is cheaper than select + sort of k */
    bool topk_by_sort = op == AMPC_OP_TOPK && k * 8 >= n;
    bool failed = false;
#pragma omp parallel num_threads(n_threads(rows, total * 4))
    {
        select_scratch s;
        bool ok = scratch_alloc(&s.rs, n, wide_keys(dt) ? 8 : 4);
        s.packed = malloc(psz * (size_t)n);
        ok = ok && s.packed;
        if (!ok) {
#pragma omp atomic write
            failed = true;
        }
#pragma omp for schedule(static)
        for (int64_t r = 0; r < rows; r++) {
            if (!ok) continue;
            const char *p = row_ptr(in, r);
            char *v = row_ptr(a->values, r);
            int64_t *ix = (int64_t *)row_ptr(a->indices, r);
            if (op != AMPC_OP_TOPK) {
                int64_t j = select_one(op, dt, p, sin, n, k, &s);
                copy_elem(v, sv, 0, p, sin, j, sz);
                ix[0] = j;
            } else if (topk_by_sort) {
                sort_row(dt, p, sin, n, a->largest, &s.rs);
                for (int64_t j = 0; j < k; j++) {
                    copy_elem(v, sv, j, p, sin, s.rs.ix[j], sz);
                    ix[j * si] = s.rs.ix[j];
                }
            } else {
                if (k * 64 <= n) { /* few of many: a heap of k, elements read once */
                    if (wide_keys(dt)) keys64(dt, p, sin, n, a->largest ? ~0ull : 0, (uint64_t *)s.rs.keys);
                    else keys32(dt, p, sin, n, a->largest ? ~0u : 0, (uint32_t *)s.rs.keys);
                    heap_select_row(dt, s.rs.keys, n, k, s.packed);
                } else {
                    pack_row(dt, p, sin, n, a->largest, s.packed, s.rs.keys);
                    if (k < n) select_packed(dt, s.packed, n, k - 1);
                }
                if (a->sorted) qsort(s.packed, (size_t)k, psz, wide_keys(dt) ? cmp_wide : cmp_u64);
                for (int64_t j = 0; j < k; j++) {
                    int64_t from = (int64_t)packed_ix(dt, s.packed, j);
                    copy_elem(v, sv, j, p, sin, from, sz);
                    ix[j * si] = from;
                }
            }
        }
        scratch_free(&s.rs);
        free(s.packed);
    }
    return failed ? ampc_set_error(AMPC_E_NOMEM, "%s: out of memory for a row of %lld elements", ampc_op_name(op),
                                   (long long)n)
                  : AMPC_OK;
}

void ampc_cpu_register_sort(void) {
    ampc_register_sort(AMPC_CPU, cpu_sort);
    ampc_register_select(AMPC_CPU, cpu_select);
    ampc_cpu_register_sort_search();
}
