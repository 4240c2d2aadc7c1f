//===- Progress.h - what a training step does, per second -------*- C++ -*-===//
//
// The numbers a progress line and a metrics file report beside the loss:
// the tokens (or examples) a step reads, its model FLOPs from the plan's one
// FLOP model (recomputation excluded: model FLOPs, as MFU counts them), the
// device's peak for the plan's precision, and an ETA's duration in words.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_REPORTS_PROGRESS_H
#define ZCC_REPORTS_PROGRESS_H

#include "zcc/Runtime/Plan/Plan.h"

#include <cstdint>
#include <string>

namespace zcc::runtime {

struct StepWork {
  /// Model FLOPs of one optimizer step on one rank.
  double flops = 0;
  /// What one step reads on one rank: tokens where the data entry has an
  /// integer input of rank 2 or more (a language model's), else examples
  /// (the first input's leading dimension).
  int64_t items = 0;
  bool tokens = false;
};

/// One optimizer step: `microbatches` runs of entry `dataEntry`, then entry
/// `applyEntry` once (-1: none, the train_step entry does it all).
StepWork stepWork(const Plan &plan, int dataEntry, int applyEntry,
                  int64_t microbatches);

/// The dense peak TFLOP/s of the CUDA device named `deviceName` for the
/// plan's precision: bf16 tensor cores where its data entry holds bf16
/// tensors, TF32 where its products may round to it, else f32. 0 where the
/// device is not known (the CPU: give zrun --peak-tflops).
double devicePeakTflops(const std::string &deviceName, const Plan &plan,
                        int dataEntry);

/// "42s", "8m21s", "3h07m".
std::string formatDuration(double seconds);

} // namespace zcc::runtime

#endif // ZCC_REPORTS_PROGRESS_H
