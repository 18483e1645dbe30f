/* cpu_gemm.c: CPU kernels of the gemm family (placeholder until implemented). */
#include "cpu_backend.h"

void ampc_cpu_register_gemm(void) {}
