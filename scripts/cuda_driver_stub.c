/* Link-time stand-in for the CUDA driver library (libcuda.so.1), for building llama.cpp's CUDA
 * backend on a machine with CUDA's compiler but no NVIDIA driver (the pip-installed toolkit has no
 * lib64/stubs folder). It defines the driver functions ggml-cuda calls directly (b11434: the VMM
 * pool and its error strings); every one returns CUDA_ERROR_STUB_LIBRARY. Its soname is
 * libcuda.so.1, so a binary linked against it loads the real driver's library where one is
 * installed. Never install it on a library path: it only satisfies the linker.
 * Build: cc -shared -fPIC -Wl,-soname,libcuda.so.1 -I"$CUDA_HOME/include" -o libcuda.so cuda_driver_stub.c
 */
#include <cuda.h>

#define STUB return CUDA_ERROR_STUB_LIBRARY

CUresult CUDAAPI cuGetErrorString(CUresult error, const char **pStr) {
    (void)error;
    if (pStr) *pStr = "CUDA driver stub: no NVIDIA driver on this machine";
    STUB;
}
CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal) { (void)device; (void)ordinal; STUB; }
CUresult CUDAAPI cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
    (void)pi; (void)attrib; (void)dev; STUB;
}
CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size) { (void)ptr; (void)size; STUB; }
CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                     unsigned long long flags) {
    (void)ptr; (void)size; (void)alignment; (void)addr; (void)flags; STUB;
}
CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                             unsigned long long flags) {
    (void)handle; (void)size; (void)prop; (void)flags; STUB;
}
CUresult CUDAAPI cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                               CUmemAllocationGranularity_flags option) {
    (void)granularity; (void)prop; (void)option; STUB;
}
CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                          unsigned long long flags) {
    (void)ptr; (void)size; (void)offset; (void)handle; (void)flags; STUB;
}
CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle) { (void)handle; STUB; }
CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count) {
    (void)ptr; (void)size; (void)desc; (void)count; STUB;
}
CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size) { (void)ptr; (void)size; STUB; }
