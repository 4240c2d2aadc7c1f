//===- PlanFuzzer.cpp - libFuzzer: the .zplan loader ----------------------===//
//
// Any bytes: zrt_plan_load_bytes returns a plan or a status, never crashes,
// reads out of bounds or hangs; a plan it accepts writes itself back to the
// same bytes' meaning (its bytes load again).
//
//===----------------------------------------------------------------------===//

#include "zcc/Runtime/zrt.h"

#include <cstdint>
#include <cstdlib>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  zrt_plan *plan = nullptr;
  if (zrt_status s = zrt_plan_load_bytes(data, size, &plan)) {
    zrt_status_free(s);
    return 0;
  }
  size_t bytes = 0;
  if (zrt_status s = zrt_plan_to_bytes(plan, nullptr, 0, &bytes))
    zrt_status_free(s);
  std::vector<uint8_t> again(bytes);
  if (zrt_status s = zrt_plan_to_bytes(plan, again.data(), again.size(), &bytes))
    std::abort(); // an accepted plan must write itself
  zrt_plan *reloaded = nullptr;
  if (zrt_status s = zrt_plan_load_bytes(again.data(), bytes, &reloaded))
    std::abort(); // and load again
  zrt_plan_free(reloaded);
  zrt_plan_free(plan);
  return 0;
}
