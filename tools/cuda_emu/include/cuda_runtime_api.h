/* Fake cuda_runtime_api.h of the CUDA emulator (tools/cuda_emu): the host API subset ampc uses,
 * implemented in emu_runtime.cpp. C and C++. Values of enums match the real toolkit. */
#ifndef AMPC_EMU_CUDA_RUNTIME_API_H
#define AMPC_EMU_CUDA_RUNTIME_API_H

#include <stddef.h>
#include <stdint.h>

#define CUDART_VERSION 13000
#define AMPC_CUDA_EMULATOR 1

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInitializationError = 3,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorInvalidDevicePointer = 17,
    cudaErrorInvalidMemcpyDirection = 21,
    cudaErrorNoDevice = 100,
    cudaErrorInvalidDevice = 101,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorNotReady = 600,
    cudaErrorIllegalAddress = 700,
    cudaErrorLaunchOutOfResources = 701,
    cudaErrorLaunchFailure = 719,
    cudaErrorUnknown = 999
} cudaError_t;

typedef enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4
} cudaMemcpyKind;

typedef enum cudaDeviceAttr {
    cudaDevAttrMaxThreadsPerBlock = 1,
    cudaDevAttrMaxBlockDimX = 2,
    cudaDevAttrMaxGridDimX = 5,
    cudaDevAttrMaxGridDimY = 6,
    cudaDevAttrMaxGridDimZ = 7,
    cudaDevAttrMaxSharedMemoryPerBlock = 8,
    cudaDevAttrWarpSize = 10,
    cudaDevAttrMultiProcessorCount = 16,
    cudaDevAttrComputeCapabilityMajor = 75,
    cudaDevAttrComputeCapabilityMinor = 76,
    cudaDevAttrMaxSharedMemoryPerBlockOptin = 97
} cudaDeviceAttr;

typedef enum cudaFuncAttribute {
    cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
    cudaFuncAttributePreferredSharedMemoryCarveout = 9
} cudaFuncAttribute;

typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;

#define cudaStreamLegacy ((cudaStream_t)0x1)
#define cudaStreamPerThread ((cudaStream_t)0x2)
#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01
#define cudaEventDefault 0x00
#define cudaEventBlockingSync 0x01
#define cudaEventDisableTiming 0x02
#define cudaHostAllocDefault 0x00
#define cudaHostAllocPortable 0x01
#define cudaHostAllocMapped 0x02
#define cudaHostAllocWriteCombined 0x04

enum cudaMemoryType { cudaMemoryTypeUnregistered = 0, cudaMemoryTypeHost = 1, cudaMemoryTypeDevice = 2, cudaMemoryTypeManaged = 3 };
struct cudaPointerAttributes {
    enum cudaMemoryType type;
    int device;
    void *devicePointer;
    void *hostPointer;
};

struct cudaDeviceProp {
    char name[256];
    size_t totalGlobalMem;
    size_t sharedMemPerBlock;
    int regsPerBlock;
    int warpSize;
    int maxThreadsPerBlock;
    int maxThreadsDim[3];
    int maxGridSize[3];
    int major;
    int minor;
    int multiProcessorCount;
    int maxThreadsPerMultiProcessor;
    size_t sharedMemPerBlockOptin;
    size_t sharedMemPerMultiprocessor;
    int l2CacheSize;
    int memoryBusWidth;
    int pciBusID;
    int pciDeviceID;
    int pciDomainID;
    int integrated;
    int unifiedAddressing;
};
typedef struct cudaDeviceProp cudaDeviceProp;

cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaGetDevice(int *device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device);
cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaDeviceReset(void);
cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest);
cudaError_t cudaDeviceCanAccessPeer(int *can, int device, int peer);
cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned flags);
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
const char *cudaGetErrorString(cudaError_t err);
const char *cudaGetErrorName(cudaError_t err);
cudaError_t cudaDriverGetVersion(int *v);
cudaError_t cudaRuntimeGetVersion(int *v);

cudaError_t cudaMalloc(void **ptr, size_t nbytes);
cudaError_t cudaFree(void *ptr);
cudaError_t cudaMallocAsync(void **ptr, size_t nbytes, cudaStream_t stream);
cudaError_t cudaFreeAsync(void *ptr, cudaStream_t stream);
cudaError_t cudaHostAlloc(void **ptr, size_t nbytes, unsigned flags);
cudaError_t cudaMallocHost(void **ptr, size_t nbytes);
cudaError_t cudaFreeHost(void *ptr);
cudaError_t cudaHostRegister(void *ptr, size_t nbytes, unsigned flags);
cudaError_t cudaHostUnregister(void *ptr);
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes);
cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attr, const void *ptr);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                              enum cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaMemcpyPeer(void *dst, int dst_dev, const void *src, int src_dev, size_t n);
cudaError_t cudaMemcpyPeerAsync(void *dst, int dst_dev, const void *src, int src_dev, size_t n, cudaStream_t stream);
cudaError_t cudaMemset(void *p, int value, size_t n);
cudaError_t cudaMemsetAsync(void *p, int value, size_t n, cudaStream_t stream);

cudaError_t cudaStreamCreate(cudaStream_t *s);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags);
cudaError_t cudaStreamCreateWithPriority(cudaStream_t *s, unsigned flags, int priority);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaStreamQuery(cudaStream_t s);
cudaError_t cudaStreamGetPriority(cudaStream_t s, int *priority);
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags);

cudaError_t cudaEventCreate(cudaEvent_t *e);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t e);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s);
cudaError_t cudaEventSynchronize(cudaEvent_t e);
cudaError_t cudaEventQuery(cudaEvent_t e);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end);

/* Emulator internals shared with the fake cuBLASLt and cub (C++). */
int ampc_emu_is_device_ptr(const void *p, size_t n);

#ifdef __cplusplus
}
#endif

#ifdef __cplusplus
template <typename T> static inline cudaError_t cudaMalloc(T **ptr, size_t nbytes) {
    return cudaMalloc((void **)ptr, nbytes);
}
template <typename T> static inline cudaError_t cudaFuncSetAttribute(T *, enum cudaFuncAttribute, int) {
    return cudaSuccess;
}
#endif

#endif
