//===- CompileOptions.cpp - the options' table, rules and text ------------===//

#include "zcc/Compiler/CompileOptions.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>

namespace zcc::options {
namespace {

std::string shortest(double value) {
  char text[64];
  auto [end, error] = std::to_chars(text, text + sizeof(text), value);
  return error == std::errc() ? std::string(text, end) : std::to_string(value);
}

std::vector<Info> makeTable() {
  std::vector<Info> rows;
#define ZCC_OPTION_ROW(kind, member, name, init, rule, help)                   \
  rows.push_back(Info{Kind::kind, #member, #name, flagName(#name), help, rule, \
                      pass, #init, &CompileOptions::member});
  {
    using namespace ::zcc::options;
    const char *pass = "zt-optimizer";
    ZCC_OPTIMIZER_OPTIONS(ZCC_OPTION_ROW)
    pass = "zt-autodiff";
    ZCC_AUTODIFF_OPTIONS(ZCC_OPTION_ROW)
    pass = "zt-mixed-precision";
    ZCC_MIXED_PRECISION_OPTIONS(ZCC_OPTION_ROW)
    pass = "zt-remat";
    ZCC_REMAT_OPTIONS(ZCC_OPTION_ROW)
    pass = "zt-remat, zt-plan-memory";
    ZCC_LAYOUT_OPTIONS(ZCC_OPTION_ROW)
    pass = "zt-plan-memory";
    ZCC_PLAN_MEMORY_OPTIONS(ZCC_OPTION_ROW)
    pass = "zcc-train-step";
    ZCC_PIPELINE_OPTIONS(ZCC_OPTION_ROW)
    pass = "zcc";
    ZCC_EXPORT_OPTIONS(ZCC_OPTION_ROW)
  }
#undef ZCC_OPTION_ROW
  return rows;
}

size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1,
                         diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

bool parseInt(std::string_view text, int64_t &out) {
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(),
                                      out);
  return error == std::errc() && end == text.data() + text.size();
}

bool parseReal(std::string_view text, double &out) {
  std::string copy(text);
  char *end = nullptr;
  out = std::strtod(copy.c_str(), &end);
  return !copy.empty() && end == copy.c_str() + copy.size();
}

/// "2000", "64MiB", "1.5 GiB", "100KB": bytes, whole.
bool parseBytes(std::string_view text, int64_t &out) {
  if (parseInt(text, out))
    return true;
  size_t unitAt = text.find_first_not_of("0123456789.eE+-");
  if (unitAt == std::string_view::npos || unitAt == 0)
    return false;
  std::string_view number = text.substr(0, unitAt);
  std::string_view unit = text.substr(unitAt);
  while (!unit.empty() && unit.front() == ' ')
    unit.remove_prefix(1);
  static const std::pair<const char *, double> units[] = {
      {"B", 1},          {"KB", 1e3},         {"MB", 1e6},
      {"GB", 1e9},       {"KiB", 1024.0},     {"MiB", 1048576.0},
      {"GiB", 1073741824.0}};
  double value = 0;
  if (!parseReal(number, value) || !(value >= 0))
    return false;
  for (auto [name, scale] : units)
    if (unit == name) {
      double bytes = value * scale;
      if (!(bytes < 9.0e18))
        return false;
      out = static_cast<int64_t>(bytes);
      return true;
    }
  return false;
}

} // namespace

std::string Rule::check(double value) const {
  if (!std::isfinite(value))
    return "a finite number";
  switch (test) {
  case AtLeast:
    return value >= bound ? "" : ">= " + shortest(bound);
  case Above:
    return value > bound ? "" : "> " + shortest(bound);
  case Below1:
    return value >= 0 && value < 1 ? "" : ">= 0 and < 1";
  case PowerOfTwo: {
    int64_t whole = static_cast<int64_t>(value);
    return whole > 0 && whole == value && (whole & (whole - 1)) == 0
               ? ""
               : "a power of two";
  }
  default:
    return "";
  }
}

namespace {

/// "a|b|c" as its choices.
std::vector<std::string_view> choicesOf(std::string_view all) {
  std::vector<std::string_view> each;
  for (size_t at = 0; at <= all.size();) {
    size_t bar = std::min(all.find('|', at), all.size());
    each.push_back(all.substr(at, bar - at));
    at = bar + 1;
  }
  return each;
}

/// "'a', 'b' or 'c'".
std::string choicesText(std::string_view all) {
  std::vector<std::string_view> each = choicesOf(all);
  std::string names;
  for (size_t i = 0; i < each.size(); ++i)
    names += (i == 0 ? "" : i + 1 == each.size() ? " or " : ", ") +
             ("'" + std::string(each[i]) + "'");
  return names;
}

} // namespace

std::string Rule::check(const std::string &value) const {
  if (test == NotEmpty)
    return value.empty() ? "given (not empty)" : "";
  if (test != OneOf)
    return "";
  for (std::string_view choice : choicesOf(choices))
    if (choice == value)
      return "";
  return choicesText(choices);
}

std::string Rule::check(const std::vector<std::string> &values) const {
  if (test == NotEmpty)
    for (const std::string &value : values)
      if (value.empty())
        return "names or patterns (an empty one is a typo)";
  return "";
}

std::string Rule::text() const {
  switch (test) {
  case Any:
    return "";
  case AtLeast:
    return ">= " + shortest(bound);
  case Above:
    return "> " + shortest(bound);
  case Below1:
    return ">= 0 and < 1";
  case OneOf:
    return choicesText(choices);
  case PowerOfTwo:
    return "a power of two";
  case NotEmpty:
    return "not empty";
  }
  return "";
}

const char *kindName(Kind kind) {
  switch (kind) {
  case Kind::Flag:
    return "flag";
  case Kind::Int:
    return "integer";
  case Kind::Bytes:
    return "bytes";
  case Kind::Real:
    return "number";
  case Kind::Text:
    return "text";
  case Kind::Names:
    return "names";
  }
  return "";
}

std::string flagName(std::string_view name) {
  std::string flag(name);
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

std::string ruleMessage(std::string_view name, std::string_view rule,
                        const std::string &value) {
  return "option '" + std::string(name) + "' must be " + std::string(rule) +
         ", got " + value;
}

std::string valueText(bool value) { return value ? "true" : "false"; }
std::string valueText(int64_t value) { return std::to_string(value); }
std::string valueText(double value) { return shortest(value); }
std::string valueText(const std::string &value) { return "'" + value + "'"; }
std::string valueText(const std::vector<std::string> &values) {
  std::string text;
  for (const std::string &value : values)
    text += (text.empty() ? "'" : ",'") + value + "'";
  return text.empty() ? "nothing" : text;
}

std::string check(const CompileOptions &o) {
  std::string broken;
#define ZCC_CHECK_RULE(kind, member, name, init, rule, help)                   \
  if (broken.empty()) {                                                        \
    std::string why = (rule).check(o.member);                                  \
    if (!why.empty())                                                          \
      broken = ruleMessage(flagName(#name), why, valueText(o.member));         \
  }
  ZCC_COMPILE_OPTIONS(ZCC_CHECK_RULE)
#undef ZCC_CHECK_RULE
  if (!broken.empty())
    return broken;
  // The learning-rate schedule: its steps in order, min lr at most lr.
  const bool decays = o.lrDecay != "none";
  if (!decays && o.lrDecaySteps != 0)
    return ruleMessage("lr-decay-steps",
                       "0 without a decay (lr-decay cosine or linear)",
                       valueText(o.lrDecaySteps));
  if (!decays && o.minLr != 0)
    return ruleMessage("min-lr", "0 without a decay (lr-decay cosine or linear)",
                       valueText(o.minLr));
  if (decays && o.lrDecaySteps <= o.lrWarmupSteps)
    return ruleMessage("lr-decay-steps",
                       "> lr-warmup-steps (" + valueText(o.lrWarmupSteps) +
                           "): the step where the decay reaches min-lr, "
                           "counted from 0",
                       valueText(o.lrDecaySteps));
  if (o.minLr > o.lr)
    return ruleMessage("min-lr", "<= lr (" + valueText(o.lr) + ")",
                       valueText(o.minLr));
  if (o.optimizer == "sgd" && o.nesterov && o.momentum == 0)
    return "option 'nesterov' needs momentum > 0";
  if (o.fit > 0 && o.memoryBudget > 0)
    return "options 'fit' and 'memory-budget' both set the arena's budget: "
           "give one";
  if (!o.rematProblem.empty() && o.memoryBudget == 0)
    return "option 'remat-problem' ('" + o.rematProblem +
           "') needs a memory budget: without one nothing is recomputed";
  if (o.optimizer == "none") {
    const char *needs = "", *why = "";
    if (o.lrWarmupSteps > 0 || o.lrDecay != "none")
      needs = "a learning-rate schedule (lr-warmup-steps, lr-decay)",
      why = "the plan computes it for its updates";
    else if (o.clipGradNorm > 0)
      needs = "option 'clip-grad-norm'",
      why = "the updates read the clipped gradients, which are never "
            "materialized";
    else if (o.dataParallel)
      needs = "option 'data-parallel'",
      why = "the gradients are averaged over the ranks before the update";
    if (*needs)
      return std::string(needs) +
             " needs an optimizer in the plan (sgd or adamw): " + why;
  }
  if (o.shardOptimizerState && !o.dataParallel)
    return "option 'shard-optimizer-state' (ZeRO-1) is for data-parallel "
           "jobs: add data-parallel";
  if (o.shardOptimizerState && o.worldSize < 1)
    return "option 'shard-optimizer-state' needs the world size: "
           "'world-size' >= 1, got " +
           valueText(o.worldSize);
  if (!o.shardOptimizerState && o.worldSize != 0)
    return "option 'world-size' is fixed at compile time only with "
           "shard-optimizer-state; a data-parallel plan runs on any number "
           "of ranks";
  return {};
}

const std::vector<Info> &table() {
  static const std::vector<Info> rows = makeTable();
  return rows;
}

const Info *find(std::string_view name) {
  for (const Info &option : table())
    if (name == option.name || name == option.flag)
      return &option;
  return nullptr;
}

std::string suggestion(std::string_view name) {
  std::string flag = flagName(name);
  const Info *best = nullptr;
  size_t bestDistance = 3;
  for (const Info &option : table()) {
    size_t distance = editDistance(flag, option.flag);
    if (distance < bestDistance) {
      best = &option;
      bestDistance = distance;
    }
  }
  return best ? best->flag : "";
}

std::string setFromText(CompileOptions &options, const Info &option,
                        std::string_view text) {
  auto bad = [&](const char *what) {
    return "option '" + option.flag + "': '" + std::string(text) +
           "' is not " + what;
  };
  switch (option.kind) {
  case Kind::Flag: {
    bool value;
    if (text.empty() || text == "true" || text == "True" || text == "1")
      value = true;
    else if (text == "false" || text == "False" || text == "0")
      value = false;
    else
      return bad("true or false");
    options.*std::get<bool CompileOptions::*>(option.field) = value;
    return {};
  }
  case Kind::Int:
  case Kind::Bytes: {
    int64_t value;
    bool parsed = option.kind == Kind::Int ? parseInt(text, value)
                                           : parseBytes(text, value);
    if (!parsed)
      return bad(option.kind == Kind::Int
                     ? "a whole number"
                     : "a byte count (a whole number, or a number with a "
                       "unit: KB MB GB KiB MiB GiB)");
    options.*std::get<int64_t CompileOptions::*>(option.field) = value;
    return {};
  }
  case Kind::Real: {
    double value;
    if (!parseReal(text, value))
      return bad("a number");
    options.*std::get<double CompileOptions::*>(option.field) = value;
    return {};
  }
  case Kind::Text:
    options.*std::get<std::string CompileOptions::*>(option.field) =
        std::string(text);
    return {};
  case Kind::Names: {
    auto &names =
        options.*std::get<std::vector<std::string> CompileOptions::*>(
                     option.field);
    for (size_t at = 0; at <= text.size();) {
      size_t comma = std::min(text.find(',', at), text.size());
      names.emplace_back(text.substr(at, comma - at));
      at = comma + 1;
    }
    return {};
  }
  }
  return {};
}

std::string textOf(const CompileOptions &options, const Info &option) {
  return std::visit(
      [&](auto member) -> std::string {
        const auto &value = options.*member;
        using T = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<T, std::string>)
          return value;
        else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          std::string text;
          for (const std::string &name : value)
            text += (text.empty() ? "" : ",") + name;
          return text;
        } else
          return valueText(value);
      },
      option.field);
}

std::string setFromString(CompileOptions &options, std::string_view text) {
  size_t at = 0;
  while (at < text.size()) {
    if (text[at] == ' ' || text[at] == '\t' || text[at] == '\n') {
      ++at;
      continue;
    }
    size_t end = at;
    char quote = 0;
    for (; end < text.size(); ++end) {
      char c = text[end];
      if (quote)
        quote = c == quote ? 0 : quote;
      else if (c == '\'' || c == '"')
        quote = c;
      else if (c == ' ' || c == '\t' || c == '\n')
        break;
    }
    std::string_view item = text.substr(at, end - at);
    at = end;
    size_t equals = item.find('=');
    std::string_view name = item.substr(0, equals);
    std::string value(equals == std::string_view::npos
                          ? std::string_view()
                          : item.substr(equals + 1));
    value.erase(std::remove(value.begin(), value.end(), '\''), value.end());
    value.erase(std::remove(value.begin(), value.end(), '"'), value.end());
    const Info *option = find(name);
    if (!option) {
      std::string near = suggestion(name);
      return "unknown option '" + std::string(name) + "'" +
             (near.empty() ? "" : "; did you mean '" + near + "'?");
    }
    if (equals == std::string_view::npos && option->kind != Kind::Flag)
      return "option '" + option->flag + "' needs a value: " + option->flag +
             "=...";
    if (std::string bad = setFromText(options, *option, value); !bad.empty())
      return bad;
  }
  return {};
}

} // namespace zcc::options
