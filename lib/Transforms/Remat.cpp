//===- Remat.cpp - recompute forward values to fit a memory budget --------===//
//
// zt-remat: while a training step's peak of live arena bytes is above the
// budget, one forward value that is live at the peak only because the
// backward reads it later is computed again just before its first backward
// use, from what is still live there (recomputing its operands too where
// they are gone). The value is chosen by bytes freed per FLOP of
// recomputation; a choice that would raise the peak elsewhere is undone.
// The copies are the same ops on the same operands, so they give the same
// bits (dropout's mask comes from its seed and the step counter).
//
//===----------------------------------------------------------------------===//

#include "EntryPoints.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "zcc/Dialect/ZT/ZTOps.h"
#include "zcc/Runtime/Plan/KernelRules.h"
#include "zcc/Runtime/Plan/OpTraits.h"
#include "zcc/Target/PlanExport.h"
#include "zcc/Transforms/BufferLiveness.h"
#include "zcc/Transforms/Passes.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <map>
#include <set>

namespace zcc {
#define GEN_PASS_DEF_ZTREMAT
#include "zcc/Transforms/Passes.h.inc"
} // namespace zcc

using namespace mlir;
using namespace zcc;
using namespace zcc::zt;
namespace json = llvm::json;

namespace {

int64_t elements(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  return shaped && shaped.hasStaticShape() ? shaped.getNumElements() : 1;
}

runtime::TensorType shapeOf(Type type) {
  runtime::TensorType out;
  if (auto shaped = dyn_cast<ShapedType>(type); shaped && shaped.hasRank())
    out.shape.assign(shaped.getShape().begin(), shaped.getShape().end());
  return out;
}

/// Floating-point operations of one op: what recomputing it costs, by the
/// plan report's model (runtime::kernelFlops); a view's (no kernel) as a
/// copy's. At least 1, so every copy costs something.
double flopsOf(Operation *op) {
  StringRef name = op->getName().stripDialect();
  double flops = 0;
  if (runtime::findKernel(name)) {
    FailureOr<runtime::Launch> launch =
        decodeLaunchOf(op, name, kernelParams(op));
    if (failed(launch))
      return 1;
    std::vector<runtime::TensorType> inputs, outputs;
    for (Type t : op->getOperandTypes())
      inputs.push_back(shapeOf(t));
    for (Type t : op->getResultTypes())
      outputs.push_back(shapeOf(t));
    flops = runtime::kernelFlops(launch->kernel, inputs, outputs,
                                 launch->params);
  } else {
    for (Type type : op->getResultTypes())
      flops += static_cast<double>(elements(type));
  }
  return std::max(flops, 1.0);
}

/// One step's schedule and lifetimes, with what the pass asks of them.
class Step {
public:
  Step(BufferLiveness live, int64_t alignment, int64_t backwardStart)
      : live(std::move(live)), alignment(alignment),
        backwardStart(backwardStart) {
    size_t n = this->live.getSchedule().size() + 1;
    std::vector<int64_t> delta(n + 1, 0);
    for (const LiveBuffer &b : this->live.getBuffers())
      if (b.kind == MemoryKind::Arena && b.last > b.first) {
        delta[b.first] += aligned(b.bytes);
        delta[b.last] -= aligned(b.bytes);
      }
    profile.assign(n, 0);
    int64_t current = 0;
    for (size_t p = 0; p < n; ++p)
      profile[p] = current += delta[p];
  }

