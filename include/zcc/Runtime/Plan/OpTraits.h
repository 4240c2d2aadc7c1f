//===- OpTraits.h - what passes and the loader know of an op -----*- C++ -*-===//
//
// An op's properties, one bit each, stated once: in its element row
// (ElementKernels.h) or its kernel's entry (ZRT_OTHER_KERNEL_LIST, Launch.h).
// The compiler's passes read them through zt::traitsOf, the loader through
// kernelTraits; no pass keeps a list of op names.
//
// No dependencies: ElementKernels.h (and so the CUDA kernels) includes it.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_RUNTIME_OPTRAITS_H
#define ZCC_RUNTIME_OPTRAITS_H

#include <cstdint>

namespace zcc::runtime {

using OpTraits = uint32_t;

enum OpTrait : OpTraits {
  kNoTraits = 0,
  /// Swapping the two operands gives the same result (ODS Commutative).
  kCommutative = 1u << 0,
  /// A result may be written over an operand's buffer: the kernel reads
  /// each element before writing it (the loader allows that one sharing).
  kInPlace = 1u << 1,
  /// Operands 0 and 1 may be read through broadcast strides.
  kStridedReads = 1u << 2,
  /// Cheaper to compute again in the backward than to keep from the
  /// forward (zt-autodiff's recompute of forward values).
  kCheapToRecompute = 1u << 3,
  /// bf16 operands give a bf16 result (the first; others keep their type:
  /// attention's logsumexp), computed in f32 and rounded once (attention
  /// also rounds its probabilities for the product with the values);
  /// without it mixed precision computes the op in f32.
  kStoresBf16 = 1u << 4,
  /// Reads bf16 operands as they are, its result type unchanged (the
  /// cross-entropy of bf16 logits).
  kReadsBf16 = 1u << 5,
  /// The optimizer's part of the step: never recomputed, the memory
  /// timeline's "update" phase.
  kUpdate = 1u << 6,
  /// Communicates between the ranks of a data-parallel job.
  kCommunicates = 1u << 7,
  /// ZeRO-1's: its `ranks` parameter is the plan's world size.
  kSharded = 1u << 8,
  /// Its operands (and results) are the parts of one bucket buffer, laid
  /// out in operand order (all_reduce's buckets, pack's dense copy).
  kBucket = 1u << 9,
  /// An element row that also takes integer operands (i32, i64, of one
  /// type; its result of that type), wrapping as PyTorch's integers do.
  kIntegers = 1u << 10,
  /// With kStoresBf16: only operand 0 (the activations) and the result
  /// follow bf16; the other operands are affine parameters read in f32
  /// (the normalizations' gamma and beta, rotary's cos and sin tables).
  kAffineF32 = 1u << 11,
  /// Its result is operand 0's elements placed by steps (a slice, a
  /// transpose): where every reader takes a view (kernelTakesView) it is
  /// one, with no launch (zt-plan-memory's attention views).
  kView = 1u << 12,
};

} // namespace zcc::runtime

#endif // ZCC_RUNTIME_OPTRAITS_H
