//===- BFloat16.h - bf16 storage: conversions to and from f32 ----*- C++ -*-===//
//
// bf16 is the top half of an f32: the same sign and 8-bit exponent, 7
// mantissa bits. Mixed precision stores activations in it and computes in
// f32, so kernels only ever convert: widening is exact, narrowing rounds to
// nearest, ties to even, as PyTorch, cuBLAS and the hardware do. NaN stays
// NaN (quiet, sign kept); infinities and overflow to infinity follow from
// the rounding. No dependencies, for host and device code alike.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_RUNTIME_BFLOAT16_H
#define ZCC_RUNTIME_BFLOAT16_H

#include "zcc/Runtime/Kernels/Philox.h" // ZRT_HOST_DEVICE

#include <cstdint>
#include <cstring>

namespace zcc::runtime {

/// The bits of a bf16 value.
struct BFloat16 {
  uint16_t bits = 0;
};

ZRT_HOST_DEVICE inline float bitsToFloat(uint32_t bits) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(bits);
#else
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
#endif
}

ZRT_HOST_DEVICE inline uint32_t floatToBits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
#endif
}

ZRT_HOST_DEVICE inline float bf16ToFloat(BFloat16 x) {
  return bitsToFloat(static_cast<uint32_t>(x.bits) << 16);
}

ZRT_HOST_DEVICE inline BFloat16 floatToBf16(float f) {
  uint32_t bits = floatToBits(f);
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0)
    return {static_cast<uint16_t>((bits >> 16) | 0x0040u)}; // quiet NaN
  // Adding 0x7fff plus the lowest kept bit rounds to nearest, ties to even;
  // a carry out of the mantissa correctly bumps the exponent (to infinity
  // at the top).
  uint32_t rounded = bits + 0x7fffu + ((bits >> 16) & 1u);
  return {static_cast<uint16_t>(rounded >> 16)};
}

} // namespace zcc::runtime

#endif // ZCC_RUNTIME_BFLOAT16_H