  int64_t aligned(int64_t bytes) const {
    return (bytes + alignment - 1) / alignment * alignment;
  }
  /// The largest live arena bytes, and the first position where they occur.
  std::pair<int64_t, int64_t> peak() const {
    auto it = std::max_element(profile.begin(), profile.end());
    return {*it, it - profile.begin()};
  }
  int64_t position(Operation *op) const {
    return isa<func::ReturnOp>(op)
               ? static_cast<int64_t>(live.getSchedule().size())
               : live.getPosition(op);
  }
  bool inBackward(Operation *op) const {
    return position(op) >= backwardStart;
  }
  /// flopsOf(op), computed once per op of this schedule (the model decodes
  /// the op's launch, and candidates share ops).
  double flops(Operation *op) const {
    auto [it, inserted] = flopsCache.try_emplace(op, 0.0);
    if (inserted)
      it->second = flopsOf(op);
    return it->second;
  }
  bool isView(Operation *op) const {
    return live.isView(op);
  }
  const LiveBuffer &bufferOf(Value v) const {
    return live.getBuffers()[live.getBufferId(v)];
  }
  /// The last position that reads `v`, through views of it too.
  int64_t lastUse(Value v) const {
    int64_t last = -1;
    for (Operation *user : v.getUsers()) {
      last = std::max(last, position(user));
      if (isView(user))
        last = std::max(last, lastUse(user->getResult(0)));
    }
    return last;
  }
  /// `v` and the forward views of it (transitively).
  void forwardViews(Value v, SmallVectorImpl<Value> &out) const {
    out.push_back(v);
    for (Operation *user : v.getUsers())
      if (isView(user) && !inBackward(user))
        forwardViews(user->getResult(0), out);
  }
  /// An op the pass may copy: a forward op whose results are arena buffers
  /// (or views of them), not an optimizer update.
  bool recomputable(Operation *op) const {
    if (inBackward(op) || (traitsOf(op) & runtime::kUpdate) ||
        isa<ConstantOp>(op) || op->getNumResults() == 0)
      return false;
    return llvm::all_of(op->getResults(), [&](Value r) {
      return isView(op) || bufferOf(r).kind == MemoryKind::Arena;
    });
  }

  /// The ops to copy, operands first, so that `v` (one of `forced`) can be
  /// read at position `at` without keeping anything longer; false when some
  /// operand cannot be.
  bool planCopy(Value v, int64_t at, const DenseSet<Value> &forced,
                llvm::SetVector<Operation *> &ops) const {
    Operation *def = v.getDefiningOp();
    if (!forced.contains(v) &&
        (!def || isa<ConstantOp>(def) || lastUse(v) >= at))
      return true; // still there
    if (!def || !recomputable(def))
      return false;
    if (ops.contains(def))
      return true;
    for (Value operand : def->getOperands())
      if (!planCopy(operand, at, forced, ops))
        return false;
    ops.insert(def);
    return true;
  }

