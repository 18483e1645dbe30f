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
/* An elementwise op with two float parameters (the BIND_PARAMS2 rows of ops.def, and the fused
 * backward rows their gradients use): unary rows take a only, binary rows a and b. */
ampc_tensor *ampc_elementwise_params(ampc_op op, const ampc_tensor *a, const ampc_tensor *b, ampc_scalar p0,
                                     ampc_scalar p1);
ampc_status ampc_elementwise_params_(ampc_op op, ampc_tensor *a, ampc_scalar p0, ampc_scalar p1);
ampc_tensor *ampc_clamp(const ampc_tensor *a, ampc_scalar min, ampc_scalar max); /* NONE = open */
ampc_tensor *ampc_round(const ampc_tensor *a, int64_t decimals); /* round half to even */
ampc_status ampc_round_(ampc_tensor *a, int64_t decimals);
/* clamp with tensor bounds (NULL = open), and in place */
ampc_tensor *ampc_clamp_tensors(const ampc_tensor *a, const ampc_tensor *min, const ampc_tensor *max);
ampc_status ampc_clamp_tensors_(ampc_tensor *a, const ampc_tensor *min, const ampc_tensor *max);
ampc_tensor *ampc_bitwise_not(const ampc_tensor *a); /* ~x: bool and integer tensors */
/* Binary with broadcasting and result_type promotion; `alpha` only for ADD/SUB (NONE = 1). */
ampc_tensor *ampc_binary(ampc_op op, const ampc_tensor *a, const ampc_tensor *b, ampc_scalar alpha);
/* In-place variant: a op= b; the result dtype must cast to a's dtype (PyTorch's can_cast rule:
 * "result type Float can't be cast to the desired output type Long"). */
ampc_status ampc_binary_(ampc_op op, ampc_tensor *a, const ampc_tensor *b, ampc_scalar alpha);
ampc_status ampc_unary_(ampc_op op, ampc_tensor *a);
ampc_status ampc_clamp_(ampc_tensor *a, ampc_scalar min, ampc_scalar max);
/* div with a rounding mode: 0 None (true division), 1 'trunc', 2 'floor' (floor_divide, //). */
ampc_tensor *ampc_div_mode(const ampc_tensor *a, const ampc_tensor *b, int rounding_mode);
ampc_status ampc_div_mode_(ampc_tensor *a, const ampc_tensor *b, int rounding_mode);
ampc_tensor *ampc_where(const ampc_tensor *cond, const ampc_tensor *a, const ampc_tensor *b);
/* Elementwise into a given output: out = op(ins...) (used by in-place and `out=` paths).
 * scalars: the op's parameters in ops.def order (alpha; min, max; beta, threshold); DIV's
 * rounding mode, AMPC_OP_GELU's approximation and ROUND's decimals are an INT scalars[0]. */
ampc_status ampc_elementwise_into(ampc_op op, ampc_tensor *out, int n_in, const ampc_tensor **ins,
                                  const ampc_scalar *scalars, int n_scalars);

/* ---- reductions (reduce.c) ----
 * dims: n_dims entries, possibly negative; n_dims == 0 reduces over all dims. `dtype`
 * AMPC_DTYPE_UNDEFINED keeps PyTorch's default (sum of ints -> int64, mean needs floating).
 * ampc_reduce takes SUM, MEAN, PROD, AMAX, AMIN, ANY, ALL, LOGSUMEXP, and MAX_DIM/MIN_DIM for
 * max()/min() without indices (amax/amin under PyTorch's names and errors). */
ampc_tensor *ampc_reduce(ampc_op op, const ampc_tensor *a, int n_dims, const int64_t *dims,
                         bool keepdim, ampc_dtype dtype);
ampc_tensor *ampc_var(const ampc_tensor *a, int n_dims, const int64_t *dims, double correction,
                      bool keepdim, bool take_sqrt);
