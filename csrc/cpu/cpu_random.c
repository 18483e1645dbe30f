/* cpu_random.c: CPU kernels of the random family (placeholder until implemented). */
#include "cpu_backend.h"

void ampc_cpu_register_random(void) {}
