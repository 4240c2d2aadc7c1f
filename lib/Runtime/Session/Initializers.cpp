//===- Initializers.cpp - seeded parameter initialization -----------------===//

#include "Session/Initializers.h"

#include "zcc/Runtime/Kernels/Philox.h"
#include "zcc/Runtime/Plan/PlanFile.h"

#include <cmath>
#include <cstring>

using namespace zcc::runtime;

void zcc::runtime::fillInitializer(const PersistentTensor &tensor,
                                   uint64_t seed, bool wide, void *data) {
  const TensorType &type = tensor.type;
  int64_t n = type.numElements();
  if (type.dtype != DType::F32) { // validated: integers start at zero
    std::memset(data, 0, static_cast<size_t>(type.bytes()));
    return;
  }
  const Initializer &init = tensor.init;
  // The name, not the position, keys the stream: reordering or adding
  // tensors leaves every other tensor's initial values unchanged.
  uint64_t stream =
      fnv1a64(reinterpret_cast<const uint8_t *>(tensor.name.data()),
              tensor.name.size());
  PhiloxKey key = philoxKeyFromSeed(seed);
  const double twoPi = 6.283185307179586476925286766559;
  for (int64_t i = 0; i < n; ++i) {
    double value = 0;
    switch (init.kind) {
    case InitKind::Zeros:
    case InitKind::Given: // zeros until written; Session refuses to run
      value = 0;
      break;
    case InitKind::Ones:
      value = 1;
      break;
    case InitKind::Constant:
      value = init.first;
      break;
    case InitKind::Uniform:
    case InitKind::Normal: {
      PhiloxBlock block =
          philox4x32_10(philoxCounter(static_cast<uint64_t>(i), stream), key);
      if (init.kind == InitKind::Uniform) {
        double u = uniform53FromWords(block.words[0], block.words[1]);
        value = init.first + (init.second - init.first) * u;
      } else { // Box-Muller
        double u1 = uniformOpenFromWord(block.words[0]);
        double u2 = uniformFromWord(block.words[1]);
        value = init.first + init.second * std::sqrt(-2.0 * std::log(u1)) *
                                 std::cos(twoPi * u2);
      }
      break;
    }
    }
    if (wide)
      static_cast<double *>(data)[i] =
          static_cast<double>(static_cast<float>(value));
    else
      static_cast<float *>(data)[i] = static_cast<float>(value);
  }
}