  BufferLiveness live;
  int64_t alignment;
  int64_t backwardStart;
  std::vector<int64_t> profile;
  mutable DenseMap<Operation *, double> flopsCache;
};

/// Where the forward and the backward read `values` (a value and its
/// forward views): the last forward use (at least `from`), the first
/// backward user and every backward position; nullopt when the step
/// returns one of them.
struct UseSpan {
  int64_t lastForward;
  int64_t firstBackward = INT64_MAX;
  Operation *firstBackwardUser = nullptr;
  SmallVector<int64_t, 4> backward;
};
std::optional<UseSpan> useSpan(const Step &step, ArrayRef<Value> values,
                               int64_t from) {
  UseSpan span{from};
  for (Value w : values)
    for (Operation *user : w.getUsers()) {
      if (isa<func::ReturnOp>(user))
        return std::nullopt;
      if (step.isView(user) && !step.inBackward(user))
        continue;
      int64_t at = step.position(user);
      if (!step.inBackward(user)) {
        span.lastForward = std::max(span.lastForward, at);
        continue;
      }
      span.backward.push_back(at);
      if (at < span.firstBackward) {
        span.firstBackward = at;
        span.firstBackwardUser = user;
      }
    }
  return span;
}

/// The recompute problem of one entry, before any copy, as a 0/1 covering
/// program whose optimum is a lower bound on the FLOPs of every set of
/// forward ops copied into the backward of this schedule
/// (docs/passes.md#how-close-to-optimal). x_o = 1 when op o is copied at
/// least once, at the cost of its FLOPs. A position whose live bytes exceed
/// the budget by d needs the saved values of copied ops to free at least d
/// there. An op whose operand the backward no longer holds (read only in
/// the forward) needs that operand's op copied too. Relaxed, so the bound
/// stays valid: the copies' own bytes are left out, each op is paid once,
/// and a value may be freed between any two of its backward uses.
class Problem {
public:
  Problem(const Step &step, int64_t budget) : budget(budget) {
    ArrayRef<Operation *> schedule = step.live.getSchedule();
    for (Operation *op : schedule)
      if (step.recomputable(op)) {
        index[op] = static_cast<int>(ops.size());
        ops.push_back(op);
      }
    for (Operation *op : ops)
      needs.push_back(needsOf(step, op));

    // Each position over the budget becomes a row; rows with the same
    // cover keep the largest deficit (first position, deterministic).
    std::map<std::vector<std::pair<int, int64_t>>, std::pair<int64_t, int64_t>>
        rows;
    DenseMap<unsigned, Value> held; // buffer -> value it holds at `p`
    ArrayRef<LiveBuffer> buffers = step.live.getBuffers();
    for (size_t p = 0; p < step.profile.size(); ++p) {
      if (p < schedule.size() && !step.isView(schedule[p]))
        for (Value r : schedule[p]->getResults())
          held[step.live.getBufferId(r)] = r;
      int64_t deficit = step.profile[p] - budget;
      if (deficit <= 0)
        continue;
      std::map<int, int64_t> cover;
      for (unsigned id = 0; id < buffers.size(); ++id) {
        const LiveBuffer &b = buffers[id];
        Value v = held.lookup(id);
        if (b.kind != MemoryKind::Arena || b.first > static_cast<int64_t>(p) ||
            b.last <= static_cast<int64_t>(p) || !v)
          continue;
        auto it = index.find(v.getDefiningOp());
        if (it != index.end() && freeableAt(step, v, p))
          cover[it->second] += step.aligned(b.bytes);
      }
      int64_t covered = 0;
      for (auto [op, bytes] : cover)
        covered += bytes;
      if (covered < deficit)
        reachable = false;
      auto &row = rows[{cover.begin(), cover.end()}];
      if (deficit > row.first)
        row = {deficit, static_cast<int64_t>(p)};
    }
    for (auto &[cover, row] : rows)
      this->rows.push_back({row.second, row.first, cover});
    llvm::sort(this->rows, [](const Row &a, const Row &b) {
      return a.position < b.position;
    });
  }

  /// What the pass chose: every op copied (each counted once here), and
  /// its own FLOPs count (copies of one op in several chains each paid).
  void chose(const llvm::SetVector<Operation *> &copied) {
    for (Operation *op : copied)
      chosen.insert(index.lookup(op));
  }

  json::Value toJSON(StringRef entry, double passFlops, int64_t firstPeak,
                     int64_t peak, bool exhausted) const {
    json::Array opsOut, rowsOut;
    for (auto [i, op] : llvm::enumerate(ops)) {
      json::Array needed;
      for (int j : needs[i])
        if (j >= 0)
          needed.push_back(j);
      opsOut.push_back(
          json::Object{{"op", op->getName().getStringRef()},
                       {"loc", formatLocation(op->getLoc())},
                       {"flops", flopsOf(op)},
                       {"needs", std::move(needed)},
                       {"blocked", llvm::is_contained(needs[i], -1)}});
    }
    for (const Row &row : rows) {
      json::Array cover;
      for (auto [op, bytes] : row.cover)
        cover.push_back(json::Array{op, bytes});
      rowsOut.push_back(json::Object{{"position", row.position},
                                     {"deficit", row.deficit},
                                     {"cover", std::move(cover)}});
    }
    json::Array chosenOut;
    for (int i : chosen)
      chosenOut.push_back(i);
    return json::Object{{"entry", entry},
                        {"budget", budget},
                        {"peak", firstPeak},
                        {"reachable", reachable},
                        {"ops", std::move(opsOut)},
                        {"rows", std::move(rowsOut)},
                        {"zcc", json::Object{{"flops", passFlops},
                                             {"ops", std::move(chosenOut)},
                                             {"peak", peak},
                                             {"exhausted", exhausted}}}};
  }

private:
  struct Row {
    int64_t position;
    int64_t deficit;
    std::vector<std::pair<int, int64_t>> cover;
  };

