//===- PlanReport.cpp -----------------------------------------------------===//

#include "zcc/Runtime/Plan/PlanReport.h"

#include <algorithm>
#include <cstdio>

using namespace zcc::runtime;

namespace {

std::string bytes(uint64_t n) {
  char buffer[64];
  if (n >= (1ull << 20))
    std::snprintf(buffer, sizeof(buffer), "%llu bytes (%.2f MiB)",
                  static_cast<unsigned long long>(n), n / 1048576.0);
  else if (n >= 1024)
    std::snprintf(buffer, sizeof(buffer), "%llu bytes (%.1f KiB)",
                  static_cast<unsigned long long>(n), n / 1024.0);
  else
    std::snprintf(buffer, sizeof(buffer), "%llu bytes",
                  static_cast<unsigned long long>(n));
  return buffer;
}

} // namespace

std::string zcc::runtime::formatPlanReport(const Plan &plan, int largest) {
  std::string out;
  char line[256];
  for (const Entry &e : plan.entries) {
    out += "entry '" + e.name + "' (" + entryKindName(e.kind) +
           "): " + std::to_string(e.launches.size()) + " launches, " +
           std::to_string(e.buffers.size()) + " buffers\n";
    double ratio = e.lowerBound ? double(e.arenaSize) / e.lowerBound : 1.0;
    std::snprintf(line, sizeof(line), "  arena        %s\n",
                  bytes(e.arenaSize).c_str());
    out += line;
    std::snprintf(line, sizeof(line), "  lower bound  %s   ratio %.3f\n",
                  bytes(e.lowerBound).c_str(), ratio);
    out += line;
    std::snprintf(
        line, sizeof(line), "  no reuse     %s   (the plan saves %.1f%%)\n",
        bytes(e.noReuseSize).c_str(),
        e.noReuseSize ? 100.0 * (1.0 - double(e.arenaSize) / e.noReuseSize)
                      : 0.0);
    out += line;
    out += "  inputs       " + bytes(e.inputSize) + "\n";
    out += "  outputs      " + bytes(e.outputSize) + "\n";
    if (e.workspace >= 0)
      out += "  workspace    " + bytes(e.buffers[e.workspace].size) +
             " (device scratch and cuBLAS, in the arena)\n";
    uint64_t strided = 0, stridedBytes = 0;
    for (const Tensor &t : e.tensors)
      if (t.isStrided()) {
        ++strided;
        stridedBytes += static_cast<uint64_t>(t.type.bytes());
      }
    if (strided)
      out += "  broadcasts   " + std::to_string(strided) +
             " read through strides, never materialized (as buffers: " +
             bytes(stridedBytes) + ")\n";

    // Each arena buffer: its size, the first launch writing it, its life.
    struct Row {
      uint64_t size;
      size_t buffer;
      int64_t first = -1, last = -1;
      uint32_t tensor = 0;
    };
    std::vector<Row> rows;
    std::vector<int> rowOf(e.buffers.size(), -1);
    for (size_t b = 0; b < e.buffers.size(); ++b)
      if (e.buffers[b].region == Region::Arena &&
          static_cast<int64_t>(b) != e.workspace) {
        rowOf[b] = static_cast<int>(rows.size());
        rows.push_back({e.buffers[b].size, b});
      }
    for (size_t i = 0; i < e.launches.size(); ++i) {
      const Launch &l = e.launches[i];
      for (const auto *list : {&l.outputs, &l.inputs})
        for (uint32_t t : *list) {
          int r = rowOf[e.tensors[t].buffer];
          if (r < 0)
            continue;
          if (rows[r].first < 0) {
            rows[r].first = static_cast<int64_t>(i);
            rows[r].tensor = t;
          }
          rows[r].last = static_cast<int64_t>(i);
        }
    }
    std::stable_sort(rows.begin(), rows.end(), [](const Row &a, const Row &b) {
      return a.size > b.size;
    });
    if (!rows.empty())
      out += "  largest arena buffers:\n";
    for (int k = 0; k < largest && k < static_cast<int>(rows.size()); ++k) {
      const Row &r = rows[k];
      const Buffer &b = e.buffers[r.buffer];
      std::string what = r.first >= 0 ? std::string(e.launches[r.first].name()) + " -> " +
                                            typeString(e.tensors[r.tensor].type)
                                      : "unused";
      std::snprintf(line, sizeof(line),
                    "    %10llu bytes at %10llu  launches [%lld, %lld]  %s\n",
                    static_cast<unsigned long long>(r.size),
                    static_cast<unsigned long long>(b.offset),
                    static_cast<long long>(r.first),
                    static_cast<long long>(r.last), what.c_str());
      out += line;
    }
  }
  out += "persistent region " + bytes(plan.persistentSize) + " in " +
         std::to_string(plan.persistent.size()) + " tensors\n";
  out += "constant region   " + bytes(plan.constantSize) + "\n";
  out += "one arena of      " + bytes(plan.arenaSize) + " serves every entry\n";
  return out;
}
