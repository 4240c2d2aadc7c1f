//===- Exact.cpp - depth-first search over canonical plans ----------------===//
//
// Decides whether every buffer fits under a capacity, after MiniMalloc
// (Moffitt, ASPLOS'23):
//
// - Canonical plans. Any plan pushed down until no buffer can move has each
//   buffer at its candidate (the lowest feasible offset above the buffers
//   below it that it overlaps in time); taken in (offset, rank) order, each
//   is at its candidate when placed. So the search only chooses which buffer
//   comes next, at or above the last offset and in rank order at the same
//   offset; offsets follow. Each unplaced buffer carries its candidate, which
//   only rises. Dominance by height: no buffer goes at or above the top an
//   unplaced buffer would have at its candidate (that one could sit lower).
// - Cross-section inference. In every time section, the unplaced buffers that
//   cover it must stack above the lowest of their candidates: if that floor
//   plus their total size exceeds the capacity, the state is dead. Raising
//   the level to a buffer's candidate lifts every section to it, so only
//   buffers with candidate <= capacity - (largest section demand) can go next.
// - Interchangeable buffers. Two unplaced buffers with the same lifetime, size,
// alignment
//   and candidate are interchangeable: only the first is tried. Failed states
//   (the unplaced buffers and their candidates) are remembered, so a state
//   reached again by another order is not searched twice.
// - Dynamic temporal decomposition. When no unplaced buffer spans some
//   moment, the buffers before and after it never interact again: each side
//   is solved on its own, and a failure on one side fails the state without
//   trying the other side's alternatives. Each side is ranked afresh by what
//   is still unplaced in it (the busiest sections have moved): with a fixed
//   ranking, MiniMalloc's instances E, H and I stayed unsolved at 20 s; with
//   ranks renewed at each split they solve in under 1 s.
//
//===----------------------------------------------------------------------===//

#include "zcc/Planner/Algorithms.h"

#include "Sections.h"
#include "StateKey.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <functional>
#include <iterator>
#include <numeric>
#include <string>
#include <unordered_set>
#include <utility>

#include <pthread.h>

namespace zcc::planner {

namespace {

using Clock = std::chrono::steady_clock;

struct Item {
  uint32_t buffer;
  int64_t candidate;
};

using detail::mix;
using detail::StateKey;
using detail::StateKeyHash;

/// Range add, range max over sections (for the stack inference), bottom-up
/// over a power-of-two leaf count: an add lifts the nodes covering its range
/// and keeps what each internal node owes its children (`owed`) until a
/// query descends through it. Half the time of the recursive form, where the
/// exact search spent 40% of its time.
class AddMaxTree {
public:
  void reset(int32_t n) {
    leaves = 1;
    height = 0;
    while (leaves < std::max(n, 1)) {
      leaves *= 2;
      ++height;
    }
    maxima.assign(2 * leaves, 0);
    owed.assign(leaves, 0);
  }
  /// Adds `value` over [lo, hi), then returns the maximum there, in one
  /// pass: the nodes that cover the range are the ones the add lifts.
  int64_t addThenMax(int32_t lo, int32_t hi, int64_t value) {
    if (lo >= hi)
      return INT64_MIN / 2;
    int32_t l = lo + leaves, r = hi + leaves;
    settle(l);
    settle(r - 1);
    int64_t best = INT64_MIN / 2;
    for (; l < r; l >>= 1, r >>= 1) {
      if (l & 1) {
        lift(l, value);
        best = std::max(best, maxima[l++]);
      }
      if (r & 1) {
        lift(--r, value);
        best = std::max(best, maxima[r]);
      }
    }
    rebuild(lo + leaves, hi - 1 + leaves);
    return best;
  }
  void add(int32_t lo, int32_t hi, int64_t value) { addThenMax(lo, hi, value); }
  int64_t max(int32_t lo, int32_t hi) { return addThenMax(lo, hi, 0); }

private:
  void lift(int32_t node, int64_t value) {
    maxima[node] += value;
    if (node < leaves)
      owed[node] += value;
  }
  /// Recomputes the ancestors of leaves `a` and `b` from their children,
  /// their common ones once.
  void rebuild(int32_t a, int32_t b) {
    auto recompute = [&](int32_t node) {
      maxima[node] =
          std::max(maxima[2 * node], maxima[2 * node + 1]) + owed[node];
    };
    for (a >>= 1, b >>= 1; a != b; a >>= 1, b >>= 1) {
      recompute(a);
      recompute(b);
    }
    for (; a >= 1; a >>= 1)
      recompute(a);
  }
  /// Hands what the ancestors of `node` owe down to their children, top
  /// first, so the nodes a query reads are up to date.
  void settle(int32_t node) {
    for (int32_t shift = height; shift > 0; --shift) {
      int32_t parent = node >> shift;
      if (owed[parent] != 0) {
        lift(2 * parent, owed[parent]);
        lift(2 * parent + 1, owed[parent]);
        owed[parent] = 0;
      }
    }
  }

