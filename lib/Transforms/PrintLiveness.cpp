//===- PrintLiveness.cpp - print the zt-liveness analysis -----------------===//
//
// A test pass (Triton's test-print-allocation style): what BufferLiveness
// computed, one line per buffer, per scheduled op and per result.
//
//===----------------------------------------------------------------------===//

#include "EntryPoints.h"

#include "zcc/Transforms/BufferLiveness.h"
#include "zcc/Transforms/Passes.h"
#include "llvm/Support/raw_ostream.h"

namespace zcc {
#define GEN_PASS_DEF_ZTPRINTLIVENESS
#include "zcc/Transforms/Passes.h.inc"
} // namespace zcc

using namespace mlir;
using namespace zcc;

namespace {

struct ZTPrintLivenessPass
    : public zcc::impl::ZTPrintLivenessBase<ZTPrintLivenessPass> {
  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      if (zt::entryKind(fn).empty())
        continue;
      FailureOr<BufferLiveness> live = BufferLiveness::compute(fn);
      if (failed(live))
        return signalPassFailure();
      print(fn, *live, llvm::outs());
    }
  }

  static void print(func::FuncOp fn, const BufferLiveness &live,
                    llvm::raw_ostream &os) {
    ArrayRef<LiveBuffer> buffers = live.getBuffers();
    unsigned arena = llvm::count_if(buffers, [](const LiveBuffer &b) {
      return b.kind == MemoryKind::Arena;
    });
    os << "zt-print-liveness @" << fn.getName() << ": "
       << live.getSchedule().size() << " ops, " << arena
       << " arena buffers, peak " << live.getPeakArenaBytes()
       << " live arena bytes\n";
    os << "  buffers:\n";
    for (auto [id, buffer] : llvm::enumerate(buffers)) {
      os << "    #" << id << " " << stringifyMemoryKind(buffer.kind);
      if (buffer.kind == MemoryKind::Arena ||
          buffer.kind == MemoryKind::ArenaPart)
        os << " [" << buffer.first << ", " << buffer.last << ")";
      if (buffer.kind == MemoryKind::ArenaPart)
        os << " in #" << buffer.bucket << " at " << buffer.bucketOffset;
      if (!buffer.parts.empty()) {
        os << " bucket of";
        for (unsigned part : buffer.parts)
          os << " #" << part;
      }
      if (!buffer.name.empty())
        os << " \"" << buffer.name << "\"";
      os << " " << buffer.bytes << " bytes";
      if (Operation *def = buffer.root ? buffer.root.getDefiningOp() : nullptr)
        os << ": " << def->getName() << " at " << live.getPosition(def);
      os << "\n";
    }
    auto printIds = [&](ValueRange values) {
      os << "(";
      llvm::interleaveComma(values, os,
                            [&](Value v) { os << "#" << live.getBufferId(v); });
      os << ")";
    };
    os << "  schedule:\n";
    for (Operation *op : live.getSchedule()) {
      os << "    " << live.getPosition(op) << " " << op->getName() << " ";
      printIds(op->getOperands());
      os << " -> ";
      printIds(op->getResults());
      os << "\n";
    }
    os << "    " << live.getSchedule().size() << " return\n";
    os << "  results:\n";
    for (auto [r, placement] : llvm::enumerate(live.getResults())) {
      os << "    #" << r << " \"" << zt::resultName(fn, r) << "\" in #"
         << placement.buffer;
      if (placement.copyFrom)
        os << ", copied from #" << *placement.copyFrom << " at the return";
      os << "\n";
    }
  }
};

} // namespace