ampc_tensor *ampc_norm(const ampc_tensor *a, double p, int n_dims, const int64_t *dims, bool keepdim);
/* linalg.vector_norm: ampc_norm with the result in `dtype` (a widening of a's dtype, or UNDEFINED). */
ampc_tensor *ampc_vector_norm(const ampc_tensor *a, double p, int n_dims, const int64_t *dims, bool keepdim,
                              ampc_dtype dtype);
/* max/min along one dim: values and int64 indices (both new references). */
ampc_status ampc_max_min_dim(ampc_op op, const ampc_tensor *a, int64_t dim, bool keepdim,
                             ampc_tensor **values, ampc_tensor **indices);
/* argmax/argmin; has_dim false flattens. */
ampc_tensor *ampc_arg_reduce(ampc_op op, const ampc_tensor *a, bool has_dim, int64_t dim, bool keepdim);
ampc_tensor *ampc_cumsum(const ampc_tensor *a, int64_t dim, ampc_dtype dtype);
/* issue 12's scans (reduce_scan.c): cumprod (dtype UNDEFINED: int64 for integer inputs),
 * logcumsumexp (floating inputs), cummax/cummin (op: values and int64 indices, new references) */
ampc_tensor *ampc_cumprod(const ampc_tensor *a, int64_t dim, ampc_dtype dtype);
ampc_tensor *ampc_logcumsumexp(const ampc_tensor *a, int64_t dim);
ampc_status ampc_cummax_cummin(ampc_op op, const ampc_tensor *a, int64_t dim, ampc_tensor **values,
                               ampc_tensor **indices);

/* ---- matrix work (linalg.c) ---- */
ampc_tensor *ampc_mm(const ampc_tensor *a, const ampc_tensor *b);       /* (n,k)@(k,m) */
ampc_tensor *ampc_bmm(const ampc_tensor *a, const ampc_tensor *b);      /* (B,n,k)@(B,k,m) */
ampc_tensor *ampc_matmul(const ampc_tensor *a, const ampc_tensor *b);   /* numpy matmul rules */
/* beta * c + alpha * (a @ b), c broadcast to (n, m) */
ampc_tensor *ampc_addmm(const ampc_tensor *c, const ampc_tensor *a, const ampc_tensor *b,
                        double beta, double alpha);
ampc_tensor *ampc_baddbmm(const ampc_tensor *c, const ampc_tensor *a, const ampc_tensor *b,
                          double beta, double alpha);
ampc_tensor *ampc_dot(const ampc_tensor *a, const ampc_tensor *b);      /* (k).(k) -> 0-dim */
ampc_tensor *ampc_mv(const ampc_tensor *a, const ampc_tensor *v);       /* (n,k)@(k) -> (n) */
/* Checks a GEMM kernel's arguments against the GEMM row of ops.def (every device's kernel calls it). */
struct ampc_gemm_args;
struct ampc_masked_fill_args;
/* Checks a MASKED_FILL kernel's typed arguments against its row (index.c). */
ampc_status ampc_masked_fill_check(ampc_op op, const struct ampc_masked_fill_args *p);
ampc_status ampc_gemm_check_args(const struct ampc_gemm_args *p);
/* einsum of one or two operands ("ij,jk->ik", "bhqd,bhkd->bhqk", "i,i->", "...ij,...jk",
 * "ii->i"): diagonals and sums by views and one batched GEMM (einsum.c). */
ampc_tensor *ampc_einsum(const char *equation, int n_operands, const ampc_tensor *const *operands);

/* ---- indexing and joining (index.c) ---- */
ampc_tensor *ampc_index_select(const ampc_tensor *a, int64_t dim, const ampc_tensor *index);
ampc_tensor *ampc_gather(const ampc_tensor *a, int64_t dim, const ampc_tensor *index);
ampc_tensor *ampc_scatter_add(const ampc_tensor *a, int64_t dim, const ampc_tensor *index,
                              const ampc_tensor *src);
ampc_status ampc_scatter_add_(ampc_tensor *a, int64_t dim, const ampc_tensor *index, const ampc_tensor *src);
ampc_tensor *ampc_index_add(const ampc_tensor *a, int64_t dim, const ampc_tensor *index,
                            const ampc_tensor *src, double alpha);
