//===- NonFinite.cpp - a checked run's ranges and report ------------------===//

#include "zcc/Runtime/Executors/NonFinite.h"

#include "zcc/Runtime/Kernels/BFloat16.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

using namespace zcc::runtime;

namespace {

template <typename Get>
void scan(TensorRange &r, uint64_t count, const Get &get) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (uint64_t i = 0; i < count; ++i) {
    double v = get(i);
    if (std::isnan(v)) {
      ++r.nans;
    } else if (std::isinf(v)) {
      ++r.infs;
    } else {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      r.zeros += v == 0;
    }
  }
  if (lo <= hi) {
    r.min = lo;
    r.max = hi;
  }
}

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", v);
  return text;
}

std::string rangeText(const Entry &e, const TensorRange &r) {
  const Tensor &t = e.tensors[r.tensor];
  std::string text =
      (t.name.empty() ? "%" + std::to_string(r.tensor) : "'" + t.name + "'") +
      " " + typeString(t.type);
  if (t.type.dtype != DType::F32 && t.type.dtype != DType::BF16)
    return text;
  if (r.nans + r.infs < r.count)
    text += " in [" + number(r.min) + ", " + number(r.max) + "]";
  if (r.nans)
    text += ", " + std::to_string(r.nans) + " NaN";
  if (r.infs)
    text += ", " + std::to_string(r.infs) + " infinite";
  if (r.zeros)
    text += ", " + std::to_string(r.zeros) + " zero";
  return text + " of " + std::to_string(r.count);
}

} // namespace

TensorRange zcc::runtime::rangeOf(uint32_t tensor, const uint8_t *data,
                                  DType dtype, uint64_t count, bool wide) {
  TensorRange r;
  r.tensor = tensor;
  r.count = count;
  if (dtype == DType::F32 && wide) {
    scan(r, count, [&](uint64_t i) {
      double v;
      std::memcpy(&v, data + 8 * i, 8);
      return v;
    });
  } else if (dtype == DType::F32) {
    scan(r, count, [&](uint64_t i) {
      float v;
      std::memcpy(&v, data + 4 * i, 4);
      return static_cast<double>(v);
    });
  } else if (dtype == DType::BF16) {
    scan(r, count, [&](uint64_t i) {
      uint16_t bits;
      std::memcpy(&bits, data + 2 * i, 2);
      return static_cast<double>(
          bitsToFloat(static_cast<uint32_t>(bits) << 16));
    });
  }
  return r;
}

std::string zcc::runtime::describeNonFinite(const Plan &plan,
                                            const NonFiniteFinding &f) {
  if (f.entry < 0 || f.entry >= static_cast<int>(plan.entries.size()))
    return "no non-finite value found";
  const Entry &e = plan.entries[f.entry];
  std::string text;
  if (!f.before.empty()) {
    text += "entry '" + e.name + "' began with non-finite values in";
    for (size_t i = 0; i < f.before.size() && i < 3; ++i)
      text += " " + rangeText(e, f.before[i]) + ";";
    if (f.before.size() > 3)
      text += " and " + std::to_string(f.before.size() - 3) + " more tensors;";
    text += " (written before this step: by an earlier step's update, or "
            "fed)";
    if (!f.found)
      return text;
    text += "\n";
  }
  if (!f.found)
    return "no launch of entry '" + e.name + "' wrote a NaN or an infinity";
  const Launch &launch = e.launches[f.launch];
  text += std::string(f.nan ? "the first NaN is written by "
                            : "the first infinity (and no NaN) is written by ") +
          std::string(launch.name()) + " (launch " +
          std::to_string(f.launch) + " of entry '" + e.name + "', " +
          phaseName(launch.phase) + ") at " +
          (launch.location.empty() ? std::string("an unknown location")
                                   : launch.location) +
          ":";
  for (const TensorRange &r : f.outputs)
    text += "\n  output " + rangeText(e, r);
  for (const TensorRange &r : f.inputs)
    text += "\n  input  " + rangeText(e, r);
  if (f.firstInfinite >= 0) {
    const Launch &inf = e.launches[f.firstInfinite];
    text += "\n(an infinity came first, from " + std::string(inf.name()) +
            " (launch " + std::to_string(f.firstInfinite) + ", " +
            phaseName(inf.phase) + ") at " +
            (inf.location.empty() ? std::string("an unknown location")
                                  : inf.location) +
            ")";
  }
  return text;
}
