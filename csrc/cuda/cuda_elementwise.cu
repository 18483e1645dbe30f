/* cuda_elementwise.cu: the elementwise family (UNARY, BINARY, COMPARE, TERNARY) on the GPU.
 *
 * The functors are generated from ops.def, as the CPU loops are: one per (form, storage dtype)
 * of the AMPC_EW_OP / AMPC_EW_FORM rows, calling the row's formula in core/elementwise_math.h
 * (shared with the CPU). Nothing here names an op. The frontend (core/elementwise.c) has chosen
 * the form and hands over inputs already in the compute dtype and an output in the result dtype
 * (the compute dtype, or bool for comparisons, isnan & co. and the logical ops). A NULL operand
 * is the scalar scalar_a/b; it is converted on the host exactly as the CPU kernel converts it
 * (ampc_ew_* in core/elementwise_math.h) and passed by value. The formulas use CUDA's
 * full-precision libm (never the __expf intrinsics) and wrapping integer arithmetic. One kernel
 * template runs every functor, with two paths:
 *   - float32/float16/bfloat16 operands, contiguous, pointers 16-byte aligned: 128-bit loads and
 *     stores, a pack of 16 / sizeof(T) elements per thread, a scalar operand held in a register;
 *   - everything else (strides, broadcasting, 0-dim): ampc_cuda_indexer offsets per element.
 * fp16/bf16 are widened to float, computed, and rounded once on store, as on the CPU.
 *
 * Exactness: +, -, *, /, sqrt, fmod, floor & co. are IEEE-exact on the GPU, so the arithmetic ops
 * match the CPU bit for bit; alpha's product is formed with __fmul_rn/__dmul_rn so nvcc cannot
 * fuse it into an FMA the CPU does not do. Transcendentals (exp, log, tanh, erf, pow, ...) differ
 * from glibc within CUDA's documented ulp bounds. fp16/bf16 NaN payloads may differ (the
 * hardware rounds NaN to the canonical NaN); casts (cuda_copy.cu) keep them exact.
 *
 * Integer division or remainder by zero cannot raise without a synchronisation: the element is
 * written as 0 (as the CPU kernel writes it before raising) and the device's deferred error word
 * gets AMPC_CUDA_ERR_ZERO_DIVISION, raised as "ZeroDivisionError" at the next synchronising point
 * (PyTorch's CUDA kernels return garbage instead; the CPU raises at once). */
#include <type_traits>

#include "../core/elementwise_forms.h"
#include "cuda_elementwise.cuh"

