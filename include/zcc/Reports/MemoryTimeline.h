//===- MemoryTimeline.h - a plan's memory, buffer by buffer -----*- C++ -*-===//
//
// Everything a plan knows about its memory before it runs, as versioned JSON
// (schema "zcc.memory/v1", docs/memory.md): per entry, every buffer with its
// offset, size, region, lifetime in launches, kind (activation, saved for
// the backward, gradient, optimizer temporary, workspace), the op writing it
// and that op's source location; the arena bytes live at each launch; the
// lower bound and the peak. Built from the plan alone, so `zrun` gives the
// same timeline from a .zplan as `zcc` from the source. The same timeline
// also comes as an HTML page and as PyTorch's memory snapshot.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_RUNTIME_MEMORYTIMELINE_H
#define ZCC_RUNTIME_MEMORYTIMELINE_H

#include "zcc/Runtime/Plan/Plan.h"

#include <string>

namespace zcc::runtime {

/// The schema name and version every timeline states.
inline constexpr const char *kMemoryTimelineSchema = "zcc.memory/v1";

/// The timeline of a validated plan, as JSON text (2-space indented).
std::string memoryTimelineJson(const Plan &plan);

/// The timeline drawn: one self-contained HTML page (no network access)
/// with offset against launch per entry, the live bytes, the lower bound
/// and the peak, hover details and the largest buffers.
std::string memoryTimelineHtml(const Plan &plan);

/// The plan as PyTorch's memory snapshot (`torch.cuda.memory._snapshot()`,
/// pickled): the arena as one segment with an alloc and a free per buffer
/// at its offset, frames from the source locations; the persistent tensors
/// as a second segment, held throughout. PyTorch's memory viewer and
/// `torch.cuda._memory_viz` read it.
std::string memoryTorchSnapshot(const Plan &plan);

} // namespace zcc::runtime

#endif // ZCC_RUNTIME_MEMORYTIMELINE_H
