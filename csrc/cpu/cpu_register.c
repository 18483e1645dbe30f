/* cpu_register.c: installs the CPU allocator and every CPU kernel family into the dispatcher. */
#include "../core/dispatch.h"
#include "cpu_backend.h"

void ampc_cpu_register(void) {
    ampc_register_allocator(AMPC_CPU, &ampc_cpu_allocator);
    ampc_cpu_register_copy();
    ampc_cpu_register_elementwise();
    ampc_cpu_register_reduce();
    ampc_cpu_register_gemm();
    ampc_cpu_register_index();
    ampc_cpu_register_shape();
    ampc_cpu_register_random();
    ampc_cpu_register_sampling();
    ampc_cpu_register_amp();
    ampc_cpu_register_nn();
    ampc_cpu_register_multi_tensor();
    ampc_cpu_register_optim();
    ampc_cpu_register_sort();
    ampc_cpu_register_nn_rnn(); /* issue 13: rnn */
    ampc_cpu_register_nn_pad(); /* issue 13, conv */
    ampc_cpu_register_nn_poolnorm(); /* issue 13, poolnorm */
    ampc_cpu_register_nn_loss_ctc();
    ampc_cpu_register_nn_attn();
    ampc_cpu_register_nn_pdist();
    ampc_cpu_register_nn_vol2col(); /* issue 13, conv */
    ampc_cpu_register_nn_resample(); /* issue 13, conv */
}