  int32_t leaves = 1, height = 0;
  std::vector<int64_t> maxima, owed;
};

class ExactSearch {
public:
  ExactSearch(const Problem &problem, const detail::Sections &sections,
              int64_t capacity, Clock::time_point deadline)
      : buffers(problem.buffers), sections(sections), capacity(capacity),
        deadline(deadline) {}

  /// One search that gives up after `nodeLimit` expansions. Failed states
  /// are kept across runs: a state is only remembered once fully refuted.
  /// `rankKeys` (see rankGroup) ranks the buffers, which breaks ties in the
  /// branch order.
  ExactStatus run(const char *rankKeys, uint64_t nodeLimit,
                  std::vector<int64_t> &offsets) {
    if (sections.fixedTop() > capacity)
      return ExactStatus::Infeasible;
    keys = rankKeys;
    rankOf.assign(buffers.size(), 0);
    std::vector<Item> items;
    for (uint32_t i : sections.movable())
      items.push_back({i, sections.lowestFeasible(i, 0)});
    std::stable_sort(
        items.begin(), items.end(), [&](const Item &x, const Item &y) {
          return sections.first(x.buffer) < sections.first(y.buffer);
        });
    result = &offsets;
    stopAt = nodes + nodeLimit;
    aborted = false;
    if (solve(items.data(), items.data() + items.size(), 0, -1,
              /*split=*/true))
      return ExactStatus::Found;
    return aborted ? ExactStatus::OutOfTime : ExactStatus::Infeasible;
  }

  uint64_t nodeCount() const { return nodes; }
  bool pastDeadline() const { return Clock::now() > deadline; }

private:
  int64_t size(const Item &item) const { return buffers[item.buffer].size; }

  /// Items are sorted by first section; solves each time-separated group.
  /// `level` is the last placement's offset and `lastRank` its buffer's
  /// rank, or -1 when placements at `level` may come in any order. `split`
  /// says the items were just cut off from others (or are the whole
  /// problem): then they are ranked afresh.
  bool solve(const Item *begin, const Item *end, int64_t level,
             int64_t lastRank, bool split) {
    const Item *const all = begin;
    while (begin != end) {
      const Item *groupEnd = begin;
      int32_t reach = sections.last(groupEnd->buffer);
      for (++groupEnd;
           groupEnd != end && sections.first(groupEnd->buffer) < reach;
           ++groupEnd)
        reach = std::max(reach, sections.last(groupEnd->buffer));
      bool solved;
      if (split || begin != all || groupEnd != end) {
        // Buffers of another group at the level never overlap this one's
        // (those would lie above them), so this group's placements at the
        // level may come in any order of its own ranks.
        std::vector<std::pair<uint32_t, uint32_t>> saved;
        for (const Item *item = begin; item != groupEnd; ++item)
          saved.emplace_back(item->buffer, rankOf[item->buffer]);
        rankGroup(begin, groupEnd);
        solved = solveGroup(begin, groupEnd, level, -1);
        for (const auto &[buffer, rank] : saved)
          rankOf[buffer] = rank;
      } else {
        solved = solveGroup(begin, groupEnd, level, lastRank);
      }
      if (!solved)
        return false;
      begin = groupEnd;
    }
    return true;
  }

