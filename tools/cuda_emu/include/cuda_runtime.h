/* Fake cuda_runtime.h of the CUDA emulator: the host API plus (C++) the device-side emulation. */
#ifndef AMPC_EMU_CUDA_RUNTIME_H
#define AMPC_EMU_CUDA_RUNTIME_H
#include "cuda_runtime_api.h"
#ifdef __cplusplus
#include "emu_device.h"
#endif
#endif