  /// The ops `op`'s copy needs copied too (-1: one that cannot be): those
  /// of operands read only in the forward.
  SmallVector<int> needsOf(const Step &step, Operation *op) const {
    SmallVector<int> out;
    for (Value u : op->getOperands()) {
      Operation *def = u.getDefiningOp();
      if (!def || isa<ConstantOp>(def) || step.lastUse(u) >= step.backwardStart)
        continue;
      out.push_back(index.count(def) ? index.lookup(def) : -1);
    }
    return out;
  }

  /// Whether a copy could stand in for `v` at position `p`: the forward is
  /// done reading it, the step does not return it, the backward reads it
  /// later and not at `p` itself.
  bool freeableAt(const Step &step, Value v, size_t p) {
    auto [it, inserted] = spans.try_emplace(v);
    if (inserted) {
      SmallVector<Value> views;
      step.forwardViews(v, views);
      it->second = useSpan(step, views, step.position(v.getDefiningOp()));
    }
    const std::optional<UseSpan> &span = it->second;
    int64_t at = static_cast<int64_t>(p);
    return span && span->lastForward < at && !span->backward.empty() &&
           at < *llvm::max_element(span->backward) &&
           !llvm::is_contained(span->backward, at);
  }

  int64_t budget;
  bool reachable = true;
  std::vector<Operation *> ops;
  DenseMap<Operation *, int> index;
  std::vector<SmallVector<int>> needs;
  std::vector<Row> rows;
  std::set<int> chosen;
  DenseMap<Value, std::optional<UseSpan>> spans; // freeableAt's, per value
};

/// A forward value saved for the backward, and how to stop saving it.
struct Candidate {
  Value value;
  SmallVector<Value> forced; // it and its forward views
  Operation *firstBackwardUser = nullptr;
  int64_t at = 0;                   // its position
  llvm::SetVector<Operation *> ops; // to copy, operands first
  double flops = 0;
  int64_t bytes = 0;
};

/// What one applied candidate changed, to undo it.
struct Applied {
  SmallVector<std::pair<OpOperand *, Value>> uses;
  SmallVector<Operation *> copies;

