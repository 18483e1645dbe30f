/* ops.h: the math frontends of the C core, the functions the binding layer calls.
 *
 * Each returns a new reference (NULL with ampc_set_error on failure) or a status. A frontend
 * checks its arguments (naming the op and the offending values), applies the shape rule
 * (broadcasting, reduction dims) and the dtype rule (PyTorch promotion), allocates outputs on the
 * inputs' device and goes through ampc_dispatch. All inputs must be on one device; mixing
 * devices fails like PyTorch ("Expected all tensors to be on the same device, ..."). */
#ifndef AMPC_OPS_H
#define AMPC_OPS_H

#include "dispatch.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- elementwise (elementwise.c) ---- */
/* Unary math; integer inputs of float-only ops (exp, sqrt, ...) are promoted to the default
 * float dtype as PyTorch does. */
ampc_tensor *ampc_unary(ampc_op op, const ampc_tensor *a);
ampc_tensor *ampc_gelu(const ampc_tensor *a, bool tanh_approximation);
ampc_tensor *ampc_softplus(const ampc_tensor *a, double beta, double threshold);
ampc_tensor *ampc_clamp(const ampc_tensor *a, ampc_scalar min, ampc_scalar max); /* NONE = open */
/* Binary with broadcasting and result_type promotion; `alpha` only for ADD/SUB (NONE = 1). */
ampc_tensor *ampc_binary(ampc_op op, const ampc_tensor *a, const ampc_tensor *b, ampc_scalar alpha);
/* In-place variant: a op= b; the result dtype must cast to a's dtype (PyTorch's can_cast rule:
 * "result type Float can't be cast to the desired output type Long"). */
ampc_status ampc_binary_(ampc_op op, ampc_tensor *a, const ampc_tensor *b, ampc_scalar alpha);
ampc_status ampc_unary_(ampc_op op, ampc_tensor *a);
ampc_tensor *ampc_where(const ampc_tensor *cond, const ampc_tensor *a, const ampc_tensor *b);
/* Elementwise into a given output: out = op(ins...) (used by in-place and `out=` paths). */
ampc_status ampc_elementwise_into(ampc_op op, ampc_tensor *out, int n_in, const ampc_tensor **ins,
                                  const ampc_scalar *scalars, int n_scalars);

/* ---- reductions (reduce.c) ----
 * dims: n_dims entries, possibly negative; n_dims == 0 reduces over all dims. `dtype`
 * AMPC_DTYPE_UNDEFINED keeps PyTorch's default (sum of ints -> int64, mean needs floating). */
ampc_tensor *ampc_reduce(ampc_op op, const ampc_tensor *a, int n_dims, const int64_t *dims,
                         bool keepdim, ampc_dtype dtype);
ampc_tensor *ampc_var(const ampc_tensor *a, int n_dims, const int64_t *dims, double correction,
                      bool keepdim, bool take_sqrt);
ampc_tensor *ampc_norm(const ampc_tensor *a, double p, int n_dims, const int64_t *dims, bool keepdim);
/* max/min along one dim: values and int64 indices (both new references). */
ampc_status ampc_max_min_dim(ampc_op op, const ampc_tensor *a, int64_t dim, bool keepdim,
                             ampc_tensor **values, ampc_tensor **indices);
/* argmax/argmin; has_dim false flattens. */
ampc_tensor *ampc_arg_reduce(ampc_op op, const ampc_tensor *a, bool has_dim, int64_t dim, bool keepdim);
ampc_tensor *ampc_cumsum(const ampc_tensor *a, int64_t dim, ampc_dtype dtype);

/* ---- matrix work (linalg.c) ---- */
ampc_tensor *ampc_mm(const ampc_tensor *a, const ampc_tensor *b);       /* (n,k)@(k,m) */
ampc_tensor *ampc_bmm(const ampc_tensor *a, const ampc_tensor *b);      /* (B,n,k)@(B,k,m) */
ampc_tensor *ampc_matmul(const ampc_tensor *a, const ampc_tensor *b);   /* numpy matmul rules */
/* beta * c + alpha * (a @ b), c broadcast to (n, m) */
ampc_tensor *ampc_addmm(const ampc_tensor *c, const ampc_tensor *a, const ampc_tensor *b,
                        double beta, double alpha);
ampc_tensor *ampc_baddbmm(const ampc_tensor *c, const ampc_tensor *a, const ampc_tensor *b,
                          double beta, double alpha);

/* ---- indexing and joining (index.c) ---- */
ampc_tensor *ampc_index_select(const ampc_tensor *a, int64_t dim, const ampc_tensor *index);
ampc_tensor *ampc_gather(const ampc_tensor *a, int64_t dim, const ampc_tensor *index);
ampc_tensor *ampc_scatter_add(const ampc_tensor *a, int64_t dim, const ampc_tensor *index,
                              const ampc_tensor *src);
ampc_tensor *ampc_index_add(const ampc_tensor *a, int64_t dim, const ampc_tensor *index,
                            const ampc_tensor *src, double alpha);
ampc_tensor *ampc_masked_fill(const ampc_tensor *a, const ampc_tensor *mask, ampc_scalar value);
ampc_status ampc_masked_fill_(ampc_tensor *a, const ampc_tensor *mask, ampc_scalar value);
ampc_tensor *ampc_nonzero(const ampc_tensor *a); /* (n, ndim) int64 */
ampc_tensor *ampc_cat(int n, const ampc_tensor *const *ts, int64_t dim);
ampc_tensor *ampc_stack(int n, const ampc_tensor *const *ts, int64_t dim);
/* Advanced indexing: a[indices...] where each entry is an int64 or bool tensor or NULL (a full
 * slice). Shapes follow NumPy's rules. */
ampc_tensor *ampc_index(const ampc_tensor *a, int n_idx, const ampc_tensor *const *indices);
ampc_status ampc_index_put_(ampc_tensor *a, int n_idx, const ampc_tensor *const *indices,
                            const ampc_tensor *values, bool accumulate);

/* ---- creation helpers that run kernels (creation.c) ---- */
ampc_tensor *ampc_arange(double start, double end, double step, ampc_dtype dtype, ampc_device dev);
ampc_tensor *ampc_linspace(double start, double end, int64_t steps, ampc_dtype dtype, ampc_device dev);
ampc_tensor *ampc_eye(int64_t n, int64_t m, ampc_dtype dtype, ampc_device dev);

/* ---- random (random.c): Philox4x32-10, one generator per device ---- */
void ampc_manual_seed(uint64_t seed);                 /* all devices */
uint64_t ampc_initial_seed(void);
/* Reserves `n` counter values of the device's generator and returns the (seed, offset) pair a
 * kernel uses, so CPU and CUDA produce the same stream for the same seed. */
void ampc_philox_reserve(ampc_device dev, uint64_t n, uint64_t *seed, uint64_t *offset);
void ampc_get_rng_state(ampc_device dev, uint64_t *seed, uint64_t *offset);
void ampc_set_rng_state(ampc_device dev, uint64_t seed, uint64_t offset);
ampc_status ampc_uniform_(ampc_tensor *t, double from, double to);
ampc_status ampc_normal_(ampc_tensor *t, double mean, double std);
ampc_status ampc_random_(ampc_tensor *t, int64_t low, int64_t high); /* [low, high) */
ampc_status ampc_bernoulli_(ampc_tensor *t, double p);
ampc_tensor *ampc_randperm(int64_t n, ampc_dtype dtype, ampc_device dev);

#ifdef __cplusplus
}
#endif
#endif
