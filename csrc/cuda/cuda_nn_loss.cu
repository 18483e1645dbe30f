/* cuda_nn_loss.cu: the elementwise losses on CUDA (mse, l1, smooth_l1, binary_cross_entropy,
 * binary_cross_entropy_with_logits), forward and backward. The CPU twin is cpu/cpu_nn_loss.c; the
 * per-element formulas are core/loss_math.h's, shared with it.
 *
 * Operands arrive contiguous and of one shape (the frontend broadcasts), each in its own dtype.
 * One grid-stride kernel computes the loss per element and either stores it (reduction none) or
 * sums its share per block; a one-block second stage adds the block sums in order and writes the
 * mean or sum (cuda_nn_rows.cuh), so a reduced loss is the same from run to run. Arithmetic is
 * float for fp32/fp16/bf16 operands of one dtype, double for fp64 and for mixed dtypes. A BCE
 * input outside [0, 1] is reported through the device error word (raised at the next
 * synchronisation; the CPU raises at once). */
#include "../core/kernel_args.h"
#include "../core/loss_math.h"
#include "cuda_nn_rows.cuh"

struct loss_params {
    const void *x, *t, *w, *pw; /* input, target, weight?, pos_weight? */
    const void *g;              /* backward: the loss grad (0-dim when reduced) */
    void *out;                  /* forward: the loss; backward: grad input? */
    void *gt;                   /* backward: grad target? */
    int x_dt, t_dt, w_dt, pw_dt, g_dt, out_dt, gt_dt;
    int kind, reduction, op;
    double beta;
    int64_t n;
    int *err;
};

__device__ __forceinline__ float loss_value(int kind, float x, float t, float w, float pw, bool has_pw, float beta) {
    return ampc_loss_value_f(kind, x, t, w, pw, has_pw, beta);
}
__device__ __forceinline__ double loss_value(int kind, double x, double t, double w, double pw, bool has_pw, double beta) {
    return ampc_loss_value_d(kind, x, t, w, pw, has_pw, beta);
}
__device__ __forceinline__ void loss_grad(int kind, float x, float t, float w, float pw, bool has_pw, float beta, float *dx,
                                          float *dt) {
    ampc_loss_grad_f(kind, x, t, w, pw, has_pw, beta, dx, dt);
}
__device__ __forceinline__ void loss_grad(int kind, double x, double t, double w, double pw, bool has_pw, double beta,
                                          double *dx, double *dt) {
    ampc_loss_grad_d(kind, x, t, w, pw, has_pw, beta, dx, dt);
}

/* M: the storage type of every operand, or nn_dyn (each its own dtype); A: the arithmetic type. */
template <typename M, typename A> struct loss_operands {
    A x, t, w, pw;
    __device__ __forceinline__ loss_operands(const loss_params &p, int64_t i) {
        x = nn_io<M>::template load<A>(p.x, p.x_dt, i);
        t = nn_io<M>::template load<A>(p.t, p.t_dt, i);
        w = p.w ? nn_io<M>::template load<A>(p.w, p.w_dt, i) : (A)1;
        pw = p.pw ? nn_io<M>::template load<A>(p.pw, p.pw_dt, i) : (A)1;
    }
};

/* Forward: reduction none stores each loss; otherwise block b writes its sum to partials[b]
 * (a grid of nn_sum_blocks(n) blocks of NN_SUM_THREADS, fixed by n). */
template <typename M, typename A>
__global__ void __launch_bounds__(NN_SUM_THREADS) loss_forward_kernel(loss_params p, A *partials) {
    __shared__ A smem[32];
    const A beta = (A)p.beta;
    A acc = 0;
    AMPC_CUDA_KERNEL_LOOP(i, p.n) {
        loss_operands<M, A> o(p, i);
        if (p.kind == AMPC_LOSS_BCE && !(o.x >= (A)0 && o.x <= (A)1)) nn_report(p.err, AMPC_CUDA_ERR_VALUE, p.op);
        A v = loss_value(p.kind, o.x, o.t, o.w, o.pw, p.pw != NULL, beta);
        if (p.reduction == 0)
            nn_io<M>::template store<A>(p.out, p.out_dt, i, v);
        else
            acc += v;
    }
    if (p.reduction != 0) {
        acc = ampc_block_sum(acc, smem);
        if (threadIdx.x == 0) partials[blockIdx.x] = acc;
    }
}

/* Backward: grad input = dx * g and grad target = dt * g, g the element's loss grad or, reduced,
 * the 0-dim grad (/ n for mean). */
template <typename M, typename A>
__global__ void __launch_bounds__(AMPC_CUDA_THREADS) loss_backward_kernel(loss_params p) {
    const A beta = (A)p.beta;
    A gscale = 0;
    if (p.reduction != 0) {
        gscale = ampc_load_dyn<A>(p.g, p.g_dt, 0);
        if (p.reduction == 1) gscale /= (A)p.n;
    }
    AMPC_CUDA_KERNEL_LOOP(i, p.n) {
        loss_operands<M, A> o(p, i);
        A dx, dt, g = p.reduction != 0 ? gscale : nn_io<M>::template load<A>(p.g, p.g_dt, i);
        loss_grad(p.kind, o.x, o.t, o.w, o.pw, p.pw != NULL, beta, &dx, &dt);
        if (p.out) nn_io<M>::template store<A>(p.out, p.out_dt, i, dx * g);
        if (p.gt) nn_io<M>::template store<A>(p.gt, p.gt_dt, i, dt * g);
    }
}

