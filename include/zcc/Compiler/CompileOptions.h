//===- CompileOptions.h - the compiler's options, from OptionList.h -*- C++ -*-===//
//
// CompileOptions is OptionList.h's rows as members; compileOptionTable() is
// the same rows as data, which the binders read (zcc's flags, the C API,
// Python, the pipeline's option string, the docs). check() checks each
// row's rule and the rules between options, once; the passes check their
// own options with it too (ZCC_OPTIONS_OF_PASS). MLIR-free.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_COMPILER_COMPILEOPTIONS_H
#define ZCC_COMPILER_COMPILEOPTIONS_H

#include "zcc/Compiler/OptionList.h"

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

namespace zcc {

// The C++ types of the kinds.
#define ZCC_OPTION_TYPE_Flag bool
#define ZCC_OPTION_TYPE_Int int64_t
#define ZCC_OPTION_TYPE_Bytes int64_t
#define ZCC_OPTION_TYPE_Real double
#define ZCC_OPTION_TYPE_Text std::string
#define ZCC_OPTION_TYPE_Names std::vector<std::string>

/// The options of `zcc`, with its defaults: one member per row of
/// OptionList.h (docs/generated/CompileOptions.md says what each means).
struct CompileOptions {
#define ZCC_OPTION_MEMBER(kind, member, name, init, rule, help)                \
  ZCC_OPTION_TYPE_##kind member = init;
  ZCC_COMPILE_OPTIONS(ZCC_OPTION_MEMBER)
#undef ZCC_OPTION_MEMBER
};

namespace options {

enum class Kind { Flag, Int, Bytes, Real, Text, Names };
/// "flag", "integer", "bytes", "number", "text", "names": the kinds as the
/// docs and Python name them.
const char *kindName(Kind kind);

/// A rule one option's value must keep.
struct Rule {
  enum Test { Any, AtLeast, Above, Below1, OneOf, PowerOfTwo, NotEmpty };
  Test test = Any;
  double bound = 0;
  const char *choices = ""; // OneOf: "a|b|c"

  /// Empty when `value` keeps the rule, else what it must be ("must be >=
  /// 0"); numbers must be finite.
  std::string check(double value) const;
  std::string check(const std::string &value) const;
  std::string check(const std::vector<std::string> &values) const;
  std::string check(bool) const { return {}; }
  std::string check(int64_t value) const {
    return check(static_cast<double>(value));
  }
  /// The rule in words (">= 0", "'sgd', 'adamw' or 'none'"); empty: Any.
  std::string text() const;
};

// The rules' spellings in OptionList.h.
inline constexpr Rule Any{};
inline constexpr Rule AtLeast(double x) { return {Rule::AtLeast, x}; }
inline constexpr Rule Above(double x) { return {Rule::Above, x}; }
inline constexpr Rule Below1{Rule::Below1};
inline constexpr Rule OneOf(const char *choices) {
  return {Rule::OneOf, 0, choices};
}
inline constexpr Rule PowerOfTwo{Rule::PowerOfTwo};
inline constexpr Rule NotEmpty{Rule::NotEmpty};

/// "weight-decay" for "weight_decay": zcc's flag, the pass option's name.
std::string flagName(std::string_view name);

/// "option 'lr' must be >= 0, got -1": an option that breaks its rule.
std::string ruleMessage(std::string_view name, std::string_view rule,
                        const std::string &value);
std::string valueText(bool value);
std::string valueText(int64_t value);
std::string valueText(double value);
std::string valueText(const std::string &value);
std::string valueText(const std::vector<std::string> &values);

/// The first broken rule of `options` as a message ("option 'lr' must be
/// >= 0, got -1"), empty when none is: each option's own rule (its row),
/// then the rules between options (the schedule's steps in order, min-lr
/// at most lr, nesterov with momentum, ZeRO-1 with data-parallel and a
/// world size, an optimizer for a schedule, clipping or data-parallel, a
/// budget for the recompute problem). The one place each rule is checked:
/// the compile driver and every pass (on ZCC_OPTIONS_OF_PASS) call it.
std::string check(const CompileOptions &options);

/// A pass's own options (`pass`, with the members of `LIST`'s rows, as the
/// generated pass options have) as CompileOptions, the other rows at their
/// defaults: what a pass hands to check(). An expression.
#define ZCC_OPTIONS_OF_PASS(LIST, pass)                                        \
  [&](const auto &zccPass_) {                                                  \
    ::zcc::CompileOptions zccOptions_;                                         \
    LIST(ZCC_OPTION_FROM_PASS_)                                                \
    return zccOptions_;                                                        \
  }(pass)
#define ZCC_OPTION_FROM_PASS_(kind, member, name, init, rule, help)            \
  zccOptions_.member =                                                         \
      ::zcc::options::plainValue<ZCC_OPTION_TYPE_##kind>(zccPass_.member);

/// An option's value as its plain type T, from T itself or a pass's
/// Option<T> / ListOption<std::string>.
template <class T, class From> T plainValue(const From &value) {
  if constexpr (std::is_same_v<T, std::vector<std::string>>)
    return T(value.begin(), value.end());
  else
    return static_cast<T>(value);
}

/// One row of OptionList.h as data.
struct Info {
  Kind kind;
  const char *member; // C++: "weightDecay"
  const char *name;   // C and Python: "weight_decay"
  std::string flag; // zcc and the passes: "weight-decay"
  const char *help;
  Rule rule;
  const char *pass; // the pass that reads it ("zt-optimizer"), or "zcc"
  const char *init; // the default as written in OptionList.h
  std::variant<bool CompileOptions::*, int64_t CompileOptions::*,
               double CompileOptions::*, std::string CompileOptions::*,
               std::vector<std::string> CompileOptions::*>
      field;
};

/// Every option, in OptionList.h's order.
const std::vector<Info> &table();
/// The option named `name` ("weight_decay" or "weight-decay"); null if none.
const Info *find(std::string_view name);
/// The nearest names to `name`, for "did you mean" ("" when none is close).
std::string suggestion(std::string_view name);

/// Sets `option` from text: a Flag from "true"/"false"/"1"/"0" (empty:
/// true), an Int from an integer, Bytes from an integer or a number with a
/// unit (KB MB GB, KiB MiB GiB), a Real from a number, Text as is, Names
/// comma-separated (appended). The message names the option and the text.
std::string setFromText(CompileOptions &options, const Info &option,
                        std::string_view text);
/// `options`' value of `option` as text, as setFromText reads it.
std::string textOf(const CompileOptions &options, const Info &option);

/// "lr=0.1 optimizer=adamw no-weight-decay=a,b accumulate": options as one
/// string (the zcc-train-step pipeline's, zt-opt's), each set in order.
std::string setFromString(CompileOptions &options, std::string_view text);

} // namespace options
} // namespace zcc

#endif // ZCC_COMPILER_COMPILEOPTIONS_H