namespace {

/* ------------------------------------------------------------------ the functors, from ops.def
 * F_<form><T>::apply(x, p): the form's formula on storage type T's opmath values x[0] (and
 * x[1]) with the parameters p (ampc_ew_params_<s>). Only the (form, T) pairs of the row's DTYPES
 * exist; ew_run instantiates exactly those. */
template <typename V> struct ew_params_sel;
template <> struct ew_params_sel<float> { typedef ampc_ew_params_f type; };
template <> struct ew_params_sel<double> { typedef ampc_ew_params_d type; };
template <> struct ew_params_sel<int64_t> { typedef ampc_ew_params_i64 type; };
template <> struct ew_params_sel<int32_t> { typedef ampc_ew_params_i32 type; };
template <> struct ew_params_sel<uint8_t> { typedef ampc_ew_params_u8 type; };
template <> struct ew_params_sel<bool> { typedef ampc_ew_params_b8 type; };
template <typename V> using ew_params = typename ew_params_sel<V>::type;

#define ST_f32 float
#define ST_f16 __half
#define ST_bf16 __nv_bfloat16
#define ST_f64 double
#define ST_i64 int64_t
#define ST_i32 int32_t
#define ST_u8 uint8_t
#define ST_b8 bool

#define EW_ARITY_U 1
#define EW_ARITY_UB 1
#define EW_ARITY_B 2
#define EW_ARITY_BNC 2
#define EW_ARITY_BB 2
#define EW_BOOL_OUT_U 0
#define EW_BOOL_OUT_UB 1
#define EW_BOOL_OUT_B 0
#define EW_BOOL_OUT_BNC 0
#define EW_BOOL_OUT_BB 1
#define EW_ARGS_1 x[0], p
#define EW_ARGS_2 x[0], x[1], p
#define EW_ARGS(n) EW_ARGS_(n)
#define EW_ARGS_(n) EW_ARGS_##n

template <int FORM, typename T> struct ew_functor; /* defined for the rows' (form, dtype) pairs only */
#define EW_FUNCTOR(SUF, ID, FORM, STEM)                                                                  \
    template <> struct ew_functor<AMPC_EW_FORM_##ID, ST_##SUF> {                                         \
        typedef ampc_opmath_t<ST_##SUF> V;                                                               \
        static constexpr int arity = EW_ARITY_##FORM;                                                    \
        static constexpr bool bool_out = EW_BOOL_OUT_##FORM;                                             \
        static __device__ __forceinline__ auto apply(const V *x, const ew_params<V> &p) {                \
            return AMPC_EW_FORMULA(STEM, SUF)(EW_ARGS(EW_ARITY_##FORM));                                 \
        }                                                                                                \
    };
#define AMPC_EW_OP(id, name, kind, ac, grad, save, rule, tkernel, form, dtypes, stem, bind) dtypes(EW_FUNCTOR, id, form, stem)
#define AMPC_EW_FORM(id, of, form, dtypes, stem) dtypes(EW_FUNCTOR, id, form, stem)
#include "../core/ops.def"
#undef AMPC_EW_OP
#undef AMPC_EW_FORM

/* ------------------------------------------------------------------ kernels */

/* The tensors of one call: output, inputs (NULL: the operand is `scalar[k]`). */
template <typename T, typename OT, int NIN> struct ew_operands {
    OT *out;
    const T *in[NIN];
    ampc_opmath_t<T> scalar[NIN];
};

/* Contiguous, 16-byte-aligned operands: packs of VEC elements, then a tail of < VEC elements. */
template <int VEC, typename T, typename OT, int NIN, typename F>
__global__ void __launch_bounds__(AMPC_CUDA_THREADS)
    ew_contiguous_kernel(int64_t n, ew_operands<T, OT, NIN> ops, ew_params<ampc_opmath_t<T>> p) {
    typedef ampc_opmath_t<T> V;
    const int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    const int64_t n_packs = n / VEC;
    for (int64_t v = first; v < n_packs; v += stride) {
        V x[NIN][VEC];
#pragma unroll
        for (int k = 0; k < NIN; k++) {
            if (ops.in[k]) {
                ampc_cuda_pack<T, VEC> in = reinterpret_cast<const ampc_cuda_pack<T, VEC> *>(ops.in[k])[v];
#pragma unroll
                for (int j = 0; j < VEC; j++) x[k][j] = ampc_convert<V>(in.v[j]);
            } else {
#pragma unroll
                for (int j = 0; j < VEC; j++) x[k][j] = ops.scalar[k];
            }
        }
        ampc_cuda_pack<OT, VEC> out;
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            V xj[NIN];
#pragma unroll
            for (int k = 0; k < NIN; k++) xj[k] = x[k][j];
            out.v[j] = ampc_convert<OT>(F::apply(xj, p));
        }
        reinterpret_cast<ampc_cuda_pack<OT, VEC> *>(ops.out)[v] = out;
    }
    for (int64_t i = n_packs * VEC + first; i < n; i += stride) {
        V x[NIN];
#pragma unroll
        for (int k = 0; k < NIN; k++) x[k] = ops.in[k] ? ampc_load(ops.in[k], i) : ops.scalar[k];
        ops.out[i] = ampc_convert<OT>(F::apply(x, p));
    }
}

/* Any strides and broadcasting: operand k + 1 of the indexer is input k. */
template <typename T, typename OT, int NIN, typename F>
__global__ void __launch_bounds__(AMPC_CUDA_THREADS)
    ew_strided_kernel(ampc_cuda_indexer ix, ew_operands<T, OT, NIN> ops, ew_params<ampc_opmath_t<T>> p) {
    typedef ampc_opmath_t<T> V;
    AMPC_CUDA_KERNEL_LOOP(i, ix.numel) {
        int64_t off[NIN + 1];
        ampc_cuda_offsets<NIN + 1>(ix, i, off);
        V x[NIN];
#pragma unroll
        for (int k = 0; k < NIN; k++) x[k] = ops.in[k] ? ampc_load(ops.in[k], off[k + 1]) : ops.scalar[k];
        ops.out[off[0]] = ampc_convert<OT>(F::apply(x, p));
    }
}

/* ------------------------------------------------------------------ host side */

template <typename T> constexpr ampc_dtype dtype_of();
template <> constexpr ampc_dtype dtype_of<float>() { return AMPC_FLOAT32; }
template <> constexpr ampc_dtype dtype_of<__half>() { return AMPC_FLOAT16; }
template <> constexpr ampc_dtype dtype_of<__nv_bfloat16>() { return AMPC_BFLOAT16; }
template <> constexpr ampc_dtype dtype_of<double>() { return AMPC_FLOAT64; }
template <> constexpr ampc_dtype dtype_of<int64_t>() { return AMPC_INT64; }
template <> constexpr ampc_dtype dtype_of<int32_t>() { return AMPC_INT32; }
template <> constexpr ampc_dtype dtype_of<uint8_t>() { return AMPC_UINT8; }
template <> constexpr ampc_dtype dtype_of<bool>() { return AMPC_BOOL; }

/* One kernel call, as the host prepared it. Scalars and parameters are opmath bytes
 * (ampc_ew_scalar_as_opmath). */
struct ew_call {
    ampc_op op;
    ampc_tensor *out;
    const ampc_tensor *in[2]; /* NULL: the operand is scalar[k] */
    unsigned char scalar[2][8];
    ampc_ew_params_any params; /* the form's, in the compute dtype's opmath type */
    bool checks_divisor;       /* integer division/remainder: may write the deferred error word */
};

/* Runs functor F over the call: T the inputs' storage type, OT the output's. */
template <typename T, typename OT, typename F> static ampc_status ew_launch(const ew_call &c) {
    constexpr int NIN = F::arity;
    typedef ampc_opmath_t<T> V;
    ampc_tensor *out = c.out;
    if (out->dtype != dtype_of<OT>())
        return ampc_set_error(AMPC_E_RUNTIME, "%s: the CUDA kernel got an output of dtype %s", ampc_op_name(c.op),
                              ampc_dtype_name(out->dtype));
    int64_t n = ampc_numel(out);
    if (n == 0) return AMPC_OK;
    ampc_cuda_guard guard(out);

    constexpr int VEC = 16 / sizeof(T);
    ew_operands<T, OT, NIN> ops;
    memset(&ops, 0, sizeof ops);
    ops.out = (OT *)ampc_data_ptr(out);
    bool aligned = ampc_cuda_pack_aligned<OT, VEC>(ops.out);
    const ampc_tensor *iterated[NIN]; /* a scalar's slot iterates the output: same shape, never read */
    for (int k = 0; k < NIN; k++) {
        if (c.in[k]) {
            if (c.in[k]->dtype != dtype_of<T>() || c.in[k]->device.type != AMPC_CUDA ||
                c.in[k]->device.index != out->device.index)
                return ampc_set_error(AMPC_E_RUNTIME, "%s: the CUDA kernel expects input %d as %s on cuda:%d, got %s on %s",
                                      ampc_op_name(c.op), k, ampc_dtype_name(dtype_of<T>()), (int)out->device.index,
                                      ampc_dtype_name(c.in[k]->dtype), c.in[k]->device.type == AMPC_CUDA ? "cuda" : "cpu");
            ops.in[k] = (const T *)ampc_data_ptr(c.in[k]);
            aligned = aligned && ampc_cuda_pack_aligned<T, VEC>(ops.in[k]);
            iterated[k] = c.in[k];
        } else {
            memcpy(&ops.scalar[k], c.scalar[k], sizeof(V));
            iterated[k] = out;
        }
    }
    ew_params<V> p;
    memcpy(&p, &c.params, sizeof p);
    if (c.checks_divisor) { /* arms the runtime's check of the word at the next sync: only when needed */
        p.error_word = ampc_cuda_error_word(out->device.index);
        p.error_code = AMPC_CUDA_ERR_ZERO_DIVISION * 65536 + (int)c.op;
    }

    ampc_cuda_indexer ix;
    AMPC_TRY(ampc_cuda_indexer_init(&ix, 1, &out, NIN, iterated));
    cudaStream_t stream = ampc_cuda_stream_of(out);
    /* 128-bit packs for the dtypes training runs in; float64, integers and bool take the general
     * kernel, which is still coalesced on contiguous operands (and keeps this file's compile time down) */
    constexpr bool packed = std::is_same<T, float>::value || std::is_same<T, __half>::value ||
                            std::is_same<T, __nv_bfloat16>::value;
    if constexpr (packed) {
        if (ix.contiguous && aligned) {
            ew_contiguous_kernel<VEC, T, OT, NIN, F>
                <<<ampc_cuda_grid(n / VEC), AMPC_CUDA_THREADS, 0, stream>>>(n, ops, p);
            AMPC_CUDA_CHECK_LAUNCH();
            return AMPC_OK;
        }
    }
    ew_strided_kernel<T, OT, NIN, F><<<ampc_cuda_grid(n), AMPC_CUDA_THREADS, 0, stream>>>(ix, ops, p);
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

/* Whether form F exists for storage type T (the row's DTYPES as a bit mask). */
#define EW_BIT(SUF, ...) | (1u << AMPC_EW_DT_##SUF)

/* Runs form `form` for storage type T: a case per row whose DTYPES hold T. */
template <typename T> static ampc_status ew_run(int form, const ew_call &c) {
    constexpr unsigned bit = 1u << dtype_of<T>();
    switch (form) {
#define EW_CASE(id, dtypes)                                                                       \
    case AMPC_EW_FORM_##id:                                                                       \
        if constexpr (((0u dtypes(EW_BIT, 0)) & bit) != 0) {                                      \
            typedef ew_functor<AMPC_EW_FORM_##id, T> F;                                           \
            return ew_launch<T, typename std::conditional<F::bool_out, bool, T>::type, F>(c);     \
        }                                                                                         \
        break;
#define AMPC_EW_OP(id, name, kind, ac, grad, save, rule, tkernel, form, dtypes, stem, bind) EW_CASE(id, dtypes)
#define AMPC_EW_FORM(id, of, form, dtypes, stem) EW_CASE(id, dtypes)
#include "../core/ops.def"
#undef AMPC_EW_OP
#undef AMPC_EW_FORM
    default: break;
    }
    return ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "%s: the CUDA backend has no %s loop for dtype %s", ampc_op_name(c.op),
                          ampc_ew_form_name((ampc_ew_form)form), ampc_dtype_name(dtype_of<T>()));
}

static ampc_status ew_run_dtype(int form, ampc_dtype dt, const ew_call &c) {
    AMPC_CUDA_SWITCH_ALL(dt, ampc_op_name(c.op), return ew_run<scalar_t>(form, c););
}

/* ------------------------------------------------------------------ the kernel */

static ampc_status cuda_elementwise_kernel(ampc_op op, const ampc_elementwise_args *a) {
    ampc_ew_form form = (ampc_ew_form)a->form;
    bool unary = ampc_ew_form_is_unary(form);
    const ampc_tensor *ta = a->a, *tb = unary ? NULL : a->b;
    if (!ta && !tb) return ampc_set_error(AMPC_E_RUNTIME, "%s: both operands are scalars", ampc_op_name(op));
    ampc_dtype dt = ta ? ta->dtype : tb->dtype;
    ew_call c;
    memset(&c, 0, sizeof c);
    c.op = op;
    c.out = a->out;
    c.in[0] = ta;
    c.in[1] = tb;
    ampc_ew_fill_params(dt, a, NULL, 0, &c.params); /* ew_launch arms the error word when it is needed */
    if (!unary) {
        if (!ta) ampc_ew_scalar_as_opmath(dt, a->scalar_a, c.scalar[0]);
        if (!tb) ampc_ew_scalar_as_opmath(dt, a->scalar_b, c.scalar[1]);
    }
    c.checks_divisor = !ampc_dtype_is_floating(dt) && ampc_ew_form_checks_divisor(form);
    return ew_run_dtype((int)form, dt, c);
}

/* ------------------------------------------------------------------ where
 * A select only moves bytes: one kernel per item size, W the unsigned integer of that size. */
template <typename W>
__global__ void __launch_bounds__(AMPC_CUDA_THREADS)
    where_kernel(ampc_cuda_indexer ix, W *out, const bool *cond, const W *x, const W *y, W x_scalar, W y_scalar) {
    AMPC_CUDA_KERNEL_LOOP(i, ix.numel) {
        int64_t off[4];
        ampc_cuda_offsets<4>(ix, i, off);
        W v;
        if (cond[off[1]])
            v = x ? x[off[2]] : x_scalar;
        else
            v = y ? y[off[3]] : y_scalar;
        out[off[0]] = v;
    }
}

template <typename W> static ampc_status where_launch(const ampc_where_args *a) {
    ampc_tensor *out = a->out;
    const ampc_tensor *cond = a->cond, *x = a->x, *y = a->y;
    int64_t n = ampc_numel(out);
    if (n == 0) return AMPC_OK;
    ampc_cuda_guard guard(out);
    unsigned char xs[8] = {0}, ys[8] = {0};
    if (!x) ampc_ew_scalar_as_element(out->dtype, a->x_scalar, xs);
    if (!y) ampc_ew_scalar_as_element(out->dtype, a->y_scalar, ys);
    W x_scalar, y_scalar;
    memcpy(&x_scalar, xs, sizeof x_scalar);
    memcpy(&y_scalar, ys, sizeof y_scalar);
    const ampc_tensor *iterated[3] = {cond, x ? x : out, y ? y : out};
    ampc_cuda_indexer ix;
    AMPC_TRY(ampc_cuda_indexer_init(&ix, 1, &out, 3, iterated));
    where_kernel<W><<<ampc_cuda_grid(n), AMPC_CUDA_THREADS, 0, ampc_cuda_stream_of(out)>>>(
        ix, (W *)ampc_data_ptr(out), (const bool *)ampc_data_ptr(cond), x ? (const W *)ampc_data_ptr(x) : nullptr,
        y ? (const W *)ampc_data_ptr(y) : nullptr, x_scalar, y_scalar);
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

static ampc_status cuda_where(ampc_op op, const ampc_where_args *a) {
    ampc_tensor *out = a->out;
    const ampc_tensor *cond = a->cond;
    if (!cond || cond->dtype != AMPC_BOOL)
        return ampc_set_error(AMPC_E_RUNTIME, "where: the CUDA kernel needs a bool condition tensor");
    const ampc_tensor *branch[2] = {a->x, a->y};
    for (int k = 0; k < 2; k++)
        if (branch[k] && branch[k]->dtype != out->dtype)
            return ampc_set_error(AMPC_E_RUNTIME, "where: the CUDA kernel got operand %d of dtype %s for an output of %s",
                                  k + 1, ampc_dtype_name(branch[k]->dtype), ampc_dtype_name(out->dtype));
    AMPC_CUDA_SWITCH_BITS(out->dtype, "where", return where_launch<bits_t>(a););
}

/* ------------------------------------------------------------------ registration */

} // namespace

extern "C" void ampc_cuda_register_elementwise(void) {
    ampc_register_elementwise(AMPC_CUDA, cuda_elementwise_kernel);
    ampc_register_where(AMPC_CUDA, cuda_where);
}