  void undo() {
    for (auto [use, value] : uses)
      use->set(value);
    for (Operation *op : llvm::reverse(copies))
      op->erase();
  }
};

/// `v`, the value its buffer holds at the peak, as a candidate: live there
/// only because the backward reads it later (the values written before it
/// over the same bytes in place die in the forward; those written over it
/// in the backward come after its first backward use). The other results
/// of its op come along (attention's output and logsumexp): one copy of
/// the op gives them all.
std::optional<Candidate> candidateAt(const Step &step, Value v,
                                     int64_t peakAt) {
  Candidate c;
  c.value = v;
  Operation *def = v.getDefiningOp();
  for (Value r : def->getResults())
    step.forwardViews(r, c.forced);
  std::optional<UseSpan> span = useSpan(step, c.forced, step.position(def));
  if (!span || !span->firstBackwardUser || span->lastForward >= peakAt ||
      span->firstBackward <= peakAt)
    return std::nullopt;
  int64_t at = span->firstBackward;
  c.at = at;
  c.firstBackwardUser = span->firstBackwardUser;
  DenseSet<Value> forced(c.forced.begin(), c.forced.end());
  auto readInBackward = [&](Value w) {
    return llvm::any_of(w.getUsers(),
                        [&](Operation *u) { return step.inBackward(u); });
  };
  for (Value w : c.forced)
    if (readInBackward(w) && !step.planCopy(w, at, forced, c.ops))
      return std::nullopt;
  for (Value r : def->getResults()) {
    const LiveBuffer &buffer = step.bufferOf(r);
    if (buffer.first <= peakAt && peakAt < buffer.last)
      c.bytes += step.aligned(buffer.bytes);
  }
  for (Operation *op : c.ops)
    c.flops += step.flops(op);
  return c;
}

/// Takes `other` into `best` when the copies `best` makes already compute
/// most of it (a residual block recomputed for its output computes the
/// q, k and v its attention saved): `other`'s backward uses, all at or after
/// `best`'s copies, read copies too, for the few ops more it needs, as long
/// as that frees bytes at no worse a rate than `best` does.
bool absorb(const Step &step, Candidate &best, const Candidate &other) {
  if (other.at < best.at || other.value == best.value)
    return false;
  llvm::SetVector<Operation *> ops = best.ops;
  DenseSet<Value> forced(best.forced.begin(), best.forced.end());
  forced.insert(other.forced.begin(), other.forced.end());
  for (Value w : other.forced)
    if (llvm::any_of(w.getUsers(),
                     [&](Operation *u) { return step.inBackward(u); }) &&
        !step.planCopy(w, best.at, forced, ops))
      return false;
  double extra = 0;
  for (Operation *op : ops)
    if (!best.ops.contains(op))
      extra += step.flops(op);
  if (extra * best.bytes > other.bytes * best.flops)
    return false;
  best.ops = std::move(ops);
  best.forced.append(other.forced.begin(), other.forced.end());
  best.flops += extra;
  best.bytes += other.bytes;
  return true;
}

Applied apply(const Step &step, Candidate &c) {
  Applied applied;
  OpBuilder b(c.firstBackwardUser);
  IRMapping mapping;
  MLIRContext *ctx = c.firstBackwardUser->getContext();
  for (Operation *op : c.ops) {
    Operation *copy = b.clone(*op, mapping);
    copy->setAttr(ZTDialect::kRecomputeAttrName, UnitAttr::get(ctx));
    applied.copies.push_back(copy);
  }
  DenseSet<Operation *> copies(applied.copies.begin(), applied.copies.end());
  for (Value w : c.forced)
    for (OpOperand &use : llvm::make_early_inc_range(w.getUses()))
      if (step.inBackward(use.getOwner()) && !copies.contains(use.getOwner())) {
        applied.uses.push_back({&use, w});
        use.set(mapping.lookup(w));
      }
  return applied;
}

struct ZTRematPass : public zcc::impl::ZTRematBase<ZTRematPass> {
  using ZTRematBase::ZTRematBase;

  void runOnOperation() override {
    std::string broken = zcc::options::check(
        ZCC_OPTIONS_OF_PASS(ZCC_ZT_REMAT_PASS_OPTIONS, *this));
    if (!broken.empty()) {
      getOperation().emitError() << "zt-remat " << broken;
      return signalPassFailure();
    }
    if (memoryBudget <= 0)
      return;
    json::Array problems;
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (!entryKind(fn).empty() && failed(fit(fn, problems)))
        return signalPassFailure();
    if (!rematProblem.empty() && failed(writeProblems(std::move(problems))))
      return signalPassFailure();
  }

  LogicalResult writeProblems(json::Array problems) {
    std::error_code error;
    llvm::raw_fd_ostream os(rematProblem, error, llvm::sys::fs::OF_Text);
    if (error)
      return getOperation().emitError()
             << "cannot write the recompute problem to '" << rematProblem
             << "': " << error.message();
    json::Object root{{"format", "zcc.remat-problem/v1"},
                      {"alignment", static_cast<int64_t>(alignment)},
                      {"entries", std::move(problems)}};
    os << llvm::formatv("{0:1}", json::Value(std::move(root))) << "\n";
    return success();
  }

