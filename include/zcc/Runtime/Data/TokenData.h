//===- TokenData.h - batches of random windows of a token file --*- C++ -*-===//
//
// A language model's training data as nanoGPT keeps it: one flat file of
// token ids (uint16, or uint32 for vocabularies past 65,536), memory-mapped.
// Row r of batch b is the window of the plan's sequence length starting at
// tokenWindowStart(seed, b, r, ...): the inputs the window, the labels the
// same window one token on. The start is a function of (seed, batch, row)
// alone, so a run's position in the data is its batch number, which
// checkpoints already record, and a resumed run reads the windows the
// uninterrupted one would have. python/zcc/data.py computes the same
// windows (zcc.data.TokenFile).
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_RUNTIME_DATA_TOKENDATA_H
#define ZCC_RUNTIME_DATA_TOKENDATA_H

#include "zcc/Runtime/Data/DataSource.h"

#include <cstdint>

namespace zcc::runtime {

/// SplitMix64's finalizer of x + the golden ratio (Steele, Lea, Flood).
inline uint64_t splitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// The first token of row `row`'s window in batch `batch`, in
/// [0, tokens - length - 1]: the window and the token after it fit.
inline int64_t tokenWindowStart(uint64_t seed, int64_t batch, int64_t row,
                                int64_t tokens, int64_t length) {
  uint64_t starts = static_cast<uint64_t>(tokens - length);
  uint64_t h = splitMix64(splitMix64(splitMix64(seed) +
                                     static_cast<uint64_t>(batch)) +
                          static_cast<uint64_t>(row));
  return static_cast<int64_t>(h % starts);
}

/// `spec` is FILE or FILE:uint16 / FILE:uint32 (after "tokens:"). The
/// entry's inputs must be one integer input [B, T] and one integer label of
/// B*T elements; an error names what does not fit (the file's size, a
/// file shorter than one window, other inputs).
Status makeTokenSource(const Session &session, int entry,
                       const std::string &spec, uint64_t seed,
                       std::unique_ptr<DataSource> &out);

} // namespace zcc::runtime

#endif // ZCC_RUNTIME_DATA_TOKENDATA_H
