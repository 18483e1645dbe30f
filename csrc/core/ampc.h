/* ampc.h: the public C API of the ampc core, in reading order.
 *
 *   status.h    error codes and the thread-local message
 *   dtype.h     element types, promotion      half.h  fp16/bf16 conversions
 *   device.h    devices and allocator hooks   storage.h  refcounted memory
 *   tensor.h    the tensor struct, creation, views, copies
 *   dispatch.h  the op table (ops.def) and kernel registry
 *   ops.h       math frontends: elementwise, reductions, matmul, indexing, random
 *   amp.h       the GradScaler's unscale + check and scale update
 *   autocast.h  autocast state (policies: the AUTOCAST column of ops.def), the weight cache
 *   multi_tensor.h  one-call ops over lists of tensors (the total norm of clip_grad_norm_)
 *   optim.h     the fused optimizer steps (SGD, Adam/AdamW, Adadelta, RMSprop, Adagrad) */
#ifndef AMPC_H
#define AMPC_H

#include "status.h"
#include "dtype.h"
#include "half.h"
#include "device.h"
#include "storage.h"
#include "tensor.h"
#include "dispatch.h"
#include "ops.h"
#include "amp.h"
#include "autocast.h"
#include "multi_tensor.h"
#include "optim.h"

#endif