  /// Ranks a group's buffers by `keys`, each descending, ties by index: 'T'
  /// the most bytes of the group live at once over the buffer's lifetime
  /// (the busiest section it covers), 'W' its lifetime, 'A' its area
  /// (lifetime x size), 'Z' its size: MiniMalloc's preorderings.
  void rankGroup(const Item *begin, const Item *end) {
    const int32_t spanBegin = sections.first(begin->buffer);
    int32_t spanEnd = spanBegin;
    for (const Item *item = begin; item != end; ++item)
      spanEnd = std::max(spanEnd, sections.last(item->buffer));
    stack.reset(spanEnd - spanBegin);
    for (const Item *item = begin; item != end; ++item)
      stack.add(sections.first(item->buffer) - spanBegin,
                sections.last(item->buffer) - spanBegin, size(*item));
    const size_t keyCount = std::char_traits<char>::length(keys);
    std::vector<int64_t> table; // keyCount keys per item, then its buffer
    for (const Item *item = begin; item != end; ++item) {
      const BufferRequest &b = buffers[item->buffer];
      for (const char *k = keys; *k; ++k)
        table.push_back(
            *k == 'T'   ? stack.max(sections.first(item->buffer) - spanBegin,
                                    sections.last(item->buffer) - spanBegin)
            : *k == 'W' ? b.upper - b.lower
            : *k == 'A' ? (b.upper - b.lower) * b.size
                        : b.size);
      table.push_back(item->buffer);
    }
    const size_t stride = keyCount + 1, n = end - begin;
    std::vector<uint32_t> order(n);
    std::iota(order.begin(), order.end(), 0u);
    std::sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
      const int64_t *kx = &table[x * stride], *ky = &table[y * stride];
      for (size_t k = 0; k < keyCount; ++k)
        if (kx[k] != ky[k])
          return kx[k] > ky[k];
      return kx[keyCount] < ky[keyCount];
    });
    for (uint32_t r = 0; r < n; ++r)
      rankOf[table[order[r] * stride + keyCount]] = r;
  }

  bool solveGroup(const Item *begin, const Item *end, int64_t level,
                  int64_t lastRank) {
    const size_t n = end - begin;
    // Whether `item` may come next, at its candidate: offsets never fall,
    // and placements at one offset (disjoint in time, so they commute) come
    // in rank order. A buffer below the level waits for a placement that
    // overlaps it to lift it; until then it sits at the level at best.
    auto eligible = [&](const Item &item) {
      return item.candidate > level ||
             (item.candidate == level &&
              static_cast<int64_t>(rankOf[item.buffer]) > lastRank);
    };
    auto lifted = [&](const Item &item) {
      return std::max(item.candidate, level);
    };
    if (n == 1) {
      if (!eligible(*begin) || begin->candidate + size(*begin) > capacity)
        return false;
      (*result)[begin->buffer] = begin->candidate;
      return true;
    }
    // Nodes of big groups are slow enough to check the clock at each one.
    if (aborted || ++nodes >= stopAt ||
        ((n > 256 || (nodes & 1023) == 0) && pastDeadline())) {
      aborted = true;
      return false;
    }

    // Branch order: lowest (lifted) candidate first, then rank (ranks are
    // distinct within a group, so the order is total). Sorted as keys side
    // by side rather than through the items.
    struct BranchKey {
      int64_t lifted;
      uint32_t rank, item;
    };
    std::vector<BranchKey> keys(n);
    for (uint32_t k = 0; k < n; ++k)
      keys[k] = {lifted(begin[k]), rankOf[begin[k].buffer], k};
    std::sort(
        keys.begin(), keys.end(), [](const BranchKey &x, const BranchKey &y) {
          return x.lifted != y.lifted ? x.lifted < y.lifted : x.rank < y.rank;
        });
    std::vector<uint32_t> order(n);
    for (uint32_t k = 0; k < n; ++k)
      order[k] = keys[k].item;

    // Dominance: a plan whose buffers all sit as low as they can (any plan
    // can be pushed down into one) never puts a buffer at or above the top
    // another unplaced buffer would have at its candidate: that buffer's
    // bytes there stay free for good, so it could sit lower.
    int64_t minHeight = INT64_MAX;
    for (const Item *item = begin; item != end; ++item)
      minHeight = std::min(minHeight, item->candidate + size(*item));
    if (minHeight <= level)
      return false;

    // Cross-section inference over the group's span of sections.
    const int32_t spanBegin = sections.first(begin->buffer);
    int32_t spanEnd = spanBegin;
    for (const Item *item = begin; item != end; ++item)
      spanEnd = std::max(spanEnd, sections.last(item->buffer));
    const int32_t span = spanEnd - spanBegin;
    // Per section, the demand, and how many buffers that may go at the
    // lowest level now cover it (its floor is that level when any does).
    const int64_t lowest = lifted(begin[order[0]]);
    std::vector<int64_t> demand(span + 1, 0);
    std::vector<int32_t> atLowest(span + 1, 0);
    for (const Item *item = begin; item != end; ++item) {
      const int32_t from = sections.first(item->buffer) - spanBegin;
      const int32_t to = sections.last(item->buffer) - spanBegin;
      demand[from] += size(*item);
      demand[to] -= size(*item);
      if (lifted(*item) == lowest) {
        ++atLowest[from];
        --atLowest[to];
      }
    }
    // Sections whose demand exactly fills them from the lowest level up are
    // tight (used below); the peak demand bounds the levels worth trying.
    std::vector<char> tight(span, 0);
    bool anyTight = false;
    int64_t live = 0, peakDemand = 0;
    int32_t lowestCover = 0;
    for (int32_t t = 0; t < span; ++t) {
      live += demand[t];
      lowestCover += atLowest[t];
      peakDemand = std::max(peakDemand, live);
      tight[t] = live > 0 && lowestCover > 0 && lowest + live == capacity;
      anyTight = anyTight || tight[t];
    }

    // Stack inference (it implies, per section, lowest candidate covering it
    // + demand <= capacity): a buffer with candidate c ends up above c, under
    // every buffer with a candidate >= c that shares a section with it; all
    // must fit. Those stacks are at most the peak demand, so from the first
    // buffer (going down the candidates) that fits under the peak, the rest
    // do too.
    stack.reset(span);
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const Item &item = begin[*it];
      if (lifted(item) + peakDemand <= capacity)
        break;
      int32_t from = sections.first(item.buffer) - spanBegin;
      int32_t to = sections.last(item.buffer) - spanBegin;
      if (lifted(item) + stack.addThenMax(from, to, size(item)) > capacity)
        return false;
    }

