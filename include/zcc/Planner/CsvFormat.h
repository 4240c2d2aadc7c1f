//===- CsvFormat.h - MiniMalloc's CSV format for planning problems -*- C++
//-*-===//
//
// `id,lower,upper,size[,alignment]`, columns named by the header in any order;
// a plan is written as the same rows with an `offset` column added.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_PLANNER_CSVFORMAT_H
#define ZCC_PLANNER_CSVFORMAT_H

#include "zcc/Planner/Problem.h"

#include <iosfwd>
#include <string>
#include <vector>

namespace zcc::planner {

struct CsvProblem {
  Problem problem;
  /// The input's column names in their order, to write them back the same way.
  std::vector<std::string> columns;
};

/// Parses a problem. On failure returns false and sets `error` to a message
/// that starts with the 1-based line number ("line 7: negative size -3").
bool readProblemCsv(std::istream &in, CsvProblem &out, std::string &error);

/// Writes the input rows, in order and with the input's columns, plus `offset`.
void writePlanCsv(std::ostream &out, const CsvProblem &input, const Plan &plan);

} // namespace zcc::planner

#endif // ZCC_PLANNER_CSVFORMAT_H
