//===- CudaBlas.cpp - products on cuBLAS ----------------------------------===//

#include "Executors/CUDA/CudaBlas.h"

#include <type_traits>

using namespace zcc::runtime;
using namespace zcc::runtime::device;

void CudaBlas::close() {
  if (handle)
    api->destroy(handle);
  handle = nullptr;
}

std::string CudaBlas::check(cublasStatus_t status, const char *what) const {
  if (status == CUBLAS_STATUS_SUCCESS)
    return {};
  return std::string(what) + ": " + api->statusName(status) + " (" +
         api->statusString(status) + ")";
}

Status CudaBlas::open(cudaStream_t stream) {
  ZRT_RETURN_IF_ERROR(loadCublas(api));
  std::string error = check(api->create(&handle), "cublasCreate");
  if (error.empty())
    error = check(api->setStream(handle, stream), "cublasSetStream");
  if (error.empty()) // f32 products in f32: no TF32 unless asked
    error = check(api->setMathMode(handle, CUBLAS_DEFAULT_MATH),
                  "cublasSetMathMode");
  if (!error.empty())
    return makeError(StatusCode::ExecutionError, error);
  return Status::ok();
}

std::string CudaBlas::bind(cudaStream_t stream, void *workspace,
                           uint64_t bytes) {
  std::string error = check(api->setStream(handle, stream), "cublasSetStream");
  return error.empty() ? setWorkspace(workspace, bytes) : error;
}

std::string CudaBlas::setWorkspace(void *workspace, uint64_t bytes) {
  return check(api->setWorkspace(handle, workspace, bytes),
               "cublasSetWorkspace");
}

namespace {
/// Each of `g`'s outer runs of items as its own call (cuBLAS batches over
/// one stride per operand).
template <typename G, typename Fn> std::string byRun(const G &g, Fn &&call) {
  for (int32_t o = 0; o < g.outer; ++o) {
    G run = g;
    run.outer = 1;
    run.a = g.a + o * g.outerA;
    run.b = g.b + o * g.outerB;
    if constexpr (std::is_same_v<G, GemmBf16>)
      run.c = static_cast<char *>(g.c) +
              o * g.outerC * (g.cBf16 ? sizeof(BFloat16) : sizeof(float));
    else
      run.c = g.c + o * g.outerC;
    if (std::string failed = call(run); !failed.empty())
      return failed;
  }
  return {};
}
} // namespace

std::string CudaBlas::run(const Gemm &g) {
  if (g.outer != 1)
    return byRun(g, [&](const Gemm &one) { return run(one); });
  const float one = 1.0f, beta = g.beta;
  cublasOperation_t ta = g.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t tb = g.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (g.tf32) // f32 in and out, operands rounded to TF32 on tensor cores
    return check(api->gemmStridedBatchedEx(
                     handle, ta, tb, g.m, g.n, g.k, &one, g.a, CUDA_R_32F,
                     g.lda, g.strideA, g.b, CUDA_R_32F, g.ldb, g.strideB,
                     &beta, g.c, CUDA_R_32F, g.ldc, g.strideC, g.batch,
                     CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmStridedBatchedEx (tf32)");
  if (g.batch == 1)
    return check(api->sgemm(handle, ta, tb, g.m, g.n, g.k, &one, g.a, g.lda,
                            g.b, g.ldb, &beta, g.c, g.ldc),
                 "cublasSgemm");
  return check(api->sgemmStridedBatched(handle, ta, tb, g.m, g.n, g.k, &one,
                                        g.a, g.lda, g.strideA, g.b, g.ldb,
                                        g.strideB, &beta, g.c, g.ldc,
                                        g.strideC, g.batch),
               "cublasSgemmStridedBatched");
}

std::string CudaBlas::run(const GemmBf16 &g) {
  if (g.outer != 1)
    return byRun(g, [&](const GemmBf16 &one) { return run(one); });
  const float one = 1.0f, beta = g.beta;
  cublasOperation_t ta = g.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t tb = g.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  cudaDataType_t ctype = g.cBf16 ? CUDA_R_16BF : CUDA_R_32F;
  return check(api->gemmStridedBatchedEx(
                   handle, ta, tb, g.m, g.n, g.k, &one, g.a, CUDA_R_16BF,
                   g.lda, g.strideA, g.b, CUDA_R_16BF, g.ldb, g.strideB, &beta,
                   g.c, ctype, g.ldc, g.strideC, g.batch, CUBLAS_COMPUTE_32F,
                   CUBLAS_GEMM_DEFAULT),
               "cublasGemmStridedBatchedEx (bf16)");
}
