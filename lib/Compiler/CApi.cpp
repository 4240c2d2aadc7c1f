//===- CApi.cpp - zcc.h over the in-process compiler ----------------------===//

#include "zcc/zcc.h"

#include "zcc/Compiler/Compile.h"
#include "zcc/Runtime/Plan/PlanFile.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <string_view>

namespace {

/// One message per warning: notes are indented under theirs.
void report(std::string_view warnings, const zcc_compile_options &options) {
  std::string message;
  auto flush = [&] {
    if (message.empty())
      return;
    if (options.warning)
      options.warning(options.warning_context, message.c_str());
    else
      std::fprintf(stderr, "%s\n", message.c_str());
    message.clear();
  };
  while (!warnings.empty()) {
    size_t end = warnings.find('\n');
    std::string_view line = warnings.substr(0, end);
    warnings.remove_prefix(end == std::string_view::npos ? warnings.size()
                                                         : end + 1);
    if (!line.empty() && line[0] == ' ' && !message.empty()) {
      message.append("\n").append(line);
      continue;
    }
    flush();
    message = line;
  }
  flush();
}

// The C fields' values from and to CompileOptions' (OptionList.h's kinds).
int toC(bool value) { return value ? 1 : 0; }
int64_t toC(int64_t value) { return value; }
double toC(double value) { return value; }
const char *toC(const std::string &value) { return value.c_str(); }
const char *toC(const std::vector<std::string> &) { return nullptr; }

void fromC(int value, bool &out) { out = value != 0; }
void fromC(int64_t value, int64_t &out) { out = value; }
void fromC(double value, double &out) { out = value; }
void fromC(const char *value, std::string &out) {
  if (value) // NULL keeps the default
    out = value;
}
void fromC(const char *value, std::vector<std::string> &out) {
  if (!value || !*value)
    return;
  std::string_view names = value;
  for (size_t at = 0; at <= names.size();) {
    size_t comma = std::min(names.find(',', at), names.size());
    out.emplace_back(names.substr(at, comma - at));
    at = comma + 1;
  }
}

} // namespace

extern "C" {

void zcc_compile_options_init(zcc_compile_options *options) {
  if (!options)
    return;
  // Text points into these defaults, which live as long as the library.
  static const zcc::CompileOptions defaults;
#define ZCC_C_DEFAULT(kind, member, name, init, rule, help)                    \
  options->name = toC(defaults.member);
  ZCC_COMPILE_OPTIONS(ZCC_C_DEFAULT)
#undef ZCC_C_DEFAULT
  options->warning = nullptr;
  options->warning_context = nullptr;
}

zrt_status zcc_compile(const char *source, size_t size, const char *name,
                       const zcc_compile_options *options,
                       zrt_plan **out_plan) {
  if (!source || !options || !out_plan)
    return zrt_status_create(ZRT_INVALID_ARGUMENT, "zcc_compile: null argument");
  zcc::CompileOptions compile;
#define ZCC_FROM_C(kind, member, name, init, rule, help)                       \
  fromC(options->name, compile.member);
  ZCC_COMPILE_OPTIONS(ZCC_FROM_C)
#undef ZCC_FROM_C
  zcc::runtime::Plan plan;
  std::string warnings;
  zcc::runtime::Status status =
      zcc::compileSource(std::string_view(source, size),
                         name ? name : "<source>", compile, plan, &warnings);
  if (!status.isOk())
    return zrt_status_create(static_cast<zrt_status_code>(status.code()),
                             status.toString().c_str());
  // Through the runtime's own reader: the C plan object is the one
  // zrt_plan_load_* makes, and the bytes are checked once more.
  std::vector<uint8_t> bytes = zcc::runtime::serializePlan(plan);
  if (zrt_status s = zrt_plan_load_bytes(bytes.data(), bytes.size(), out_plan))
    return s;
  report(warnings, *options);
  return nullptr;
}

} // extern "C"
