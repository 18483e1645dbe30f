/* cpu_elementwise.c: CPU kernels of the elementwise family (placeholder until implemented). */
#include "cpu_backend.h"

void ampc_cpu_register_elementwise(void) {}
