/* cpu_nn_vol2col.c: VOL2COL and COL2VOL on the CPU, the 3-d counterparts of IM2COL/COL2IM
 * (cpu_nn_conv.c) around the GEMM of a 3-d convolution (core/nn_conv.c).
 *
 * VOL2COL copies elements as bits (padding reads as zero bits); COL2VOL sums the overlapping
 * windows of each (n, c) volume in double and rounds once. Both run over (n, c) volumes, each read
 * or written by one thread; in parallel only for large work, for the reason cpu_nn_conv.c gives
 * (an OpenMP team still spinning after its region slows the BLAS calls around it). */
#include <string.h>

#include "../core/kernel_args.h"
#include "cpu_backend.h"
#include "cpu_nn_common.h"

#define VOL_PARALLEL_GRAIN (1 << 23)

static int vol_threads(int64_t work) { return work >= VOL_PARALLEL_GRAIN ? nn_threads(work) : 1; }

typedef struct vol_geom {
    int64_t planes, d, h, w;
    int64_t k[3], s[3], p[3], dl[3];
    int64_t od, oh, ow;
} vol_geom;

static vol_geom geom_of(const ampc_tensor *x, const ampc_vol2col_args *a) {
    vol_geom g;
    g.planes = x->shape[0] * x->shape[1], g.d = x->shape[2], g.h = x->shape[3], g.w = x->shape[4];
    for (int i = 0; i < 3; i++) g.k[i] = a->kernel[i], g.s[i] = a->stride[i], g.p[i] = a->padding[i], g.dl[i] = a->dilation[i];
    g.od = a->out_size[0], g.oh = a->out_size[1], g.ow = a->out_size[2];
    return g;
}

/* Row (kd, kh, kw) of volume `vol`: the L = od*oh*ow input values that kernel tap reads. */
#define VOL2COL_ROW(T)                                                                                      \
    do {                                                                                                    \
        const T *src = (const T *)vol;                                                                      \
        T *dst = (T *)row;                                                                                  \
        for (int64_t zd = 0; zd < g->od; zd++) {                                                            \
            int64_t id = zd * g->s[0] - g->p[0] + kd * g->dl[0];                                            \
            for (int64_t zh = 0; zh < g->oh; zh++) {                                                        \
                int64_t ih = zh * g->s[1] - g->p[1] + kh * g->dl[1];                                        \
                T *o = dst + (zd * g->oh + zh) * g->ow;                                                     \
                if (id < 0 || id >= g->d || ih < 0 || ih >= g->h) {                                         \
                    memset(o, 0, sizeof(T) * (size_t)g->ow);                                                \
                    continue;                                                                               \
                }                                                                                           \
                const T *in = src + (id * g->h + ih) * g->w;                                                \
                for (int64_t zw = 0; zw < g->ow; zw++) {                                                    \
                    int64_t iw = zw * g->s[2] - g->p[2] + kw * g->dl[2];                                    \
                    o[zw] = iw >= 0 && iw < g->w ? in[iw] : (T)0;                                           \
                }                                                                                           \
            }                                                                                               \
        }                                                                                                   \
    } while (0)

static void vol2col_volume(const vol_geom *g, const char *vol, char *cols, size_t item) {
    int64_t l = g->od * g->oh * g->ow;
    for (int64_t kd = 0; kd < g->k[0]; kd++)
        for (int64_t kh = 0; kh < g->k[1]; kh++)
            for (int64_t kw = 0; kw < g->k[2]; kw++) {
                char *row = cols + ((kd * g->k[1] + kh) * g->k[2] + kw) * l * (int64_t)item;
                switch (item) {
                case 1: VOL2COL_ROW(uint8_t); break;
                case 2: VOL2COL_ROW(uint16_t); break;
                case 4: VOL2COL_ROW(uint32_t); break;
                default: VOL2COL_ROW(uint64_t); break;
                }
            }
}

static ampc_status cpu_vol2col(const ampc_vol2col_args *a) {
    vol_geom g = geom_of(a->in, a);
    size_t item = ampc_dtype_itemsize(a->in->dtype);
    int64_t kk = g.k[0] * g.k[1] * g.k[2], l = g.od * g.oh * g.ow, vol = g.d * g.h * g.w;
    const char *src = (const char *)ampc_data_ptr(a->in);
    char *dst = (char *)ampc_data_ptr(a->out);
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(vol_threads(g.planes * kk * l))
#endif
    for (int64_t p = 0; p < g.planes; p++)
        vol2col_volume(&g, src + p * vol * (int64_t)item, dst + p * kk * l * (int64_t)item, item);
    return AMPC_OK;
}

typedef struct col2vol_ctx {
    vol_geom g;
    const ampc_tensor *cols;
    ampc_tensor *x;
} col2vol_ctx;

/* Volume p of x: the sum of its kd*kh*kw column rows, in double. buf: the volume and one row. */
static void col2vol_task(void *vctx, int64_t p, double *buf) {
    const col2vol_ctx *c = (const col2vol_ctx *)vctx;
    const vol_geom *g = &c->g;
    int64_t kk = g->k[0] * g->k[1] * g->k[2], l = g->od * g->oh * g->ow, vol = g->d * g->h * g->w;
    double *acc = buf, *row = buf + vol;
    memset(acc, 0, sizeof(double) * (size_t)vol);
    for (int64_t kd = 0; kd < g->k[0]; kd++)
        for (int64_t kh = 0; kh < g->k[1]; kh++)
            for (int64_t kw = 0; kw < g->k[2]; kw++) {
                int64_t r = (kd * g->k[1] + kh) * g->k[2] + kw;
                nn_load(c->cols->dtype, ampc_data_ptr(c->cols), (p * kk + r) * l, 1, l, row);
                for (int64_t zd = 0; zd < g->od; zd++) {
                    int64_t id = zd * g->s[0] - g->p[0] + kd * g->dl[0];
                    if (id < 0 || id >= g->d) continue;
                    for (int64_t zh = 0; zh < g->oh; zh++) {
                        int64_t ih = zh * g->s[1] - g->p[1] + kh * g->dl[1];
                        if (ih < 0 || ih >= g->h) continue;
                        const double *rr = row + (zd * g->oh + zh) * g->ow;
                        double *dst = acc + (id * g->h + ih) * g->w;
                        for (int64_t zw = 0; zw < g->ow; zw++) {
                            int64_t iw = zw * g->s[2] - g->p[2] + kw * g->dl[2];
                            if (iw >= 0 && iw < g->w) dst[iw] += rr[zw];
                        }
                    }
                }
            }
    nn_store(c->x->dtype, ampc_data_ptr(c->x), p * vol, 1, vol, acc);
}

static ampc_status cpu_col2vol(ampc_op op, const ampc_vol2col_args *a) {
    col2vol_ctx c = {.g = geom_of(a->out, a), .cols = a->in, .x = a->out};
    int64_t kk = c.g.k[0] * c.g.k[1] * c.g.k[2], l = c.g.od * c.g.oh * c.g.ow;
    return nn_run_tasks(op, c.g.planes, vol_threads(c.g.planes * kk * l), c.g.d * c.g.h * c.g.w + l, col2vol_task,
                        &c);
}

static ampc_status cpu_vol_cols(ampc_op op, const ampc_vol2col_args *a) {
    return op == AMPC_OP_VOL2COL ? cpu_vol2col(a) : cpu_col2vol(op, a);
}

void ampc_cpu_register_nn_vol2col(void) {
    ampc_register_vol2col(AMPC_CPU, cpu_vol_cols);
}
