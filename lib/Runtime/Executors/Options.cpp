//===- Options.cpp - the executor options' names --------------------------===//

#include "zcc/Runtime/Executors/Options.h"

#include "zcc/Runtime/Plan/PlanEnums.h"

using namespace zcc::runtime;

namespace {

// Each option's values and their names (PlanEnums.h's lookups).
constexpr NamedValue<ExecutionMode> kModes[] = {
    {ExecutionMode::Planned, "Planned", "planned"},
    {ExecutionMode::NoReuse, "NoReuse", "no-reuse"},
    {ExecutionMode::Poison, "Poison", "poison"}};
constexpr NamedValue<Precision> kPrecisions[] = {
    {Precision::F32, "F32", "f32"}, {Precision::F64, "F64", "f64"}};
constexpr NamedValue<DeviceKind> kDevices[] = {
    {DeviceKind::Cpu, "Cpu", "cpu"},
    {DeviceKind::Cuda, "Cuda", "cuda"},
    {DeviceKind::Emulator, "Emulator", "emulator"}};
constexpr NamedValue<LaunchMode> kLaunchModes[] = {
    {LaunchMode::Graph, "Graph", "graph"},
    {LaunchMode::Eager, "Eager", "eager"}};

template <typename E, size_t N>
bool parseIn(const NamedValue<E> (&table)[N], std::string_view name, E &out) {
  std::optional<E> value = valueIn(table, name);
  if (value)
    out = *value;
  return value.has_value();
}

} // namespace

const char *zcc::runtime::executionModeName(ExecutionMode mode) {
  return nameIn(kModes, mode);
}
const char *zcc::runtime::precisionName(Precision precision) {
  return nameIn(kPrecisions, precision);
}
const char *zcc::runtime::deviceKindName(DeviceKind kind) {
  return nameIn(kDevices, kind);
}
const char *zcc::runtime::launchModeName(LaunchMode mode) {
  return nameIn(kLaunchModes, mode);
}

bool zcc::runtime::parseExecutionMode(std::string_view name,
                                      ExecutionMode &out) {
  return parseIn(kModes, name, out);
}
bool zcc::runtime::parsePrecision(std::string_view name, Precision &out) {
  return parseIn(kPrecisions, name, out);
}
bool zcc::runtime::parseDeviceKind(std::string_view name, DeviceKind &out) {
  return parseIn(kDevices, name, out);
}
bool zcc::runtime::parseLaunchMode(std::string_view name, LaunchMode &out) {
  return parseIn(kLaunchModes, name, out);
}
