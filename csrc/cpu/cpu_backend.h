/* cpu_backend.h: what the CPU backend exports to the core: its allocator and the registration
 * function of each kernel family (one per cpu_*.c file). */
#ifndef AMPC_CPU_BACKEND_H
#define AMPC_CPU_BACKEND_H

#include "../core/device.h"

extern const ampc_allocator ampc_cpu_allocator;

void ampc_cpu_register(void); /* all of the below */
void ampc_cpu_register_copy(void);        /* cpu_copy.c: COPY, FILL */
void ampc_cpu_register_elementwise(void); /* cpu_elementwise.c: UNARY, BINARY, COMPARE, TERNARY */
void ampc_cpu_register_reduce(void);      /* cpu_reduce.c: REDUCE, SCAN */
void ampc_cpu_register_gemm(void);        /* cpu_gemm.c: GEMM */
void ampc_cpu_register_index(void);       /* cpu_index.c: INDEX */
void ampc_cpu_register_shape(void);       /* cpu_shape.c: tril/triu */
void ampc_cpu_register_random(void);      /* cpu_random.c: RANDOM */
void ampc_cpu_register_sampling(void);    /* cpu_sampling.c: the sampling ops of issue 12 */
void ampc_cpu_register_amp(void);         /* cpu_amp.c: AMP (GradScaler) */
void ampc_cpu_register_nn(void);          /* cpu_nn_*.c: NN (nn.functional) */
void ampc_cpu_register_multi_tensor(void); /* cpu_multi_tensor.c: MULTI_TENSOR (clip_grad_norm_) */
void ampc_cpu_register_optim(void);        /* cpu_optim.c: OPTIM (fused optimizer steps) */
void ampc_cpu_register_sort(void);         /* cpu_sort.c: SORT (sorting and selection), and: */
void ampc_cpu_register_nn_rnn(void);       /* cpu_nn_rnn.c: the fused LSTM/GRU cells (issue 13) */
void ampc_cpu_register_sort_search(void);  /* cpu_sort_search.c: searchsorted, unique runs, histograms */
void ampc_cpu_register_nn_pad(void);      /* cpu_nn_pad.c: the pad rows (issue 13, conv) */
void ampc_cpu_register_nn_poolnorm(void);  /* cpu_nn_poolnorm.c: pool3d rows (3-d and adaptive max pools), rms_norm */
void ampc_cpu_register_nn_loss_ctc(void);  /* cpu_nn_loss_ctc.c: ctc_loss (issue 13, loss) */
void ampc_cpu_register_nn_attn(void);      /* cpu_nn_attn.c: SDPA_FLASH (+ backward), issue 13 attn */
void ampc_cpu_register_nn_pdist(void);     /* cpu_nn_pdist.c: pdist (issue 13, loss) */
void ampc_cpu_register_nn_vol2col(void); /* cpu_nn_vol2col.c: VOL2COL, COL2VOL (issue 13, conv) */
void ampc_cpu_register_nn_resample(void); /* cpu_nn_resample.c: the interpolate rows (issue 13, conv) */

#endif
