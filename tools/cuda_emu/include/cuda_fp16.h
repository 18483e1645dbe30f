/* Fake cuda_fp16.h of the CUDA emulator. */
#pragma once
#include "cuda_runtime.h"
