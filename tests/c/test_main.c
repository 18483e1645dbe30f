/* test_main.c: runs every C unit test; exit status 1 when any check failed. The closing line
 * has the "N passed, N failed" form CI reads. */
#include <string.h>

#include "ctest.h"

int ctest_failures = 0;
const char *ctest_current = "";

#define TESTS(X) \
    X(nn_conv2d_grid) X(nn_conv_unbatched_and_1d) X(nn_conv_errors) X(nn_pool_backward_central_differences) \
    X(nn_norm_backward_central_differences) X(nn_batch_norm_running_stats) X(nn_softmax_cross_entropy_central_differences) \
    X(nn_losses_central_differences) X(nn_embedding_forward_backward) X(nn_dropout_follows_the_bernoulli_stream) \
    X(nn_attention_matches_loops) \
    X(dtype_promotion) X(half_roundtrip) X(bf16_rounding) X(views_share_storage) X(view_errors) \
    X(copy_casts) X(fill) X(amp_unscale_and_check) X(amp_update_scale) \
    X(philox_known_answers) X(random_reproducible) X(random_uniform_stats) X(random_normal_stats) \
    X(random_strided_outputs) X(random_half_outputs) X(random_randint) X(random_bernoulli) \
    X(random_normal_tensors) X(random_errors) X(random_randperm) X(arange_kernel) \
    X(reduce_sum_dims) X(reduce_int_and_bool) X(reduce_large_paths) X(reduce_nan_and_ties) \
    X(reduce_var_norm_lse) X(reduce_empty) X(reduce_errors) X(cumsum) X(reduce_fp16_load_paths) \
    X(gemm_mm_float) X(gemm_strided_operands) X(gemm_large_blocks) X(gemm_integers) X(gemm_addmm) X(gemm_batched_broadcast) \
    X(gemm_matmul_ranks) X(gemm_zero_sizes) X(gemm_amx_kernel) X(gemm_backend_switch) X(gemm_errors) X(einsum_cases) X(gemm_autocast) \
    X(autocast_rows_by_name) X(autocast_policies_output_dtypes) X(autocast_weight_cache_rules) X(autocast_cuda_ban) \
    X(index_select_all_forms) X(gather_and_scatter_add) X(index_add_dtypes) X(advanced_index_get_put) \
    X(masked_fill_and_nonzero) X(cat_stack_split) \
    X(ew_add_values_and_alpha) X(ew_scalar_operands_and_promotion) X(ew_integer_edge_cases) \
    X(ew_broadcast_and_strides) X(ew_unary_values) X(ew_fp16_bf16_opmath) X(ew_inplace_rules) X(ew_where) \
    X(ew_large_parallel) \
    X(autograd_grad_mode) X(autograd_simple_chain) X(autograd_accumulates_and_retains) X(autograd_broadcast_and_dtype) X(autograd_version_check) X(autograd_deep_chain_frees) X(autograd_grad_inputs_and_unused) X(autograd_hooks_and_retain_grad) X(autograd_rules_spot_values) X(autograd_inplace_on_view) X(autograd_second_order) \
    X(creation_arange) X(creation_linspace) X(creation_eye) \
    X(optim_sgd_momentum_steps) X(optim_adam_skip_and_unscale) X(optim_master_weights_fp16) X(optim_strided_tensors) \
    X(optim_parallel_lists) X(optim_errors) \
    X(multi_tensor_norm) X(multi_tensor_scale) \
    X(half_convert_fp16_all_values) X(half_convert_fp32_sweep) \
    X(caching_allocator_sizes) X(caching_allocator_split_merge_best_fit) X(caching_allocator_streams) \
    X(caching_allocator_stats) X(caching_allocator_out_of_memory) X(caching_allocator_random_workload) \
    X(sort_paths_and_strides) X(sort_topk_paths) X(sort_selections) X(sort_search_unique_histograms) \
    X(storage_shared_moves_in_place)

#define DECLARE(name) void ctest_##name(void);
TESTS(DECLARE)

int main(int argc, char **argv) {
    ampc_init_backends();
    int passed = 0, failed = 0;
#define RUN(name)                                                            \
    if (argc < 2 || strstr(#name, argv[1])) {                                \
        int before = ctest_failures;                                         \
        ctest_current = #name;                                               \
        ctest_##name();                                                      \
        if (ctest_failures == before) passed++; else failed++;               \
    }
    TESTS(RUN)
    printf("C core: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
