//===- Launch.cpp - kernel names and decoding launch parameters -----------===//

#include "zcc/Runtime/Plan/Launch.h"

#include <iterator>
#include <type_traits>

using namespace zcc::runtime;

namespace {

constexpr const char *kKernelNames[] = {
#define ZRT_KERNEL_NAME(id, name, ...) name,
    ZRT_KERNEL_LIST(ZRT_KERNEL_NAME)
#undef ZRT_KERNEL_NAME
};
static_assert(std::size(kKernelNames) ==
                  static_cast<size_t>(KernelId::NumKernels),
              "one name per kernel");

const char *kindName(ParamKind kind) {
  switch (kind) {
  case ParamKind::Unit:
    return "a unit flag";
  case ParamKind::Int:
    return "an int";
  case ParamKind::Float:
    return "a float";
  case ParamKind::Ints:
    return "an int list";
  case ParamKind::Floats:
    return "a float list";
  case ParamKind::Names:
    return "a list of names";
  }
  return "an unknown kind";
}

// A parameter's value by its member's type: Float, Int, Ints, Floats or
// Names.
void load(const Param &p, double &value) { value = p.floatValue; }
void load(const Param &p, int64_t &value) { value = p.intValue; }
void load(const Param &p, std::vector<int64_t> &value) { value = p.ints; }
void load(const Param &p, std::vector<double> &value) { value = p.floats; }
void load(const Param &p, std::vector<std::string> &value) {
  value = p.names;
}
void store(double value, Param &p) { p.floatValue = value; }
void store(int64_t value, Param &p) { p.intValue = value; }
void store(const std::vector<int64_t> &value, Param &p) { p.ints = value; }
void store(const std::vector<double> &value, Param &p) { p.floats = value; }
void store(const std::vector<std::string> &value, Param &p) {
  p.names = value;
}

/// The launch's parameters, each claimed at most once by a row of the
/// kernel's table, so that whatever is left unclaimed is not the kernel's.
class Decoder {
public:
  explicit Decoder(const std::vector<Param> &params)
      : params(params), claimed(params.size(), false) {}

  template <typename T>
  Status read(const char *name, ParamKind kind, T &value) {
    const Param *p = nullptr;
    ZRT_RETURN_IF_ERROR(claim(name, kind, p));
    load(*p, value);
    return Status::ok();
  }
  /// An optional parameter: absent is nullopt.
  template <typename T>
  Status read(const char *name, ParamKind kind, std::optional<T> &value) {
    const Param *p = nullptr;
    if (!find(name, p)) {
      value.reset();
      return Status::ok();
    }
    ZRT_RETURN_IF_ERROR(check(name, kind, *p));
    load(*p, value.emplace());
    return Status::ok();
  }
  /// A unit flag: absent is false.
  Status read(const char *name, ParamKind kind, bool &value) {
    const Param *p = nullptr;
    value = find(name, p);
    return value ? check(name, kind, *p) : Status::ok();
  }

  /// The first parameter no row claimed, if any.
  Status rest(KernelId id) const {
    for (size_t i = 0; i < params.size(); ++i)
      if (!claimed[i])
        return makeError(StatusCode::InvalidPlan, "unknown parameter '",
                         params[i].name, "' (", kernelName(id),
                         " takes no such parameter)");
    return Status::ok();
  }

private:
  bool find(const char *name, const Param *&found) {
    for (size_t i = 0; i < params.size(); ++i)
      if (params[i].name == name) {
        claimed[i] = true;
        found = &params[i];
        return true;
      }
    return false;
  }

  Status check(const char *name, ParamKind kind, const Param &p) const {
    for (const Param &other : params)
      if (&other != &p && other.name == name)
        return makeError(StatusCode::InvalidPlan, "parameter '", name,
                         "' is stated twice");
    if (p.kind != kind)
      return makeError(StatusCode::InvalidPlan, "parameter '", name,
                       "' must be ", kindName(kind), ", got ",
                       kindName(p.kind));
    return Status::ok();
  }

  Status claim(const char *name, ParamKind kind, const Param *&found) {
    if (!find(name, found))
      return makeError(StatusCode::InvalidPlan, "missing parameter '", name,
                       "' (", kindName(kind), ")");
    return check(name, kind, *found);
  }

  const std::vector<Param> &params;
  std::vector<bool> claimed;
};

template <typename T>
Param encodeValue(const char *name, ParamKind kind, const T &value) {
  Param p{name, kind};
  store(value, p);
  return p;
}

} // namespace

