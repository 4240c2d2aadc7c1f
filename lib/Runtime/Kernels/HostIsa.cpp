//===- HostIsa.cpp - which instruction sets the host's loops run ----------===//
//
// The host's element and row loops have a copy per instruction set
// (HostRun.cpp); these choose one: the best the CPU runs, or the one
// ZCC_HOST_ISA asks for when the CPU runs it.
//
//===----------------------------------------------------------------------===//

#include "Kernels/HostRun.h"

#include <cstdlib>

using namespace zcc::runtime;
using namespace zcc::runtime::device;

const char *zcc::runtime::device::hostIsaName(HostIsa isa) {
  switch (isa) {
  case HostIsa::Baseline:
    return "baseline";
  case HostIsa::X86_64_V3:
    return "x86-64-v3";
  case HostIsa::X86_64_V4:
    return "x86-64-v4";
  }
  return "?";
}

HostIsa zcc::runtime::device::bestHostIsa() {
#ifdef ZRT_HOST_ISAS
  // Checks the instructions and that the OS saves their registers.
  static const HostIsa best =
      __builtin_cpu_supports("x86-64-v4")   ? HostIsa::X86_64_V4
      : __builtin_cpu_supports("x86-64-v3") ? HostIsa::X86_64_V3
                                            : HostIsa::Baseline;
  return best;
#else
  return HostIsa::Baseline;
#endif
}

Status zcc::runtime::device::parseHostIsa(std::string_view name, HostIsa &out) {
  HostIsa best = bestHostIsa();
  for (HostIsa isa :
       {HostIsa::Baseline, HostIsa::X86_64_V3, HostIsa::X86_64_V4}) {
    if (name != hostIsaName(isa))
      continue;
    if (static_cast<int>(isa) > static_cast<int>(best))
      return makeError(StatusCode::InvalidArgument, "host loops '", name,
                       "' need instructions this CPU lacks (it runs ",
                       hostIsaName(best), " at most)");
    out = isa;
    return Status::ok();
  }
  return makeError(StatusCode::InvalidArgument, "unknown host loops '", name,
                   "' (expected baseline, x86-64-v3 or x86-64-v4)");
}

Status zcc::runtime::device::hostIsaFromEnvironment(HostIsa &out) {
  const char *name = std::getenv("ZCC_HOST_ISA");
  if (!name || !*name) {
    out = bestHostIsa();
    return Status::ok();
  }
  Status s = parseHostIsa(name, out);
  if (!s.isOk())
    return makeError(s.code(), "ZCC_HOST_ISA: ", s.message());
  return Status::ok();
}
