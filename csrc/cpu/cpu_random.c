/* cpu_random.c: CPU kernels of the RANDOM family: UNIFORM, NORMAL, RANDINT, BERNOULLI (Philox,
 * see core/philox.h for the stream layout) and ARANGE (start + i * step, no randomness).
 *
 * Every kernel works on element indices, not memory: a chunk of linear indices [b, e) is
 * generated into a buffer (double or int64), then stored into the output through its strides.
 * So values depend only on (seed, offset, index): the same for any layout of the output, any
 * thread count, and the CUDA kernels that follow the same layout. */
#include <string.h>

#include "../core/random_transforms.h"
#include "cpu_backend.h"
#include "cpu_dtype_loops.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#define CHUNK 1024           /* elements per buffer; a multiple of 4 so chunks start on a block */
#define PARALLEL_MIN 65536   /* below this many elements one thread is faster */

/* ARANGE: int64 arithmetic when start and step are ints and the output integral, else double. */
typedef struct arange_params {
    bool ints;
    int64_t istart, istep;
    double dstart, dstep;
} arange_params;

/* What one kernel call shares across chunks. */
typedef struct random_ctx {
    ampc_op op;
    ampc_random_params rp; /* UNIFORM, NORMAL, RANDINT, BERNOULLI */
    arange_params ar;      /* ARANGE */
} random_ctx;

/* Elements [b, e) into d or iv; b is a multiple of 4, so it starts a block. */
static void gen_random(const ampc_random_params *p, int64_t b, int64_t e, double *d, int64_t *iv) {
    int per = p->per_block;
    for (int64_t i = b; i < e; i += per) {
        int n = e - i < per ? (int)(e - i) : per;
        ampc_random_block(p, (uint64_t)(i / per), n, d + (i - b), iv + (i - b));
    }
}

static void gen_arange(const arange_params *a, int64_t b, int64_t e, double *d, int64_t *iv) {
    if (a->ints)
        for (int64_t i = b; i < e; i++) iv[i - b] = a->istart + i * a->istep;
    else
        for (int64_t i = b; i < e; i++) d[i - b] = a->dstart + (double)i * a->dstep;
}

/* ---- storing a chunk through the output's strides ---- */

/* Byte offsets of elements [b, b + n) of t from its data pointer (row-major order). */
static void element_offsets(const ampc_tensor *t, int64_t b, int64_t n, int64_t *offs) {
    int nd = t->ndim;
    int64_t item = (int64_t)ampc_dtype_itemsize(t->dtype);
    int64_t idx[AMPC_MAX_DIMS], off = 0, rem = b;
    for (int i = nd - 1; i >= 0; i--) {
        idx[i] = rem % t->shape[i];
        rem /= t->shape[i];
        off += idx[i] * t->strides[i];
    }
    for (int64_t k = 0; k < n; k++) {
        offs[k] = off * item;
        for (int i = nd - 1; i >= 0; i--) { /* odometer step */
            off += t->strides[i];
            if (++idx[i] < t->shape[i]) break;
            off -= idx[i] * t->strides[i];
            idx[i] = 0;
        }
    }
}

/* offs NULL: contiguous from element b. */
static void store_chunk(const ampc_tensor *t, int64_t b, int64_t n, const int64_t *offs, const double *d,
                        const int64_t *iv) {
    char *base = (char *)ampc_data_ptr(t);
#define STORE_CASE(ENUM, SUF, CT, VT)                                                                 \
    case ENUM: {                                                                                      \
        if (!offs) {                                                                                  \
            char *p = base + b * (int64_t)sizeof(CT);                                                 \
            if (d)                                                                                    \
                for (int64_t k = 0; k < n; k++) AMPC_STORE_##SUF(p + k * (int64_t)sizeof(CT), d[k]);  \
            else                                                                                      \
                for (int64_t k = 0; k < n; k++) AMPC_STORE_##SUF(p + k * (int64_t)sizeof(CT), iv[k]); \
        } else if (d) {                                                                               \
            for (int64_t k = 0; k < n; k++) AMPC_STORE_##SUF(base + offs[k], d[k]);                   \
        } else {                                                                                      \
            for (int64_t k = 0; k < n; k++) AMPC_STORE_##SUF(base + offs[k], iv[k]);                  \
        }                                                                                             \
        break;                                                                                        \
    }
    switch (t->dtype) {
        AMPC_FOR_EACH_DTYPE(STORE_CASE)
    default: break;
    }
#undef STORE_CASE
}

static void run_chunk(const random_ctx *c, ampc_tensor *t, bool contiguous, int64_t b, int64_t e) {
    double d[CHUNK];
    int64_t iv[CHUNK], offs[CHUNK];
    bool as_double;
    if (c->op == AMPC_OP_ARANGE) {
        gen_arange(&c->ar, b, e, d, iv);
        as_double = !c->ar.ints;
    } else {
        gen_random(&c->rp, b, e, d, iv);
        as_double = !ampc_random_makes_ints(&c->rp);
    }
    if (!contiguous) element_offsets(t, b, e - b, offs);
    store_chunk(t, b, e - b, contiguous ? NULL : offs, as_double ? d : NULL, as_double ? NULL : iv);
}

/* Fills t chunk by chunk, in parallel when it is large: what every RANDOM kernel shares. */
static ampc_status run_random(const random_ctx *c, ampc_tensor *t) {
    int64_t n = ampc_numel(t);
    bool contiguous = ampc_is_contiguous(t);
    int64_t chunks = (n + CHUNK - 1) / CHUNK;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (n >= PARALLEL_MIN)
#endif
    for (int64_t k = 0; k < chunks; k++) {
        int64_t b = k * CHUNK, e = b + CHUNK < n ? b + CHUNK : n;
        run_chunk(c, t, contiguous, b, e);
    }
    return AMPC_OK;
}

/* UNIFORM, NORMAL, RANDINT, BERNOULLI: cpu_uniform, ... (one kernel per schema) run the draws here. */
static ampc_status random_fill(const ampc_random_params *p, ampc_tensor *t) {
    random_ctx c = {.op = (ampc_op)p->op, .rp = *p};
    return run_random(&c, t);
}
AMPC_RANDOM_KERNELS(cpu, random_fill)

static ampc_status cpu_arange(ampc_op op, const ampc_arange_args *p) {
    random_ctx c = {.op = op};
    ampc_tensor *t = p->out;
    c.ar.ints = p->start.kind == AMPC_SCALAR_INT && p->step.kind == AMPC_SCALAR_INT &&
                !ampc_dtype_is_floating(t->dtype);
    c.ar.istart = ampc_scalar_to_int(p->start);
    c.ar.istep = ampc_scalar_to_int(p->step);
    c.ar.dstart = ampc_scalar_to_double(p->start);
    c.ar.dstep = ampc_scalar_to_double(p->step);
    return run_random(&c, t);
}

void ampc_cpu_register_random(void) {
    ampc_register_uniform(AMPC_CPU, cpu_uniform);
    ampc_register_normal(AMPC_CPU, cpu_normal);
    ampc_register_randint(AMPC_CPU, cpu_randint);
    ampc_register_bernoulli(AMPC_CPU, cpu_bernoulli);
    ampc_register_arange(AMPC_CPU, cpu_arange);
}