    StateKey key = hashState(begin, end, level, lastRank);
    if (failed.count(key))
      return false;

    // A tight section has no byte to spare: some buffer that may go at the
    // lowest level now must sit there. Buffers at one level are disjoint in
    // time, so no disjoint choice of them covering every tight section
    // means a dead state. (Branching only on the buffers covering one tight
    // section would be sound too, but it breaks the rank order at the level,
    // and the rank order prunes far more on MiniMalloc's hard instances.)
    if (anyTight) {
      std::vector<char> reach(span + 1, 0);
      reach[0] = 1;
      const Item *cursor = begin;
      for (int32_t t = 0; t < span; ++t) {
        for (; cursor != end && sections.first(cursor->buffer) - spanBegin == t;
             ++cursor)
          if (reach[t] && cursor->candidate == lowest && eligible(*cursor))
            reach[sections.last(cursor->buffer) - spanBegin] = 1;
        if (reach[t] && !tight[t])
          reach[t + 1] = 1;
      }
      if (!reach[span])
        return false;
    }

    std::vector<Item> child(n - 1);
    const Item *previous = nullptr;
    for (uint32_t k : order) {
      const Item &chosen = begin[k];
      if (!eligible(chosen))
        continue;
      // Eligible buffers come in candidate order: past either limit, every
      // later one is past it too. Every other section rises to the chosen
      // level, so the peak section must fit above it.
      if (chosen.candidate >= minHeight ||
          chosen.candidate + peakDemand > capacity)
        break;
      if (previous && interchangeable(*previous, chosen))
        continue;
      previous = &chosen;
      const int64_t at = chosen.candidate;
      const int64_t top = at + size(chosen);
      bool dead = false;
      // Written field by field: a whole Item built on the stack and copied
      // stalls on store forwarding, a tenth of the search's time.
      Item *out = child.data();
      for (const Item *item = begin; item != end && !dead; ++item) {
        if (item == &chosen)
          continue;
        int64_t candidate = item->candidate;
        if (sections.overlap(item->buffer, chosen.buffer) && candidate < top)
          candidate = sections.lowestFeasible(item->buffer, top);
        dead = std::max(candidate, at) + size(*item) > capacity;
        out->buffer = item->buffer;
        out->candidate = candidate;
        ++out;
      }
      if (dead)
        continue;
      if (solve(child.data(), out, at, rankOf[chosen.buffer],
                /*split=*/false)) {
        (*result)[chosen.buffer] = at;
        return true;
      }
      if (aborted)
        return false;
    }
    if (failed.size() >= kMaxRemembered)
      failed.clear(); // bounded memory; forgetting is always sound
    failed.insert(key);
    return false;
  }

  bool interchangeable(const Item &x, const Item &y) const {
    const BufferRequest &a = buffers[x.buffer], &b = buffers[y.buffer];
    return x.candidate == y.candidate && a.lower == b.lower &&
           a.upper == b.upper && a.size == b.size && a.alignment == b.alignment;
  }

  /// The unplaced buffers, their candidates and ranks, the level and the
  /// last rank placed there (ranks differ between runs and between the
  /// paths that split a group off).
  StateKey hashState(const Item *begin, const Item *end, int64_t level,
                     int64_t lastRank) const {
    StateKey key{0x243f6a8885a308d3ULL ^ mix(static_cast<uint64_t>(level)),
                 0x13198a2e03707344ULL ^ mix(static_cast<uint64_t>(lastRank))};
    for (const Item *item = begin; item != end; ++item) {
      uint64_t h = mix(item->buffer ^
                       (static_cast<uint64_t>(rankOf[item->buffer]) << 32) ^
                       mix(static_cast<uint64_t>(item->candidate)));
      key.a = mix(key.a ^ h);
      key.b = mix(key.b + (h | 1) * 0x9e3779b97f4a7c15ULL);
    }
    return key;
  }

  static constexpr size_t kMaxRemembered = size_t{1} << 21;

  const std::vector<BufferRequest> &buffers;
  const detail::Sections &sections;
  const int64_t capacity;
  const Clock::time_point deadline;
  const char *keys = "";
  std::vector<uint32_t> rankOf; // of the unplaced buffers, within each group
  AddMaxTree stack;             // scratch, rebuilt at every node and split
  std::unordered_set<StateKey, StateKeyHash> failed;
  std::vector<int64_t> *result = nullptr;
  uint64_t nodes = 0, stopAt = 0;
  bool aborted = false;
};