const char *zcc::runtime::kernelName(KernelId id) {
  size_t index = static_cast<size_t>(id);
  return index < std::size(kKernelNames) ? kKernelNames[index] : "?";
}

std::optional<KernelId> zcc::runtime::findKernel(std::string_view name) {
  for (size_t i = 0; i < std::size(kKernelNames); ++i)
    if (name == kKernelNames[i])
      return static_cast<KernelId>(i);
  return std::nullopt;
}

const ElementRow *zcc::runtime::elementRow(KernelId id) {
  size_t index = static_cast<size_t>(id);
  return index < std::size(kElementRows) ? &kElementRows[index] : nullptr;
}

std::optional<ElementArity> zcc::runtime::elementArity(KernelId id) {
  if (const ElementRow *row = elementRow(id))
    return row->arity;
  return std::nullopt;
}

std::vector<ParamSpec> zcc::runtime::kernelParamSpecs(KernelId kernel) {
  std::vector<ParamSpec> specs;
#define ZRT_PARAM_SPEC(k, name, kind, member)                                  \
  if (kernel == KernelId::k)                                                   \
    specs.push_back({name, ParamKind::kind});
  ZRT_KERNEL_PARAM_LIST(ZRT_PARAM_SPEC)
#undef ZRT_PARAM_SPEC
  if (const ElementRow *row = elementRow(kernel))
    for (int k = 0; k < row->paramCount; ++k)
      specs.push_back({row->paramNames[k], ParamKind::Float});
  return specs;
}

bool LaunchParams::operator==(const LaunchParams &other) const {
#define ZRT_SAME_PARAM(k, name, kind, member)                                  \
  if (!(member == other.member))                                               \
    return false;
  ZRT_KERNEL_PARAM_LIST(ZRT_SAME_PARAM)
#undef ZRT_SAME_PARAM
  for (int k = 0; k < kMaxElementParams; ++k)
    if (!(elementParams[k] == other.elementParams[k]))
      return false;
  return true;
}

Status zcc::runtime::decodeLaunch(std::string_view kernel,
                                  const std::vector<Param> &params,
                                  Launch &out) {
  std::optional<KernelId> id = findKernel(kernel);
  if (!id)
    return makeError(StatusCode::InvalidPlan, "unknown kernel '", kernel, "'");
  out.kernel = *id;
  out.params = LaunchParams();
  Decoder decoder(params);
#define ZRT_DECODE_PARAM(k, name, kind, member)                                \
  if (*id == KernelId::k)                                                      \
    ZRT_RETURN_IF_ERROR(                                                       \
        decoder.read(name, ParamKind::kind, out.params.member));
  ZRT_KERNEL_PARAM_LIST(ZRT_DECODE_PARAM)
#undef ZRT_DECODE_PARAM
  if (const ElementRow *row = elementRow(*id))
    for (int k = 0; k < row->paramCount; ++k)
      ZRT_RETURN_IF_ERROR(decoder.read(row->paramNames[k], ParamKind::Float,
                                       out.params.elementParams[k]));
  return decoder.rest(*id);
}

std::vector<Param> zcc::runtime::encodeParams(const Launch &launch) {
  std::vector<Param> params;
  auto add = [&](const char *name, ParamKind kind, const auto &value) {
    using V = std::decay_t<decltype(value)>;
    if constexpr (std::is_same_v<V, bool>) {
      if (value)
        params.push_back(Param{name, kind});
    } else if constexpr (std::is_same_v<V, std::optional<int64_t>> ||
                         std::is_same_v<V, std::optional<double>>) {
      if (value)
        params.push_back(encodeValue(name, kind, *value));
    } else {
      params.push_back(encodeValue(name, kind, value));
    }
  };
#define ZRT_ENCODE_PARAM(k, name, kind, member)                                \
  if (launch.kernel == KernelId::k)                                            \
    add(name, ParamKind::kind, launch.params.member);
  ZRT_KERNEL_PARAM_LIST(ZRT_ENCODE_PARAM)
#undef ZRT_ENCODE_PARAM
  if (const ElementRow *row = elementRow(launch.kernel))
    for (int k = 0; k < row->paramCount; ++k)
      add(row->paramNames[k], ParamKind::Float,
          launch.params.elementParams[k]);
  return params;
}