ampc_status ampc_index_add_(ampc_tensor *a, int64_t dim, const ampc_tensor *index, const ampc_tensor *src,
                            double alpha);
ampc_tensor *ampc_masked_fill(const ampc_tensor *a, const ampc_tensor *mask, ampc_scalar value);
ampc_status ampc_masked_fill_(ampc_tensor *a, const ampc_tensor *mask, ampc_scalar value);
ampc_tensor *ampc_nonzero(const ampc_tensor *a); /* (n, ndim) int64 */
ampc_tensor *ampc_cat(int n, const ampc_tensor *const *ts, int64_t dim);
ampc_tensor *ampc_stack(int n, const ampc_tensor *const *ts, int64_t dim);
/* Advanced indexing: a[indices...] where each entry is an int64/int32 index tensor, a bool (or
 * uint8) mask covering as many dims as it has, or NULL (a full slice). Index tensors broadcast
 * together; NumPy's rule places their dims (first when separated by a slice). At most 5 index
 * tensors after masks expand (a mask over dims that can be merged into one counts once). */
ampc_tensor *ampc_index(const ampc_tensor *a, int n_idx, const ampc_tensor *const *indices);
ampc_status ampc_index_put_(ampc_tensor *a, int n_idx, const ampc_tensor *const *indices,
                            const ampc_tensor *values, bool accumulate);
ampc_tensor *ampc_index_put(const ampc_tensor *a, int n_idx, const ampc_tensor *const *indices,
                            const ampc_tensor *values, bool accumulate); /* out-of-place */
/* Views of `a` along `dim` (torch.split / split_with_sizes / chunk / unbind): a malloc'd array
 * of *n new references, released with ampc_tensor_list_free; NULL on error. */
ampc_tensor **ampc_split(const ampc_tensor *a, int64_t split_size, int64_t dim, int64_t *n);
ampc_tensor **ampc_split_with_sizes(const ampc_tensor *a, int n_sizes, const int64_t *sizes, int64_t dim,
                                    int64_t *n);
ampc_tensor **ampc_chunk(const ampc_tensor *a, int64_t chunks, int64_t dim, int64_t *n);
ampc_tensor **ampc_unbind(const ampc_tensor *a, int64_t dim, int64_t *n);
void ampc_tensor_list_free(ampc_tensor **list, int64_t n);

/* ---- shape and index ops (issue 12): shape_ops.c, shape_views.c, index_ops.c ---- */
ampc_tensor *ampc_tril(const ampc_tensor *a, int64_t diagonal, bool upper); /* upper: triu */
ampc_status ampc_tril_(ampc_tensor *a, int64_t diagonal, bool upper);
ampc_tensor *ampc_flip(const ampc_tensor *a, int n, const int64_t *dims);
/* n_dims 0: the flattened tensor rolled by shifts[0] (n_shifts must be 1) */
ampc_tensor *ampc_roll(const ampc_tensor *a, int n_shifts, const int64_t *shifts, int n_dims, const int64_t *dims);
ampc_tensor *ampc_rot90(const ampc_tensor *a, int64_t k, int n_dims, const int64_t *dims);
ampc_tensor *ampc_repeat(const ampc_tensor *a, int n, const int64_t *reps);
ampc_tensor *ampc_tile(const ampc_tensor *a, int n, const int64_t *reps);
/* a NULL: the 1-arg form (the index of repeats). repeats NULL: `repeat` times each. has_dim
 * false: over the flattened input. output_size < 0: not given. */
ampc_tensor *ampc_repeat_interleave(const ampc_tensor *a, const ampc_tensor *repeats, int64_t repeat, bool has_dim,
                                    int64_t dim, int64_t output_size);
ampc_tensor *ampc_tril_indices(int64_t row, int64_t col, int64_t offset, bool upper, ampc_dtype dtype,
                               ampc_device dev);
