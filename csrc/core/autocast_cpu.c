/* autocast_cpu.c: the CPU's autocast policy of each op.
 *
 * The AUTOCAST column of ops.def is torch's CUDA policy (its AT_FORALL_* lists in
 * aten/src/ATen/autocast_mode.h). torch's CPU autocast has lists of its own, much shorter
 * (TORCH_LIBRARY_IMPL(aten, AutocastCPU) in autocast_mode.cpp): matmul-like ops and convolutions
 * in the lower precision, losses, 3-d pooling, paddings and linear algebra in fp32, cat / stack /
 * index_copy promoted; everything else (exp, softmax, layer_norm, sum, ...) runs as called. This
 * table is that list by ampc's row names; a row not listed has no CPU policy. The committed copy
 * of torch 2.13's lists and the test that holds ampc to both directions are
 * tests/autocast_lists_torch.py and tests/test_autocast_lists.py. */
#include <string.h>

#include "dispatch.h"

static const struct {
    const char *name;
    ampc_autocast_policy policy;
} cpu_list[] = {
    /* lower_precision_fp */
    {"conv1d", AMPC_AC_POLICY_LOWER}, {"conv2d", AMPC_AC_POLICY_LOWER}, {"conv3d", AMPC_AC_POLICY_LOWER},
    {"bmm", AMPC_AC_POLICY_LOWER}, {"mm", AMPC_AC_POLICY_LOWER}, {"baddbmm", AMPC_AC_POLICY_LOWER},
    {"addmm", AMPC_AC_POLICY_LOWER}, {"addbmm", AMPC_AC_POLICY_LOWER}, {"linear", AMPC_AC_POLICY_LOWER},
    {"matmul", AMPC_AC_POLICY_LOWER}, {"conv_tbc", AMPC_AC_POLICY_LOWER},
    {"conv_transpose1d", AMPC_AC_POLICY_LOWER}, {"conv_transpose2d", AMPC_AC_POLICY_LOWER},
    {"conv_transpose3d", AMPC_AC_POLICY_LOWER}, {"prelu", AMPC_AC_POLICY_LOWER},
    {"scaled_dot_product_attention", AMPC_AC_POLICY_LOWER}, {"linalg_vecdot", AMPC_AC_POLICY_LOWER},
    /* fp32 */
    {"avg_pool3d", AMPC_AC_POLICY_FP32}, {"binary_cross_entropy", AMPC_AC_POLICY_FP32},
    {"grid_sampler", AMPC_AC_POLICY_FP32}, {"grid_sampler_2d", AMPC_AC_POLICY_FP32},
    {"grid_sampler_3d", AMPC_AC_POLICY_FP32}, {"prod", AMPC_AC_POLICY_FP32}, {"quantile", AMPC_AC_POLICY_FP32},
    {"nanquantile", AMPC_AC_POLICY_FP32}, {"cdist", AMPC_AC_POLICY_FP32}, {"trace", AMPC_AC_POLICY_FP32},
    {"max_pool3d", AMPC_AC_POLICY_FP32}, {"max_unpool2d", AMPC_AC_POLICY_FP32}, {"max_unpool3d", AMPC_AC_POLICY_FP32},
    {"adaptive_avg_pool3d", AMPC_AC_POLICY_FP32}, {"adaptive_max_pool3d", AMPC_AC_POLICY_FP32},
    {"fractional_max_pool2d", AMPC_AC_POLICY_FP32}, {"fractional_max_pool3d", AMPC_AC_POLICY_FP32},
    {"reflection_pad1d", AMPC_AC_POLICY_FP32}, {"reflection_pad2d", AMPC_AC_POLICY_FP32},
    {"replication_pad1d", AMPC_AC_POLICY_FP32}, {"replication_pad2d", AMPC_AC_POLICY_FP32},
    {"replication_pad3d", AMPC_AC_POLICY_FP32},
    {"mse_loss", AMPC_AC_POLICY_FP32}, {"cosine_embedding_loss", AMPC_AC_POLICY_FP32},
    {"nll_loss", AMPC_AC_POLICY_FP32}, {"nll_loss2d", AMPC_AC_POLICY_FP32},
    {"hinge_embedding_loss", AMPC_AC_POLICY_FP32}, {"poisson_nll_loss", AMPC_AC_POLICY_FP32},
    {"smooth_l1_loss", AMPC_AC_POLICY_FP32}, {"cross_entropy", AMPC_AC_POLICY_FP32}, /* torch: cross_entropy_loss */
    {"l1_loss", AMPC_AC_POLICY_FP32}, {"huber_loss", AMPC_AC_POLICY_FP32}, {"margin_ranking_loss", AMPC_AC_POLICY_FP32},
    {"soft_margin_loss", AMPC_AC_POLICY_FP32}, {"triplet_margin_loss", AMPC_AC_POLICY_FP32},
    {"multi_margin_loss", AMPC_AC_POLICY_FP32}, {"ctc_loss", AMPC_AC_POLICY_FP32}, {"kl_div", AMPC_AC_POLICY_FP32},
    {"multilabel_margin_loss", AMPC_AC_POLICY_FP32}, {"binary_cross_entropy_with_logits", AMPC_AC_POLICY_FP32},
    {"cholesky", AMPC_AC_POLICY_FP32}, {"inverse", AMPC_AC_POLICY_FP32}, {"pinverse", AMPC_AC_POLICY_FP32},
    {"qr", AMPC_AC_POLICY_FP32}, {"svd", AMPC_AC_POLICY_FP32}, {"triangular_solve", AMPC_AC_POLICY_FP32},
    /* promote */
    {"stack", AMPC_AC_POLICY_PROMOTE}, {"cat", AMPC_AC_POLICY_PROMOTE}, {"index_copy", AMPC_AC_POLICY_PROMOTE},
};

static ampc_autocast_policy cpu_policies[AMPC_NUM_OPS];
static int cpu_ready; /* 0: not built, 1: building, 2: built */

static void build_cpu_policies(void) {
    int expected = 0;
    if (__atomic_compare_exchange_n(&cpu_ready, &expected, 1, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        for (size_t i = 0; i < sizeof cpu_list / sizeof cpu_list[0]; i++) {
            int op = ampc_op_find(cpu_list[i].name);
            if (op >= 0) cpu_policies[op] = cpu_list[i].policy;
        }
        __atomic_store_n(&cpu_ready, 2, __ATOMIC_RELEASE);
        return;
    }
    while (__atomic_load_n(&cpu_ready, __ATOMIC_ACQUIRE) != 2) {
    }
}

ampc_autocast_policy ampc_op_autocast_policy_on(ampc_op op, ampc_device_type dev) {
    if (dev != AMPC_CPU) return ampc_op_autocast_policy(op);
    if (__atomic_load_n(&cpu_ready, __ATOMIC_ACQUIRE) != 2) build_cpu_policies();
    return op >= 0 && op < AMPC_NUM_OPS ? cpu_policies[op] : AMPC_AC_POLICY_NONE;
}
