//===- FormatNumber.h - numbers in zt diagnostics ---------------*- C++ -*-===//

#ifndef ZCC_LIB_DIALECT_ZT_FORMATNUMBER_H
#define ZCC_LIB_DIALECT_ZT_FORMATNUMBER_H

#include <cstdio>
#include <string>

namespace zcc::zt::detail {

/// Shortest readable form of a number for diagnostics: "0.1", not
/// "1.000000e-01" (what streaming a double into a diagnostic gives).
inline std::string formatNumber(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%g", value);
  return buffer;
}

} // namespace zcc::zt::detail

#endif // ZCC_LIB_DIALECT_ZT_FORMATNUMBER_H