ampc_tensor *ampc_diagonal(const ampc_tensor *a, int64_t offset, int64_t dim1, int64_t dim2); /* a view */
ampc_tensor *ampc_unfold(const ampc_tensor *a, int64_t dim, int64_t size, int64_t step);      /* a view */
/* offset < 0: the input's storage offset. Checked against the storage's size. */
ampc_tensor *ampc_as_strided_view(const ampc_tensor *a, int nd, const int64_t *shape, const int64_t *strides,
                                  int64_t offset);
ampc_status ampc_as_strided_(ampc_tensor *a, int nd, const int64_t *shape, const int64_t *strides, int64_t offset);
ampc_tensor *ampc_diag(const ampc_tensor *a, int64_t diagonal);
ampc_tensor *ampc_diag_embed(const ampc_tensor *a, int64_t offset, int64_t dim1, int64_t dim2);
ampc_tensor *ampc_diagflat(const ampc_tensor *a, int64_t offset);
ampc_tensor *ampc_diagonal_scatter(const ampc_tensor *a, const ampc_tensor *src, int64_t offset, int64_t dim1,
                                   int64_t dim2);
ampc_tensor *ampc_select_scatter(const ampc_tensor *a, const ampc_tensor *src, int64_t dim, int64_t index);
ampc_tensor *ampc_slice_scatter(const ampc_tensor *a, const ampc_tensor *src, int64_t dim, int64_t start, int64_t end,
                                int64_t step);
ampc_status ampc_fill_diagonal_(ampc_tensor *a, ampc_scalar value, bool wrap);
/* src NULL: scatter the value */
ampc_tensor *ampc_scatter(const ampc_tensor *a, int64_t dim, const ampc_tensor *index, const ampc_tensor *src,
                          ampc_scalar value);
ampc_status ampc_scatter_(ampc_tensor *a, int64_t dim, const ampc_tensor *index, const ampc_tensor *src,
                          ampc_scalar value);
ampc_tensor *ampc_index_copy(const ampc_tensor *a, int64_t dim, const ampc_tensor *index, const ampc_tensor *source);
ampc_status ampc_index_copy_(ampc_tensor *a, int64_t dim, const ampc_tensor *index, const ampc_tensor *source);
ampc_tensor *ampc_index_fill(const ampc_tensor *a, int64_t dim, const ampc_tensor *index, ampc_scalar value);
ampc_status ampc_index_fill_(ampc_tensor *a, int64_t dim, const ampc_tensor *index, ampc_scalar value);
ampc_tensor *ampc_masked_select(const ampc_tensor *a, const ampc_tensor *mask);
ampc_tensor *ampc_masked_scatter(const ampc_tensor *a, const ampc_tensor *mask, const ampc_tensor *source);
ampc_status ampc_masked_scatter_(ampc_tensor *a, const ampc_tensor *mask, const ampc_tensor *source);
ampc_tensor *ampc_take(const ampc_tensor *a, const ampc_tensor *index);
ampc_tensor *ampc_take_along_dim(const ampc_tensor *a, const ampc_tensor *indices, bool has_dim, int64_t dim);
ampc_tensor *ampc_put(const ampc_tensor *a, const ampc_tensor *index, const ampc_tensor *source, bool accumulate);
ampc_status ampc_put_(ampc_tensor *a, const ampc_tensor *index, const ampc_tensor *source, bool accumulate);
/* scatter_reduce (index_form false) and index_reduce (true: a vector index along dim, as index_copy) */
typedef enum ampc_reduce_kind { AMPC_REDUCE_SUM, AMPC_REDUCE_PROD, AMPC_REDUCE_MEAN, AMPC_REDUCE_AMAX, AMPC_REDUCE_AMIN } ampc_reduce_kind;
ampc_tensor *ampc_scatter_reduce(const ampc_tensor *a, int64_t dim, const ampc_tensor *index, const ampc_tensor *src,
                                 ampc_reduce_kind kind, bool include_self, bool index_form);
ampc_status ampc_scatter_reduce_(ampc_tensor *a, int64_t dim, const ampc_tensor *index, const ampc_tensor *src,
                                 ampc_reduce_kind kind, bool include_self, bool index_form);

