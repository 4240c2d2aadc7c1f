//===- CudaLibrariesTest.cpp - the GPU libraries load by name -------------===//
//
// cuBLAS is loaded with dlopen when a CUDA executor opens: every entry point
// the runtime calls must bind by its exported name, which needs no GPU to
// check. Skipped, saying so, where the library is not installed.
//
//===----------------------------------------------------------------------===//

#include "Executors/CUDA/CudaLibraries.h"

#include <gtest/gtest.h>

using namespace zcc::runtime;
using namespace zcc::runtime::device;

TEST(CudaLibraries, CublasBindsEveryEntryPoint) {
  const CublasApi *api = nullptr;
  Status loaded = loadCublas(api);
  if (!loaded.isOk() &&
      loaded.message().find("cannot load") != std::string::npos)
    GTEST_SKIP() << loaded.message();
  ASSERT_TRUE(loaded.isOk()) << loaded.toString(); // a symbol is missing
  EXPECT_NE(api->create, nullptr);
  EXPECT_NE(api->gemmStridedBatchedEx, nullptr);
  EXPECT_NE(api->version.find("cuBLAS "), std::string::npos) << api->version;
  // The names the messages use come from the library itself.
  EXPECT_STREQ(api->statusName(CUBLAS_STATUS_NOT_INITIALIZED),
               "CUBLAS_STATUS_NOT_INITIALIZED");
  // Loaded once: the same table again.
  const CublasApi *again = nullptr;
  ASSERT_TRUE(loadCublas(again).isOk());
  EXPECT_EQ(again, api);
}
