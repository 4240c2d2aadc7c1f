//===- Philox.h - the Philox-4x32-10 counter-based generator ----*- C++ -*-===//
//
// Philox-4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel Random Numbers: As
// Easy as 1, 2, 3", SC'11): a keyed bijection of a 128-bit counter. Every
// random number the runtime draws (dropout masks, parameter initializers) is
// a pure function of a key and a counter, so a draw needs no state, any
// element can be drawn independently, and the CPU and CUDA executors give
// bit-identical masks. Header-only and free of the standard library beyond
// <cstdint> so CUDA kernels can include it.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_RUNTIME_PHILOX_H
#define ZCC_RUNTIME_PHILOX_H

#include <cstdint>

#ifdef __CUDACC__
#define ZRT_HOST_DEVICE __host__ __device__
#else
#define ZRT_HOST_DEVICE
#endif

namespace zcc::runtime {

/// Four 32-bit words: a Philox counter or one output block.
struct PhiloxBlock {
  uint32_t words[4];
};

/// The two 32-bit words of a Philox-4x32 key.
struct PhiloxKey {
  uint32_t words[2];
};

namespace detail {
// The round multipliers and the Weyl key increments (golden ratio and
// sqrt(3) - 1 in 32-bit fixed point) of the Philox-4x32 family.
inline constexpr uint32_t kPhiloxM0 = 0xD2511F53u;
inline constexpr uint32_t kPhiloxM1 = 0xCD9E8D57u;
inline constexpr uint32_t kPhiloxW0 = 0x9E3779B9u;
inline constexpr uint32_t kPhiloxW1 = 0xBB67AE85u;

/// One round: two 32x32->64 products, their halves crossed and xored with
/// the other words and the round key.
ZRT_HOST_DEVICE inline PhiloxBlock philoxRound(const PhiloxBlock &x,
                                               const PhiloxKey &key) {
  uint64_t product0 = static_cast<uint64_t>(kPhiloxM0) * x.words[0];
  uint64_t product1 = static_cast<uint64_t>(kPhiloxM1) * x.words[2];
  uint32_t hi0 = static_cast<uint32_t>(product0 >> 32);
  uint32_t lo0 = static_cast<uint32_t>(product0);
  uint32_t hi1 = static_cast<uint32_t>(product1 >> 32);
  uint32_t lo1 = static_cast<uint32_t>(product1);
  PhiloxBlock y;
  y.words[0] = hi1 ^ x.words[1] ^ key.words[0];
  y.words[1] = lo1;
  y.words[2] = hi0 ^ x.words[3] ^ key.words[1];
  y.words[3] = lo0;
  return y;
}
} // namespace detail

/// Philox-4x32 with 10 rounds; the key advances by the Weyl increments
/// between rounds. Matches Random123's philox4x32 known-answer vectors.
ZRT_HOST_DEVICE inline PhiloxBlock philox4x32_10(PhiloxBlock counter,
                                                 PhiloxKey key) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key.words[0] += detail::kPhiloxW0;
      key.words[1] += detail::kPhiloxW1;
    }
    counter = detail::philoxRound(counter, key);
  }
  return counter;
}

/// The key for a 64-bit seed: (low 32 bits, high 32 bits).
ZRT_HOST_DEVICE inline PhiloxKey philoxKeyFromSeed(uint64_t seed) {
  PhiloxKey key;
  key.words[0] = static_cast<uint32_t>(seed);
  key.words[1] = static_cast<uint32_t>(seed >> 32);
  return key;
}

/// The counter (low(a), high(a), low(b), high(b)) for two 64-bit numbers.
ZRT_HOST_DEVICE inline PhiloxBlock philoxCounter(uint64_t a, uint64_t b) {
  PhiloxBlock counter;
  counter.words[0] = static_cast<uint32_t>(a);
  counter.words[1] = static_cast<uint32_t>(a >> 32);
  counter.words[2] = static_cast<uint32_t>(b);
  counter.words[3] = static_cast<uint32_t>(b >> 32);
  return counter;
}

/// `word * 2^-32`: a uniform number in [0, 1), exact in double.
ZRT_HOST_DEVICE inline double uniformFromWord(uint32_t word) {
  return static_cast<double>(word) * (1.0 / 4294967296.0);
}

/// `(word + 1) * 2^-32`: a uniform number in (0, 1], for logarithms (the
/// Box-Muller transform) that must never see 0.
ZRT_HOST_DEVICE inline double uniformOpenFromWord(uint32_t word) {
  return (static_cast<double>(word) + 1.0) * (1.0 / 4294967296.0);
}

/// A uniform number in [0, 1) with 53 random bits from two words (`high`
/// gives the top 32 bits), for initializers that want more than 32 bits.
ZRT_HOST_DEVICE inline double uniform53FromWords(uint32_t high, uint32_t low) {
  uint64_t bits = (static_cast<uint64_t>(high) << 21) | (low >> 11);
  return static_cast<double>(bits) * (1.0 / 9007199254740992.0);
}

/// The smallest word that dropout keeps at `rate`: `w * 2^-32 >= rate`
/// exactly when `w >= ceil(rate * 2^32)` (both sides exact in double).
ZRT_HOST_DEVICE inline uint64_t dropoutThreshold(double rate) {
  double scaled = rate * 4294967296.0;
  uint64_t whole = static_cast<uint64_t>(scaled);
  return static_cast<double>(whole) < scaled ? whole + 1 : whole;
}

/// The dropout key of rank `rank` of a data-parallel job: the seed moved by
/// rank times SplitMix64's increment, so each rank draws its own masks (one
/// process at N times the batch would draw a different mask for every row),
/// and rank 0, or a job of one, draws a single process's.
ZRT_HOST_DEVICE inline uint64_t rankDropoutSeed(uint64_t seed, int rank) {
  return seed + static_cast<uint64_t>(rank) * 0x9e3779b97f4a7c15ull;
}

/// Whether dropout keeps element `index` at `step` (docs/zt-dialect.md,
/// "Randomness"): key = seed, counter = (index / 4, step), output word
/// `w = words[index % 4]` gives `u = w * 2^-32`, kept when `u >= rate`. One
/// block (dropoutBlock) serves four consecutive elements.
ZRT_HOST_DEVICE inline PhiloxBlock dropoutBlock(uint64_t seed, uint64_t index,
                                               uint64_t step) {
  return philox4x32_10(philoxCounter(index / 4, step),
                       philoxKeyFromSeed(seed));
}
ZRT_HOST_DEVICE inline bool dropoutKeep(uint64_t seed, uint64_t index,
                                        uint64_t step, double rate) {
  return dropoutBlock(seed, index, step).words[index % 4] >=
         dropoutThreshold(rate);
}

} // namespace zcc::runtime

#endif // ZCC_RUNTIME_PHILOX_H
