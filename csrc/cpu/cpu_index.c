/* cpu_index.c: CPU kernels of the index family (placeholder until implemented). */
#include "cpu_backend.h"

void ampc_cpu_register_index(void) {}
