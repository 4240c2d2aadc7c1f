//===- CsvFormat.cpp - MiniMalloc's CSV format ----------------------------===//

#include "zcc/Planner/CsvFormat.h"

#include <array>
#include <cerrno>
#include <cstdlib>
#include <istream>
#include <optional>
#include <ostream>
#include <unordered_map>

namespace zcc::planner {

namespace {

enum Column { Id, Lower, Upper, Size, Alignment, NumColumns };
constexpr std::array<const char *, NumColumns> kColumnNames = {
    "id", "lower", "upper", "size", "alignment"};

std::string trim(const std::string &text) {
  size_t begin = text.find_first_not_of(" \t\r");
  if (begin == std::string::npos)
    return "";
  size_t end = text.find_last_not_of(" \t\r");
  return text.substr(begin, end - begin + 1);
}

std::vector<std::string> splitFields(const std::string &line) {
  std::vector<std::string> fields;
  size_t start = 0;
  while (true) {
    size_t comma = line.find(',', start);
    fields.push_back(trim(line.substr(start, comma - start)));
    if (comma == std::string::npos)
      return fields;
    start = comma + 1;
  }
}

std::optional<int64_t> parseInteger(const std::string &text) {
  if (text.empty())
    return std::nullopt;
  errno = 0;
  char *end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end != text.c_str() + text.size())
    return std::nullopt;
  return value;
}

std::string lineError(size_t line, const std::string &message) {
  return "line " + std::to_string(line) + ": " + message;
}

} // namespace

bool readProblemCsv(std::istream &in, CsvProblem &out, std::string &error) {
  out = CsvProblem();
  std::string line;
  size_t lineNumber = 0;
  // The header: the first non-blank line.
  while (std::getline(in, line)) {
    ++lineNumber;
    if (!trim(line).empty())
      break;
    line.clear();
  }
  if (trim(line).empty()) {
    error = "empty input: expected a header naming the columns "
            "id,lower,upper,size[,alignment]";
    return false;
  }
  std::array<int, NumColumns> position;
  position.fill(-1);
  out.columns = splitFields(line);
  for (size_t i = 0; i < out.columns.size(); ++i) {
    const std::string &name = out.columns[i];
    int column = -1;
    for (int c = 0; c < NumColumns; ++c)
      if (name == kColumnNames[c])
        column = c;
    if (column < 0) {
      error = lineError(lineNumber, "unknown column '" + name +
                                        "'; expected id, lower, upper, size "
                                        "and optionally alignment");
      return false;
    }
    if (position[column] >= 0) {
      error = lineError(lineNumber, "column '" + name + "' appears twice");
      return false;
    }
    position[column] = static_cast<int>(i);
  }
  for (int c = 0; c < Alignment; ++c) {
    if (position[c] < 0) {
      error = lineError(lineNumber, std::string("missing column '") +
                                        kColumnNames[c] + "'");
      return false;
    }
  }

  std::unordered_map<int64_t, size_t> firstLineOfId;
  while (std::getline(in, line)) {
    ++lineNumber;
    if (trim(line).empty())
      continue;
    std::vector<std::string> fields = splitFields(line);
    if (fields.size() != out.columns.size()) {
      error = lineError(lineNumber,
                        "expected " + std::to_string(out.columns.size()) +
                            " fields, got " + std::to_string(fields.size()));
      return false;
    }
    std::array<int64_t, NumColumns> values = {0, 0, 0, 0, 1};
    for (int c = 0; c < NumColumns; ++c) {
      if (position[c] < 0)
        continue;
      const std::string &field = fields[position[c]];
      std::optional<int64_t> value = parseInteger(field);
      if (!value) {
        error =
            lineError(lineNumber, std::string("column '") + kColumnNames[c] +
                                      "': '" + field + "' is not an integer");
        return false;
      }
      values[c] = *value;
    }
    BufferRequest buffer;
    buffer.id = values[Id];
    buffer.lower = values[Lower];
    buffer.upper = values[Upper];
    buffer.size = values[Size];
    buffer.alignment = values[Alignment];
    if (buffer.size < 0) {
      error =
          lineError(lineNumber, "negative size " + std::to_string(buffer.size));
      return false;
    }
    if (buffer.upper <= buffer.lower) {
      error = lineError(lineNumber, "upper (" + std::to_string(buffer.upper) +
                                        ") must exceed lower (" +
                                        std::to_string(buffer.lower) + ")");
      return false;
    }
    if (buffer.alignment < 1 ||
        (buffer.alignment & (buffer.alignment - 1)) != 0) {
      error = lineError(lineNumber, "alignment " +
                                        std::to_string(buffer.alignment) +
                                        " is not a power of two");
      return false;
    }
    auto [it, inserted] = firstLineOfId.emplace(buffer.id, lineNumber);
    if (!inserted) {
      error =
          lineError(lineNumber, "duplicate id " + std::to_string(buffer.id) +
                                    " (first on line " +
                                    std::to_string(it->second) + ")");
      return false;
    }
    out.problem.buffers.push_back(buffer);
  }
  if (in.bad()) {
    error = "read error after line " + std::to_string(lineNumber);
    return false;
  }
  return true;
}

void writePlanCsv(std::ostream &out, const CsvProblem &input,
                  const Plan &plan) {
  std::vector<int> order; // column index per output column
  for (const std::string &name : input.columns)
    for (int c = 0; c < NumColumns; ++c)
      if (name == kColumnNames[c])
        order.push_back(c);
  for (const std::string &name : input.columns)
    out << name << ',';
  out << "offset\n";
  for (size_t i = 0; i < input.problem.buffers.size(); ++i) {
    const BufferRequest &b = input.problem.buffers[i];
    const int64_t values[NumColumns] = {b.id, b.lower, b.upper, b.size,
                                        b.alignment};
    for (int c : order)
      out << values[c] << ',';
    out << plan.offsets[i] << '\n';
  }
}

} // namespace zcc::planner
