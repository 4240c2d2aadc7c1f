//===- Initializers.h - filling persistent tensors --------------*- C++ -*-===//

#ifndef ZCC_LIB_RUNTIME_INITIALIZERS_H
#define ZCC_LIB_RUNTIME_INITIALIZERS_H

#include "zcc/Runtime/Plan/Plan.h"

#include <cstdint>

namespace zcc::runtime {

/// Fills `tensor` at `data` from its initializer with a counter-based
/// generator keyed by (seed, hash of the tensor's name), element by element,
/// so a tensor's initial values depend only on the seed and its name: not on
/// the order of tensors, the plan's layout or the thread count. Float
/// elements are written as float, or as double when `wide` is set.
void fillInitializer(const PersistentTensor &tensor, uint64_t seed, bool wide,
                     void *data);

} // namespace zcc::runtime

#endif // ZCC_LIB_RUNTIME_INITIALIZERS_H
