//===- PlanReport.cpp -----------------------------------------------------===//

#include "zcc/Reports/PlanReport.h"

#include "zcc/Runtime/Plan/KernelRules.h"

#include <algorithm>
#include <cstdio>
#include <map>

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

/// The collectives of `e` (data parallelism's buckets), by kernel: how
/// many, the bytes they move in all, the largest, and the first and last
/// launch (the step after the last is what cannot hide their time).
std::string collectiveReport(const Entry &e) {
  struct Kind {
    uint64_t count = 0, total = 0, largest = 0;
    size_t first = 0, last = 0;
  };
  std::map<KernelId, Kind> kinds;
  for (size_t i = 0; i < e.launches.size(); ++i) {
    const Launch &l = e.launches[i];
    if (!kernelCommunicates(l.kernel))
      continue;
    // A reduce_scatter moves its packed bucket, the others their results.
    const std::vector<uint32_t> &moved =
        l.kernel == KernelId::ReduceScatter ? l.inputs : l.outputs;
    uint64_t n = 0;
    for (uint32_t t : moved)
      n += static_cast<uint64_t>(e.tensors[t].type.bytes());
    Kind &k = kinds[l.kernel];
    if (k.count++ == 0)
      k.first = i;
    k.last = i;
    k.total += n;
    k.largest = std::max(k.largest, n);
  }
  std::string out;
  for (const auto &[id, k] : kinds)
    out += "  collectives  " + std::to_string(k.count) + " " + kernelName(id) +
           " of " + bytes(k.total) + ", the largest " + bytes(k.largest) +
           ", launches [" + std::to_string(k.first) + ", " +
           std::to_string(k.last) + "]\n";
  return out;
}

/// The recomputing launches of `e`, by kernel and source line.
std::string recomputeReport(const Entry &e) {
  struct Group {
    int launches = 0;
    double flops = 0;
  };
  std::map<std::pair<std::string, std::string>, Group> groups;
  int count = 0;
  for (const Launch &l : e.launches)
    if (l.phase == Phase::Recompute) {
      Group &g = groups[{l.name(), l.location}];
      ++g.launches;
      g.flops += launchFlops(e, l);
      ++count;
    }
  if (count == 0)
    return "";
  auto [total, extra] = entryFlops(e);
  char line[512];
  std::snprintf(line, sizeof(line),
                "  recomputed   %d launches in the backward instead of saving "
                "their results: %.4g GFLOP, %.1f%% of the step's %.4g GFLOP\n",
                count, extra / 1e9, total > 0 ? 100.0 * extra / total : 0.0,
                total / 1e9);
  std::string out = line;
  std::vector<std::pair<std::pair<std::string, std::string>, Group>> rows(
      groups.begin(), groups.end());
  std::stable_sort(rows.begin(), rows.end(), [](const auto &a, const auto &b) {
    return a.second.flops > b.second.flops;
  });
  for (size_t i = 0; i < rows.size() && i < 8; ++i) {
    const auto &[key, g] = rows[i];
    std::snprintf(line, sizeof(line), "    %-14s x%-4d %10.4g GFLOP  %s\n",
                  key.first.c_str(), g.launches, g.flops / 1e9,
                  key.second.empty() ? "(no location)" : key.second.c_str());
    out += line;
  }
  if (rows.size() > 8)
    out += "    (" + std::to_string(rows.size() - 8) + " more)\n";
  return out;
}

} // namespace

double zcc::runtime::launchFlops(const Entry &e, const Launch &l) {
  std::vector<TensorType> inputs, outputs;
  for (uint32_t t : l.inputs)
    inputs.push_back(e.tensors[t].type);
  for (uint32_t t : l.outputs)
    outputs.push_back(e.tensors[t].type);
  return kernelFlops(l.kernel, inputs, outputs, l.params);
}

EntryFlops zcc::runtime::entryFlops(const Entry &e) {
  EntryFlops out;
  for (const Launch &l : e.launches) {
    double flops = launchFlops(e, l);
    out.total += flops;
    if (l.phase == Phase::Recompute)
      out.recomputed += flops;
  }
  return out;
}

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
    // Strided tensors: attention's views (kernelTakesView), else
    // broadcasts element kernels read.
    std::vector<bool> view(e.tensors.size(), false);
    for (const Launch &l : e.launches)
      for (int side = 0; side < 2; ++side) {
        const std::vector<uint32_t> &list = side ? l.outputs : l.inputs;
        for (size_t i = 0; i < list.size(); ++i)
          if (list[i] < view.size() && kernelTakesView(l.kernel, side, i))
            view[list[i]] = true;
      }
    uint64_t counts[2] = {}, sizes[2] = {};
    for (size_t t = 0; t < e.tensors.size(); ++t)
      if (e.tensors[t].isStrided()) {
        ++counts[view[t]];
        sizes[view[t]] += static_cast<uint64_t>(e.tensors[t].type.bytes());
      }
    if (counts[0])
      out += "  broadcasts   " + std::to_string(counts[0]) +
             " read through strides, never materialized (as buffers: " +
             bytes(sizes[0]) + ")\n";
    if (counts[1])
      out += "  views        " + std::to_string(counts[1]) +
             " attention operands read or written where they lie, never "
             "copied (as copies: " +
             bytes(sizes[1]) + ")\n";
    int64_t tf32 = 0;
    for (const Launch &l : e.launches)
      tf32 += l.kernel == KernelId::Matmul && l.params.tf32;
    if (tf32)
      out += "  tf32         " + std::to_string(tf32) +
             " f32 products may round their operands to TF32 on the GPU\n";
    out += collectiveReport(e);

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
    out += recomputeReport(e);
  }
  out += "persistent region " + bytes(plan.persistentSize) + " in " +
         std::to_string(plan.persistent.size()) + " tensors\n";
  out += "constant region   " + bytes(plan.constantSize) + "\n";
  out += "one arena of      " + bytes(plan.arenaSize) + " serves every entry\n";
  return out;
}
