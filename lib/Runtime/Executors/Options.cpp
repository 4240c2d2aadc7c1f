//===- Options.cpp - the executor options' names --------------------------===//

#include "zcc/Runtime/Executors/Options.h"

#include <cstddef>

using namespace zcc::runtime;

const char *zcc::runtime::deviceKindName(DeviceKind kind) {
  switch (kind) {
  case DeviceKind::Cpu:
    return "cpu";
  case DeviceKind::Cuda:
    return "cuda";
  case DeviceKind::Emulator:
    return "emulator";
  }
  return "?";
}

const char *zcc::runtime::launchModeName(LaunchMode mode) {
  return mode == LaunchMode::Graph ? "graph" : "eager";
}

const char *zcc::runtime::executionModeName(ExecutionMode mode) {
  switch (mode) {
  case ExecutionMode::Planned:
    return "planned";
  case ExecutionMode::NoReuse:
    return "no-reuse";
  case ExecutionMode::Poison:
    return "poison";
  }
  return "?";
}

const char *zcc::runtime::precisionName(Precision precision) {
  return precision == Precision::F64 ? "f64" : "f32";
}

namespace {
/// The value among `values` whose name is `name`.
template <typename E, size_t N>
bool parseByName(std::string_view name, const E (&values)[N],
                 const char *(*nameOf)(E), E &out) {
  for (E value : values)
    if (name == nameOf(value)) {
      out = value;
      return true;
    }
  return false;
}
} // namespace

bool zcc::runtime::parseExecutionMode(std::string_view name,
                                      ExecutionMode &out) {
  static const ExecutionMode all[] = {ExecutionMode::Planned,
                                      ExecutionMode::NoReuse,
                                      ExecutionMode::Poison};
  return parseByName(name, all, executionModeName, out);
}

bool zcc::runtime::parsePrecision(std::string_view name, Precision &out) {
  static const Precision all[] = {Precision::F32, Precision::F64};
  return parseByName(name, all, precisionName, out);
}

bool zcc::runtime::parseDeviceKind(std::string_view name, DeviceKind &out) {
  static const DeviceKind all[] = {DeviceKind::Cpu, DeviceKind::Cuda,
                                   DeviceKind::Emulator};
  return parseByName(name, all, deviceKindName, out);
}

bool zcc::runtime::parseLaunchMode(std::string_view name, LaunchMode &out) {
  static const LaunchMode all[] = {LaunchMode::Graph, LaunchMode::Eager};
  return parseByName(name, all, launchModeName, out);
}
