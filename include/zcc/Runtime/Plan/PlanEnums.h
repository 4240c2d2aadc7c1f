//===- PlanEnums.h - the plan's enums, named once ----------------*- C++ -*-===//
//
// X(Enum, Id, "name"): each enum of a plan that has a name in text (the
// zplan dialect's keywords, reports, the memory timeline's JSON), in the
// order of its values in the .zplan file (zplan_enums.fbs; the
// static_asserts below hold the two together). The zplan dialect's enum attributes are generated
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
  X(Region, Arena, "arena")                                                    \
  X(Region, Persistent, "persistent")                                          \
  X(Region, Input, "input")                                                    \
  X(Region, Output, "output")                                                  \
  X(Region, Constant, "constant")

#define ZRT_ENTRY_KIND_LIST(X)                                                 \
  X(EntryKind, TrainStep, "train_step")                                        \
  X(EntryKind, Microbatch, "microbatch")                                       \
  X(EntryKind, Apply, "apply")                                                 \
  X(EntryKind, Eval, "eval")                                                   \
  X(EntryKind, Predict, "predict")

// None: a tensor that is neither an input nor an output (no role in text).
#define ZRT_TENSOR_ROLE_LIST(X)                                                \
  X(TensorRole, None, "none")                                                  \
  X(TensorRole, Input, "input")                                                \
  X(TensorRole, Label, "label")                                                \
  X(TensorRole, Step, "step")                                                  \
  X(TensorRole, Loss, "loss")                                                  \
  X(TensorRole, Gradient, "gradient")                                          \
  X(TensorRole, Output, "output")

#define ZRT_PHASE_LIST(X)                                                      \
  X(Phase, Forward, "forward")                                                 \
  X(Phase, Backward, "backward")                                               \
  X(Phase, Update, "update")                                                   \
  X(Phase, Recompute, "recompute")

namespace zcc::runtime {

/// A value, its C++ identifier (for the generated ODS) and its name.
template <typename E> struct NamedValue {
  E value;
  const char *id;
  const char *name;
};
#define ZRT_NAMED(Enum, id, name) NamedValue<fb::Enum>{fb::Enum::id, #id, name},
inline constexpr NamedValue<fb::Region> kRegionNames[] = {
    ZRT_REGION_LIST(ZRT_NAMED)};
inline constexpr NamedValue<fb::EntryKind> kEntryKindNames[] = {
    ZRT_ENTRY_KIND_LIST(ZRT_NAMED)};
inline constexpr NamedValue<fb::TensorRole> kTensorRoleNames[] = {
    ZRT_TENSOR_ROLE_LIST(ZRT_NAMED)};
inline constexpr NamedValue<fb::Phase> kPhaseNames[] = {
    ZRT_PHASE_LIST(ZRT_NAMED)};
#undef ZRT_NAMED

/// Whether `table` names every value of its schema enum, in value order.
template <typename E, size_t N>
constexpr bool coversSchema(const NamedValue<E> (&table)[N]) {
  for (size_t i = 0; i < N; ++i)
    if (static_cast<size_t>(table[i].value) != i)
      return false;
  return N == static_cast<size_t>(E::MAX) + 1;
}
static_assert(coversSchema(kRegionNames), "every region named, in order");
static_assert(coversSchema(kEntryKindNames), "every entry kind, in order");
static_assert(coversSchema(kTensorRoleNames), "every tensor role, in order");
static_assert(coversSchema(kPhaseNames), "every phase named, in order");

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

/// The region a role's tensor lives in: inputs, labels and the step are
/// written before a run (Input), losses, gradients and predictions read
/// after it (Output); None has none.
inline std::optional<fb::Region> regionOfRole(fb::TensorRole role) {
  switch (role) {
  case fb::TensorRole::Input:
  case fb::TensorRole::Label:
  case fb::TensorRole::Step:
    return fb::Region::Input;
  case fb::TensorRole::Loss:
  case fb::TensorRole::Gradient:
  case fb::TensorRole::Output:
    return fb::Region::Output;
  default:
    return std::nullopt;
  }
}

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
