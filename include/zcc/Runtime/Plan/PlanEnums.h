//===- PlanEnums.h - the plan's enums, named once ----------------*- C++ -*-===//
//
// X(Id, value, "name"): each enum of a plan that has a name in text (the
// zplan dialect's keywords, reports, the memory timeline's JSON), with the
// value its .zplan file stores (zplan_enums.fbs; the static_asserts below
// hold the two together). The zplan dialect's enum attributes are generated
// from these lists (GenPlanEnums.cpp), and every name the runtime prints
// comes from them: nothing else spells them.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_RUNTIME_PLANENUMS_H
#define ZCC_RUNTIME_PLANENUMS_H

#include "zcc/Runtime/Plan/zplan_enums_generated.h"

#include <cstddef>
#include <optional>
#include <string_view>

#define ZRT_REGION_LIST(X)                                                     \
  X(Arena, 0, "arena")                                                         \
  X(Persistent, 1, "persistent")                                               \
  X(Input, 2, "input")                                                         \
  X(Output, 3, "output")                                                       \
  X(Constant, 4, "constant")

#define ZRT_ENTRY_KIND_LIST(X)                                                 \
  X(TrainStep, 0, "train_step")                                                \
  X(Microbatch, 1, "microbatch")                                               \
  X(Apply, 2, "apply")

// None: a tensor that is neither an input nor an output (no role in text).
#define ZRT_TENSOR_ROLE_LIST(X)                                                \
  X(None, 0, "none")                                                           \
  X(Input, 1, "input")                                                         \
  X(Label, 2, "label")                                                         \
  X(Step, 3, "step")                                                           \
  X(Loss, 4, "loss")                                                           \
  X(Gradient, 5, "gradient")

#define ZRT_PHASE_LIST(X)                                                      \
  X(Forward, 0, "forward")                                                     \
  X(Backward, 1, "backward")                                                   \
  X(Update, 2, "update")                                                       \
  X(Recompute, 3, "recompute")

namespace zcc::runtime {

// Each list states every value of its schema enum, in order.
#define ZRT_ENUM_CHECK(Enum, id, value, name)                                  \
  static_assert(static_cast<int>(fb::Enum::id) == value,                       \
                #Enum "::" #id " is not the schema's value");
#define ZRT_REGION_CHECK(id, value, name) ZRT_ENUM_CHECK(Region, id, value, name)
#define ZRT_ENTRY_KIND_CHECK(id, value, name)                                  \
  ZRT_ENUM_CHECK(EntryKind, id, value, name)
#define ZRT_TENSOR_ROLE_CHECK(id, value, name)                                 \
  ZRT_ENUM_CHECK(TensorRole, id, value, name)
#define ZRT_PHASE_CHECK(id, value, name) ZRT_ENUM_CHECK(Phase, id, value, name)
ZRT_REGION_LIST(ZRT_REGION_CHECK)
ZRT_ENTRY_KIND_LIST(ZRT_ENTRY_KIND_CHECK)
ZRT_TENSOR_ROLE_LIST(ZRT_TENSOR_ROLE_CHECK)
ZRT_PHASE_LIST(ZRT_PHASE_CHECK)
#undef ZRT_REGION_CHECK
#undef ZRT_ENTRY_KIND_CHECK
#undef ZRT_TENSOR_ROLE_CHECK
#undef ZRT_PHASE_CHECK
#undef ZRT_ENUM_CHECK

#define ZRT_COUNT(...) +1
static_assert(0 ZRT_REGION_LIST(ZRT_COUNT) ==
                  static_cast<int>(fb::Region::MAX) + 1,
              "every region is named");
static_assert(0 ZRT_ENTRY_KIND_LIST(ZRT_COUNT) ==
                  static_cast<int>(fb::EntryKind::MAX) + 1,
              "every entry kind is named");
static_assert(0 ZRT_TENSOR_ROLE_LIST(ZRT_COUNT) ==
                  static_cast<int>(fb::TensorRole::MAX) + 1,
              "every tensor role is named");
static_assert(0 ZRT_PHASE_LIST(ZRT_COUNT) ==
                  static_cast<int>(fb::Phase::MAX) + 1,
              "every phase is named");
#undef ZRT_COUNT

/// A value and its name, for the lookups below.
template <typename E> struct NamedValue {
  E value;
  const char *name;
};
#define ZRT_NAMED(Enum, id, value, name) NamedValue<fb::Enum>{fb::Enum::id, name},
#define ZRT_NAMED_REGION(id, value, name) ZRT_NAMED(Region, id, value, name)
#define ZRT_NAMED_ENTRY_KIND(id, value, name) ZRT_NAMED(EntryKind, id, value, name)
#define ZRT_NAMED_TENSOR_ROLE(id, value, name)                                 \
  ZRT_NAMED(TensorRole, id, value, name)
#define ZRT_NAMED_PHASE(id, value, name) ZRT_NAMED(Phase, id, value, name)
inline constexpr NamedValue<fb::Region> kRegionNames[] = {
    ZRT_REGION_LIST(ZRT_NAMED_REGION)};
inline constexpr NamedValue<fb::EntryKind> kEntryKindNames[] = {
    ZRT_ENTRY_KIND_LIST(ZRT_NAMED_ENTRY_KIND)};
inline constexpr NamedValue<fb::TensorRole> kTensorRoleNames[] = {
    ZRT_TENSOR_ROLE_LIST(ZRT_NAMED_TENSOR_ROLE)};
inline constexpr NamedValue<fb::Phase> kPhaseNames[] = {
    ZRT_PHASE_LIST(ZRT_NAMED_PHASE)};
#undef ZRT_NAMED
#undef ZRT_NAMED_REGION
#undef ZRT_NAMED_ENTRY_KIND
#undef ZRT_NAMED_TENSOR_ROLE
#undef ZRT_NAMED_PHASE

template <typename E, size_t N>
constexpr const char *nameIn(const NamedValue<E> (&table)[N], E value) {
  for (const NamedValue<E> &entry : table)
    if (entry.value == value)
      return entry.name;
  return "?";
}
template <typename E, size_t N>
constexpr std::optional<E> valueIn(const NamedValue<E> (&table)[N],
                                   std::string_view name) {
  for (const NamedValue<E> &entry : table)
    if (name == entry.name)
      return entry.value;
  return std::nullopt;
}

/// "persistent", "train_step", "label", "backward" ("?" for a value no
/// list names: a corrupt file's).
inline const char *regionName(fb::Region v) { return nameIn(kRegionNames, v); }
inline const char *entryKindName(fb::EntryKind v) {
  return nameIn(kEntryKindNames, v);
}
inline const char *tensorRoleName(fb::TensorRole v) {
  return nameIn(kTensorRoleNames, v);
}
inline const char *phaseName(fb::Phase v) { return nameIn(kPhaseNames, v); }

/// The value of a name; none for an unknown one.
inline std::optional<fb::Region> parseRegion(std::string_view name) {
  return valueIn(kRegionNames, name);
}
inline std::optional<fb::EntryKind> parseEntryKind(std::string_view name) {
  return valueIn(kEntryKindNames, name);
}
inline std::optional<fb::TensorRole> parseTensorRole(std::string_view name) {
  return valueIn(kTensorRoleNames, name);
}
inline std::optional<fb::Phase> parsePhase(std::string_view name) {
  return valueIn(kPhaseNames, name);
}

} // namespace zcc::runtime

#endif // ZCC_RUNTIME_PLANENUMS_H
