//===- SyntheticData.h - a learnable task for any plan's inputs -*- C++ -*-===//
//
// So that a plan can be trained and its loss watched without a dataset
// (the demo, the differential tests, `zrun --data synthetic`). The task is
// chosen from what the plan's launches do with its inputs:
//  - class labels next to a float input with one row per label: a Gaussian
//    mixture, each row a fixed class prototype plus unit noise;
//  - labels with the shape of embedded tokens: each label a fixed function
//    of the token at its position (a random bigram table);
//  - float targets of mse next to a float input: a fixed linear teacher;
//  - anything else: independent random values (not learnable; describe()
//    says so).
// Each step's batch is a pure function of (seed, step): no state, no
// allocation when filling.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_RUNTIME_SYNTHETICDATA_H
#define ZCC_RUNTIME_SYNTHETICDATA_H

#include "zcc/Runtime/Session/Session.h"

#include <memory>
#include <string>
#include <vector>

namespace zcc::runtime {

class SyntheticTask {
public:
  static Status create(const Session &session, int entry, uint64_t seed,
                       std::unique_ptr<SyntheticTask> &out);
  /// Writes batch `step` into the entry's inputs.
  void fill(Session &session, int64_t step) const;
  /// One line: which task was chosen and why.
  const std::string &describe() const { return description; }

private:
  enum class Kind { Mixture, Bigram, Teacher, Random };
  SyntheticTask() = default;
  Kind taskKind = Kind::Random;
  int entry = -1;
  uint64_t seed = 0;
  std::string description;
  TensorInfo labels, features, tokens;
  int64_t classes = 0; // label range
  int64_t vocabulary = 0;
  int64_t rows = 0, width = 0;
  std::vector<float>
      prototypes; // Mixture: classes x width; Teacher: outputs x width
  std::vector<int32_t> bigram;      // Bigram: vocabulary entries
  std::vector<TensorInfo> others;   // inputs filled with independent values
  std::vector<int64_t> otherRanges; // integer range per other (0: float)
};

} // namespace zcc::runtime

#endif // ZCC_RUNTIME_SYNTHETICDATA_H
