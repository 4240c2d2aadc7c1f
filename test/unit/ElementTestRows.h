//===- ElementTestRows.h - where the element rows are tested ------*- C++ -*-===//
//
// The element rows' test domain, shared by the kernels' gradient test
// (KernelsTest.cpp) and the capture API's (CaptureTest.cpp): a row whose
// operands must avoid a pole or stay in its domain, or whose default params
// would hide a branch, gets a line here; every other row is tested as is.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_TEST_UNIT_ELEMENTTESTROWS_H
#define ZCC_TEST_UNIT_ELEMENTTESTROWS_H

#include <string>
#include <vector>

namespace zcc::runtime::testing {

/// Where an element row is tested: operands drawn from [low, high] (away
/// from poles and outside the domain), and params other than the row's
/// defaults. Rows not listed: [-3, 3], their defaults.
struct ElementTestRow {
  const char *name;
  double low, high;
  std::vector<double> params;
  /// Its gradient is zero by definition, not its formula's derivative
  /// (stop_gradient): checked to be zero, not against finite differences.
  bool zeroGradient = false;
};
inline const ElementTestRow kElementTestRows[] = {
    {"div", 0.5, 3, {}},
    {"log", 0.5, 4, {}},
    {"sqrt", 0.5, 4, {}},
    {"rsqrt", 0.5, 4, {}},
    {"reciprocal", 0.5, 3, {}},
    {"clamp", -3, 3, {-1.5, 2}},
    {"hardswish", -5, 5, {}},
    {"hardsigmoid", -5, 5, {}},
    {"softplus", -3, 3, {2, 4}}, // both branches: 2x > 4 past x = 2
    {"leaky_relu", -3, 3, {0.2}},
    {"elu", -3, 3, {0.7}},
    {"pow", 0.5, 3, {2.5}},
    {"stop_gradient", -3, 3, {}, true},
};

inline ElementTestRow elementTestRow(const char *name) {
  for (const ElementTestRow &row : kElementTestRows)
    if (std::string(row.name) == name)
      return row;
  return {name, -3, 3, {}};
}

} // namespace zcc::runtime::testing

#endif // ZCC_TEST_UNIT_ELEMENTTESTROWS_H