constexpr size_t kBaseStackBytes = size_t{16} << 20;
constexpr size_t kStackBytesPerBuffer = 1024;

/// The search recurses once per placement, so its depth is the buffer count;
/// it runs on a thread whose stack is sized for that instead of the default.
void runWithStack(size_t bytes, std::function<void()> body) {
  pthread_attr_t attributes;
  pthread_t thread;
  bool started = pthread_attr_init(&attributes) == 0 &&
                 pthread_attr_setstacksize(&attributes, bytes) == 0 &&
                 pthread_create(
                     &thread, &attributes,
                     [](void *fn) -> void * {
                       (*static_cast<std::function<void()> *>(fn))();
                       return nullptr;
                     },
                     &body) == 0;
  pthread_attr_destroy(&attributes);
  if (started)
    pthread_join(thread, nullptr);
  else
    body(); // no thread to be had: run here on the default stack
}

} // namespace

ExactStatus planExact(const Problem &problem, int64_t capacity,
                      double timeLimitSeconds, Plan &plan, uint64_t *nodeCount,
                      uint64_t nodeLimit) {
  detail::Sections sections(problem);
  auto deadline =
      Clock::now() +
      std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(std::max(timeLimitSeconds, 0.0)));
  std::vector<int64_t> offsets = sections.initialOffsets();
  ExactStatus status = ExactStatus::OutOfTime;
  uint64_t nodes = 0;
  runWithStack(
      kBaseStackBytes + kStackBytesPerBuffer * problem.buffers.size(), [&] {
        ExactSearch search(problem, sections, capacity, deadline);
        // Restarts with a growing node budget, cycling through the
        // buffer rankings: search times are heavy-tailed, and an
        // order that stalls is often solved at once by another.
        // MiniMalloc's three, then largest first, which packs cut
        // rectangles (the known-optimum instances) at once where the
        // others stall.
        const char *const rankings[] = {"TWA", "TAW", "WAT", "Z"};
        const uint64_t count = std::size(rankings);
        for (uint64_t attempt = 0;; ++attempt) {
          // Enough for a few descents to start with.
          uint64_t base = 1024 + 4 * sections.movable().size();
          uint64_t budget = base << std::min<uint64_t>(attempt / count, 40);
          budget = std::min(budget, nodeLimit - search.nodeCount());
          status = search.run(rankings[attempt % count], budget, offsets);
          if (status != ExactStatus::OutOfTime || search.pastDeadline() ||
              search.nodeCount() >= nodeLimit)
            break;
        }
        nodes = search.nodeCount();
      });
  if (nodeCount)
    *nodeCount = nodes;
  if (status == ExactStatus::Found) {
    plan.offsets = std::move(offsets);
    plan.arenaSize = computeArenaSize(problem, plan.offsets);
  }
  return status;
}

} // namespace zcc::planner
