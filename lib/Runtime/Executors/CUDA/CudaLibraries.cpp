//===- CudaLibraries.cpp - dlopen and the entry points --------------------===//

#include "Executors/CUDA/CudaLibraries.h"

#include <dlfcn.h>

#include <type_traits>

using namespace zcc::runtime;
using namespace zcc::runtime::device;

#ifndef ZCC_CUBLAS_SONAME
#define ZCC_CUBLAS_SONAME "libcublas.so"
#endif
#ifndef ZCC_CUBLAS_FALLBACK
#define ZCC_CUBLAS_FALLBACK ""
#endif

namespace {

/// Binds table entries by name from one library, remembering the first
/// failure (a missing library, or a symbol it lacks).
class Binder {
public:
  /// `soname` on the library path, else `fallback` (a path; may be null).
  Binder(const char *soname, const char *what, const char *fallback = nullptr)
      : soname(soname), what(what) {
    library = dlopen(soname, RTLD_NOW | RTLD_GLOBAL);
    if (!library && fallback && *fallback)
      library = dlopen(fallback, RTLD_NOW | RTLD_GLOBAL);
    if (!library) {
      const char *why = dlerror();
      failure = std::string("cannot load ") + what + " (" + soname +
                "): " + (why ? why : "not found") + "; put " + what +
                "'s lib directory on LD_LIBRARY_PATH";
    }
  }
  template <typename F> void bind(F &slot, const char *name) {
    if (!library)
      return;
    slot = reinterpret_cast<F>(dlsym(library, name));
    if (!slot && failure.empty())
      failure = std::string(what) + " (" + soname + ") has no " + name;
  }
  std::string failure;

private:
  const char *soname, *what;
  void *library = nullptr;
};

/// `Api`'s table, bound by `bindAll(api)` (which returns the first failure)
/// the first time it is asked for; later calls get the same table or the
/// same failure.
template <typename Api, typename BindAll>
Status loadOnce(const Api *&out, BindAll bindAll) {
  static Api api;
  static const std::string failure = bindAll(api);
  if (!failure.empty())
    return makeError(StatusCode::Unsupported, failure);
  out = &api;
  return Status::ok();
}

} // namespace

Status zcc::runtime::device::loadCublas(const CublasApi *&out) {
  return loadOnce(out, [](CublasApi &api) {
    // The toolkit this runtime was built with, where the path lacks it.
    Binder b(ZCC_CUBLAS_SONAME, "cuBLAS", ZCC_CUBLAS_FALLBACK);
    b.bind(api.create, "cublasCreate_v2");
    b.bind(api.destroy, "cublasDestroy_v2");
    b.bind(api.setStream, "cublasSetStream_v2");
    b.bind(api.setWorkspace, "cublasSetWorkspace_v2");
    b.bind(api.setMathMode, "cublasSetMathMode");
    b.bind(api.sgemm, "cublasSgemm_v2");
    b.bind(api.sgemmStridedBatched, "cublasSgemmStridedBatched");
    b.bind(api.gemmStridedBatchedEx, "cublasGemmStridedBatchedEx");
    b.bind(api.statusName, "cublasGetStatusName");
    b.bind(api.statusString, "cublasGetStatusString");
    b.bind(api.property, "cublasGetProperty");
    if (b.failure.empty()) {
      int major = 0, minor = 0, patch = 0;
      api.property(MAJOR_VERSION, &major);
      api.property(MINOR_VERSION, &minor);
      api.property(PATCH_LEVEL, &patch);
      api.version = "cuBLAS " + std::to_string(major) + "." +
                    std::to_string(minor) + "." + std::to_string(patch) +
                    " (" ZCC_CUBLAS_SONAME ")";
    }
    return b.failure;
  });
}

#ifdef ZCC_HAVE_NCCL
Status zcc::runtime::device::loadNccl(const NcclApi *&out) {
  return loadOnce(out, [](NcclApi &api) {
    Binder b("libnccl.so.2", "NCCL");
    b.bind(api.getUniqueId, "ncclGetUniqueId");
    b.bind(api.commInitRank, "ncclCommInitRank");
    b.bind(api.commDestroy, "ncclCommDestroy");
    b.bind(api.allReduce, "ncclAllReduce");
    b.bind(api.reduceScatter, "ncclReduceScatter");
    b.bind(api.allGather, "ncclAllGather");
    b.bind(api.getErrorString, "ncclGetErrorString");
    b.bind(api.getVersion, "ncclGetVersion");
    return b.failure;
  });
}
#endif
