//===- Communicator.cpp - what every communicator does alike --------------===//

#include "zcc/Runtime/Communicator.h"

#include <thread>
#include <vector>

using namespace zcc::runtime;

void Communicator::await(const std::function<bool()> &done, const char *) {
  while (!done())
    std::this_thread::yield();
}

std::vector<uint64_t> Communicator::gather(uint64_t value) {
  std::vector<uint64_t> all(static_cast<size_t>(size()));
  allGather(&value, all.data(), 1, CollectiveType::F64);
  return all;
}

Status Communicator::checkSame(uint64_t value, const std::string &what) {
  std::vector<uint64_t> all = gather(value);
  std::string differ;
  for (size_t r = 1; r < all.size(); ++r)
    if (all[r] != all[0])
      differ += (differ.empty() ? "" : ", ") + std::to_string(r);
  if (differ.empty())
    return Status::ok();
  return makeError(StatusCode::InvalidArgument, "rank(s) ", differ,
                   " of the job have another ", what, " than rank 0");
}

namespace {
template <typename T> void divideBy(void *data, uint64_t count, int ranks) {
  auto *v = static_cast<T *>(data);
  for (uint64_t i = 0; i < count; ++i)
    v[i] /= static_cast<T>(ranks);
}
} // namespace

void Communicator::divideForMean(const CollectiveCall &call) const {
  if (!call.mean || size() == 1)
    return;
  if (call.type == CollectiveType::F64)
    divideBy<double>(call.data, call.count, size());
  else
    divideBy<float>(call.data, call.count, size());
}
