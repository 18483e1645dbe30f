/* kernel_args_end.h: ends one pass of kernel_args.h over the AMPC_ARGS rows of ops.def (the
 * field macros IN, OUT, VAL, ARR, LIST and AMPC_ARGS are redefined for every pass). */
#undef AMPC_ARGS
#undef IN
#undef OUT
#undef VAL
#undef ARR
#undef LIST
