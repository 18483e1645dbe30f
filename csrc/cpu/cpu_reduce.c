/* cpu_reduce.c: CPU kernels of the reduce family (placeholder until implemented). */
#include "cpu_backend.h"

void ampc_cpu_register_reduce(void) {}