/* ---- creation helpers that run kernels (creation.c) ---- */
ampc_tensor *ampc_arange(double start, double end, double step, ampc_dtype dtype, ampc_device dev);
ampc_tensor *ampc_linspace(double start, double end, int64_t steps, ampc_dtype dtype, ampc_device dev);
ampc_tensor *ampc_eye(int64_t n, int64_t m, ampc_dtype dtype, ampc_device dev);

/* ---- random (random.c): torch's MT19937 on the CPU (mt19937.h), Philox4x32-10 on CUDA ---- */
void ampc_manual_seed(uint64_t seed);                 /* all devices */
uint64_t ampc_initial_seed(void);
/* Seeds every device with a non-deterministic seed (from the OS) and returns it (torch.seed). */
uint64_t ampc_seed(void);
/* Reserves `n` counter values of the device's generator and returns the (seed, offset) pair a
 * kernel uses, so CPU and CUDA produce the same stream for the same seed. */
void ampc_philox_reserve(ampc_device dev, uint64_t n, uint64_t *seed, uint64_t *offset);
/* The CPU generator the CPU kernels draw from (struct in mt19937.h). */
struct ampc_cpu_generator *ampc_cpu_generator_default(void);
/* A device generator's state as bytes: AMPC_CPU_RNG_STATE_BYTES for the CPU, 16 (seed, offset)
 * for CUDA. set fails on a wrong size or bytes that are no state. for_seed: the state manual_seed
 * gives (a Generator's). state_seed: the seed a state was seeded with. */
size_t ampc_rng_state_size(ampc_device dev);
void ampc_rng_state_get(ampc_device dev, uint8_t *out);
ampc_status ampc_rng_state_set(ampc_device dev, const uint8_t *in, size_t n);
void ampc_rng_state_for_seed(ampc_device dev, uint64_t seed, uint8_t *out);
uint64_t ampc_rng_state_seed(const uint8_t *state);
ampc_status ampc_uniform_(ampc_tensor *t, double from, double to);
ampc_status ampc_normal_(ampc_tensor *t, double mean, double std);
ampc_status ampc_random_(ampc_tensor *t, int64_t low, int64_t high); /* [low, high) */
/* random_(from) with no `to` (and random_() with low 0): [low, dtype max] for integers,
 * [low, 2^digits] for floats, as PyTorch. */
ampc_status ampc_random_to_max_(ampc_tensor *t, int64_t low);
ampc_status ampc_bernoulli_(ampc_tensor *t, double p);
/* t[i] = 1 with probability p[i] (p floating, broadcast to t's shape, values in [0, 1]). */
ampc_status ampc_bernoulli_p_(ampc_tensor *t, const ampc_tensor *p);
ampc_tensor *ampc_bernoulli(const ampc_tensor *probs); /* like probs, drawn with probs */
/* torch.normal(mean, std) with tensor arguments (wrapped numbers allowed for one of them):
 * shape broadcast(mean, std), dtype result_type(mean, std), which must be floating. */
ampc_tensor *ampc_normal_tensors(const ampc_tensor *mean, const ampc_tensor *std);
ampc_tensor *ampc_randperm(int64_t n, ampc_dtype dtype, ampc_device dev);

/* ---- sampling (sampling.c, issue 12), torch's checks and messages ---- */
ampc_status ampc_exponential_(ampc_tensor *t, double lambd);
ampc_status ampc_geometric_(ampc_tensor *t, double p);
ampc_status ampc_log_normal_(ampc_tensor *t, double mean, double std);
ampc_status ampc_cauchy_(ampc_tensor *t, double median, double sigma);
/* int64 indices: (n_sample,) for 1-D probs, (rows, n_sample) for 2-D */
ampc_tensor *ampc_multinomial(const ampc_tensor *probs, int64_t n_sample, bool replacement);
ampc_tensor *ampc_poisson(const ampc_tensor *rates);
ampc_tensor *ampc_binomial(const ampc_tensor *count, const ampc_tensor *prob); /* broadcast, count's dtype */

#ifdef __cplusplus
}
#endif
#endif
