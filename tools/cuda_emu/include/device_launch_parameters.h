/* Fake device_launch_parameters.h of the CUDA emulator. */
#pragma once
#include "cuda_runtime.h"
