/* Fake vector_types.h of the CUDA emulator. */
#pragma once
#include "cuda_runtime.h"