  /// The candidates at position `at`: what each arena buffer live there
  /// holds, when that is a forward value kept only for the backward.
  static SmallVector<Candidate>
  candidatesAt(const Step &step, int64_t at,
               const DenseSet<Operation *> &refused) {
    DenseMap<unsigned, Value> held;
    for (Operation *op : step.live.getSchedule()) {
      if (step.position(op) > at)
        break;
      if (!step.isView(op))
        for (Value r : op->getResults())
          held[step.live.getBufferId(r)] = r;
    }
    SmallVector<Candidate> out;
    DenseSet<Operation *> seen; // one candidate per op (all its results)
    ArrayRef<LiveBuffer> buffers = step.live.getBuffers();
    for (unsigned id = 0; id < buffers.size(); ++id) {
      const LiveBuffer &buffer = buffers[id];
      Value v = held.lookup(id);
      if (buffer.kind != MemoryKind::Arena || buffer.first > at ||
          buffer.last <= at || !v)
        continue;
      Operation *def = v.getDefiningOp();
      if (refused.contains(def) || !step.recomputable(def) ||
          !seen.insert(def).second)
        continue;
      if (std::optional<Candidate> c = candidateAt(step, v, at))
        out.push_back(std::move(*c));
    }
    return out;
  }

  /// Recomputes in `fn` until its peak fits the budget or nothing is left
  /// to recompute (then the module says so: zcc names the smallest arena).
  LogicalResult fit(func::FuncOp fn, json::Array &problems) {
    auto start = fn->getAttrOfType<IntegerAttr>(ZTDialect::kBackwardStartAttrName);
    if (!start)
      return success(); // no backward (an apply entry): nothing saved
    DenseSet<Operation *> refused; // defining ops whose copy raised the peak
    int64_t firstPeak = -1, copies = 0;
    double flops = 0;
    std::optional<Problem> problem;
    llvm::SetVector<Operation *> copied; // originals, for the problem
    auto done = [&](int64_t peak) {
      if (problem) {
        problem->chose(copied);
        problems.push_back(problem->toJSON(
            fn.getSymName(), flops, firstPeak, peak,
            getOperation()->hasAttr(ZTDialect::kRematExhaustedAttrName)));
      }
      if (rematReport)
        llvm::outs() << "zt-remat @" << fn.getSymName() << ": peak "
                     << firstPeak << " -> " << peak
                     << " live arena bytes, budget " << memoryBudget << "; " << copies
                     << " ops copied, " << llvm::format("%.4g", flops)
                     << " FLOPs\n";
      return success();
    };
    for (;;) {
      FailureOr<BufferLiveness> live =
          BufferLiveness::compute(fn, true, false, alignment, attentionViews);
      if (failed(live))
        return failure();
      Step step(std::move(*live), alignment, start.getInt());
      auto [peak, at] = step.peak();
      if (firstPeak < 0) {
        firstPeak = peak;
        if (!rematProblem.empty())
          problem.emplace(step, memoryBudget);
      }
      if (peak <= memoryBudget)
        return done(peak);
      SmallVector<Candidate> candidates = candidatesAt(step, at, refused);
      std::optional<Candidate> best;
      for (Candidate &c : candidates)
        // Most bytes per FLOP; the earlier buffer on ties (deterministic).
        if (!best || c.bytes * best->flops > best->bytes * c.flops)
          best = c;
      if (best)
        for (const Candidate &c : candidates)
          absorb(step, *best, c);
      if (!best) {
        getOperation()->setAttr(ZTDialect::kRematExhaustedAttrName,
                                UnitAttr::get(fn.getContext()));
        return done(peak);
      }
      Applied applied = apply(step, *best);
      FailureOr<BufferLiveness> after =
          BufferLiveness::compute(fn, true, false, alignment, attentionViews);
      if (failed(after))
        return failure();
      if (Step(std::move(*after), alignment, start.getInt()).peak().first >
          peak) {
        applied.undo();
        refused.insert(best->value.getDefiningOp());
      } else {
        copies += static_cast<int64_t>(best->ops.size());
        flops += best->flops;
        copied.insert(best->ops.begin(), best->ops.end());
      }
    }
  }
};

} // namespace
