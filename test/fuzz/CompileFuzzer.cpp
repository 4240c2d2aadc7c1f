//===- CompileFuzzer.cpp - libFuzzer: the C API's compile on text ---------===//
//
// Any text: zcc_compile returns a plan that passed the runtime's loader
// checks, or a status naming the problem; never a crash or a hang.
//
//===----------------------------------------------------------------------===//

#include "zcc/zcc.h"

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  zcc_compile_options options;
  zcc_compile_options_init(&options);
  zrt_plan *plan = nullptr;
  if (zrt_status s = zcc_compile(reinterpret_cast<const char *>(data), size,
                                 "fuzz.mlir", &options, &plan)) {
    zrt_status_free(s);
    return 0;
  }
  zrt_plan_free(plan);
  return 0;
}