template <typename M, typename A> static ampc_status loss_launch(const loss_params &p, bool backward, int dev,
                                                                 cudaStream_t stream) {
    if (backward) {
        if (p.n == 0) return AMPC_OK;
        loss_backward_kernel<M, A><<<ampc_cuda_blocks(p.n), AMPC_CUDA_THREADS, 0, stream>>>(p);
        AMPC_CUDA_CHECK_LAUNCH();
        return AMPC_OK;
    }
    if (p.reduction == 0) {
        if (p.n == 0) return AMPC_OK;
        loss_forward_kernel<M, A><<<ampc_cuda_blocks(p.n), NN_SUM_THREADS, 0, stream>>>(p, NULL);
        AMPC_CUDA_CHECK_LAUNCH();
        return AMPC_OK;
    }
    ampc_cuda_scratch scratch(dev, sizeof(A) * NN_SUM_MAX_BLOCKS);
    if (!scratch.ok()) return ampc_last_status();
    unsigned blocks = nn_sum_blocks(p.n);
    loss_forward_kernel<M, A><<<blocks, NN_SUM_THREADS, 0, stream>>>(p, scratch.as<A>());
    AMPC_CUDA_CHECK_LAUNCH();
    nn_finish_args f;
    memset(&f, 0, sizeof f);
    f.loss = p.out, f.loss_dt = p.out_dt, f.reduction = p.reduction, f.count = (double)p.n;
    nn_finish_kernel<A><<<1, NN_SUM_THREADS, 0, stream>>>(scratch.as<A>(), (const A *)NULL, (int)blocks, f);
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

static void set_operand(const ampc_tensor *t, const void **ptr, int *dt) {
    *ptr = t ? ampc_data_ptr(t) : NULL;
    *dt = t ? (int)t->dtype : -1;
}

/* Runs a loss or its backward on p, whose operands are set: typed loads when every operand
 * present has one storage type (the common case), run-time dtypes otherwise. */
static ampc_status loss_run(loss_params &p, ampc_op op, bool backward, const ampc_tensor *x) {
    p.kind = (int)(op - (backward ? AMPC_OP_MSE_LOSS_BACKWARD : AMPC_OP_MSE_LOSS));
    p.op = (int)op;
    p.n = ampc_numel(x);
    if (op == AMPC_OP_BCE_LOSS) p.err = ampc_cuda_error_word((int)x->device.index); /* only BCE checks data */
    if (!p.out && !p.gt) return AMPC_OK;
    int dts[7] = {p.x_dt, p.t_dt, p.w_dt, p.pw_dt, p.g_dt, p.out_dt, p.gt_dt};
    bool same = true;
    for (int i = 0; i < 7; i++) same = same && (dts[i] < 0 || dts[i] == p.x_dt);
    int dev = (int)x->device.index;
    cudaStream_t stream = ampc_cuda_stream_of(x);
    if (same) {
        switch (p.x_dt) {
        case AMPC_FLOAT32: return loss_launch<float, float>(p, backward, dev, stream);
        case AMPC_FLOAT64: return loss_launch<double, double>(p, backward, dev, stream);
        case AMPC_FLOAT16: return loss_launch<__half, float>(p, backward, dev, stream);
        case AMPC_BFLOAT16: return loss_launch<__nv_bfloat16, float>(p, backward, dev, stream);
        default: break;
        }
    }
    return loss_launch<nn_dyn, double>(p, backward, dev, stream);
}

static void set_operands(loss_params *p, const ampc_tensor *x, const ampc_tensor *t, const ampc_tensor *w,
                         const ampc_tensor *pw, ampc_reduction reduction, double beta) {
    memset(p, 0, sizeof *p);
    set_operand(x, &p->x, &p->x_dt);
    set_operand(t, &p->t, &p->t_dt);
    set_operand(w, &p->w, &p->w_dt);
    set_operand(pw, &p->pw, &p->pw_dt);
    p->reduction = (int)reduction, p->beta = beta;
}

/* MSE_LOSS ... BCE_WITH_LOGITS_LOSS (schema pointwise_loss, core/ops.def). */
static ampc_status cuda_loss(ampc_op op, const ampc_pointwise_loss_args *a) {
    ampc_cuda_guard guard(a->input);
    loss_params p;
    set_operands(&p, a->input, a->target, a->weight, a->pos_weight, a->reduction, a->beta);
    set_operand(NULL, &p.g, &p.g_dt);
    set_operand(a->loss, (const void **)&p.out, &p.out_dt);
    set_operand(NULL, (const void **)&p.gt, &p.gt_dt);
    return loss_run(p, op, false, a->input);
}

/* Their backward (schema pointwise_loss_backward). */
static ampc_status cuda_loss_backward(ampc_op op, const ampc_pointwise_loss_backward_args *a) {
    ampc_cuda_guard guard(a->input);
    loss_params p;
    set_operands(&p, a->input, a->target, a->weight, a->pos_weight, a->reduction, a->beta);
    set_operand(a->grad_loss, &p.g, &p.g_dt);
    set_operand(a->grad_input, (const void **)&p.out, &p.out_dt);
    set_operand(a->grad_target, (const void **)&p.gt, &p.gt_dt);
    return loss_run(p, op, true, a->input);
}

extern "C" void ampc_cuda_register_nn_loss(void) {
    ampc_register_pointwise_loss(AMPC_CUDA, cuda_loss);
    ampc_register_pointwise_loss_backward(AMPC_CUDA, cuda_loss_backward);
}
