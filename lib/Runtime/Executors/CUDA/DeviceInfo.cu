//===- DeviceInfo.cu - CUDA device query and smoke kernel -----------------===//

#include "zcc/Runtime/Executors/CUDA/DeviceInfo.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

namespace zcc::runtime::cuda {
namespace {

std::string describe(cudaError_t status, const char *what) {
  return std::string(what) + ": " + cudaGetErrorName(status) + " (" +
         cudaGetErrorString(status) + ")";
}

// y[i] = a * i + b, checked exactly on the host: small integers are exact in
// f32, so any difference means the kernel did not run as compiled.
__global__ void affineIota(float *out, int count, float a, float b) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count)
    out[i] = a * static_cast<float>(i) + b;
}

} // namespace

DeviceQuery queryDevices() {
  DeviceQuery query;
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    // Clear the sticky-free error so later runtime calls start clean.
    (void)cudaGetLastError();
    query.error = describe(status, "cudaGetDeviceCount");
    return query;
  }
  if (count == 0) {
    query.error = "cudaGetDeviceCount: no CUDA device";
    return query;
  }
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    cudaDeviceProp props{};
    status = cudaGetDeviceProperties(&props, ordinal);
    if (status != cudaSuccess) {
      query.error = describe(status, "cudaGetDeviceProperties");
      query.devices.clear();
      return query;
    }
    DeviceInfo info;
    info.ordinal = ordinal;
    info.name = props.name;
    info.computeMajor = props.major;
    info.computeMinor = props.minor;
    info.multiprocessors = props.multiProcessorCount;
    info.totalBytes = props.totalGlobalMem;
    if (cudaSetDevice(ordinal) == cudaSuccess)
      (void)cudaMemGetInfo(&info.freeBytes, &info.totalBytes);
    query.devices.push_back(std::move(info));
  }
  return query;
}

std::string runSmokeKernel(int ordinal) {
  constexpr int kCount = 4096;
  cudaError_t status = cudaSetDevice(ordinal);
  if (status != cudaSuccess)
    return describe(status, "cudaSetDevice");
  float *device = nullptr;
  status = cudaMalloc(&device, kCount * sizeof(float));
  if (status != cudaSuccess)
    return describe(status, "cudaMalloc");
  affineIota<<<(kCount + 255) / 256, 256>>>(device, kCount, 3.0f, -7.0f);
  status = cudaGetLastError();
  std::vector<float> host(kCount);
  if (status == cudaSuccess)
    status = cudaMemcpy(host.data(), device, kCount * sizeof(float),
                        cudaMemcpyDeviceToHost);
  cudaError_t freeStatus = cudaFree(device);
  if (status != cudaSuccess)
    return describe(status, "smoke kernel");
  if (freeStatus != cudaSuccess)
    return describe(freeStatus, "cudaFree");
  for (int i = 0; i < kCount; ++i) {
    float expected = 3.0f * static_cast<float>(i) - 7.0f;
    if (host[i] != expected)
      return "smoke kernel wrote " + std::to_string(host[i]) + " at index " +
             std::to_string(i) + ", expected " + std::to_string(expected);
  }
  return "";
}

} // namespace zcc::runtime::cuda
