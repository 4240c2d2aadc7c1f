//===- Skyline.cpp - bottom-up placement at the lowest level --------------===//
//
// Buffers are placed in non-decreasing offset order: each step takes the
// lowest level any unplaced buffer can sit at (above everything placed that
// overlaps it in time) and puts there the buffer that ranks first. This is
// one descent of the exact search's canonical order (see Exact.cpp).
//
// It is event driven, so a buffer is looked at only when it may have become
// placeable. The skyline (top of the placed buffers per section) only rises,
// and a placement at level L raises its sections to L + size. A buffer can sit
// at the level exactly when its sections lie in a valley: a maximal run of
// sections whose skyline is at or below the level. Valleys only grow when the
// level reaches the top of an earlier placement, so each placement is an
// event at its top; when it fires, the buffers that now lie inside the valley
// around it are pulled out of a min-last segment tree over buffers sorted by
// first section. A buffer blocked by a placement goes back into that tree.
//
// With a capacity, the descent also keeps every section's unplaced demand
// above its floor within the capacity, and covers first the sections that
// would overflow when the level next rises (the tight sections of the exact
// search). It gives up at the first dead end rather than backtracking.
//
//===----------------------------------------------------------------------===//

#include "zcc/Planner/Algorithms.h"

#include "Sections.h"

#include <algorithm>
#include <climits>
#include <queue>
#include <tuple>
#include <utility>

namespace zcc::planner {

namespace {

constexpr int64_t kNoAssign = -1;

/// Per section: the skyline (range assign) and the unplaced demand (range
/// add), with their maxima and the maximum of their sum.
class SectionTree {
public:
  explicit SectionTree(const std::vector<int64_t> &demand)
      : size(std::max<int32_t>(static_cast<int32_t>(demand.size()), 1)) {
    nodes.assign(4 * size, Node{});
    build(1, 0, size, demand);
  }

  int64_t maxSky(int32_t lo, int32_t hi) {
    return querySky(1, 0, size, lo, hi);
  }
  int64_t maxDemand() const { return nodes[1].demand; }
  int64_t maxSum() const { return nodes[1].sum; }

  /// Places a buffer of `bytes` over [lo, hi) with its top at `top`.
  void place(int32_t lo, int32_t hi, int64_t top, int64_t bytes) {
    update(1, 0, size, lo, hi, top, -bytes);
  }

  /// The last section before `at` whose skyline is above `level`, or -1.
  int32_t lastAbove(int32_t at, int64_t level) {
    return findLast(1, 0, size, at, level);
  }
  /// The first section at or after `at` whose skyline is above `level`, or
  /// the section count.
  int32_t firstAbove(int32_t at, int64_t level) {
    int32_t found =
        findFirst(1, 0, size, at, [&](const Node &n) { return n.sky > level; });
    return found < 0 ? size : found;
  }
  /// The first section at or after `at` whose skyline is at or below
  /// `level`, or the section count.
  int32_t firstAtOrBelow(int32_t at, int64_t level) {
    int32_t found = findFirst(1, 0, size, at,
                              [&](const Node &n) { return n.lowSky <= level; });
    return found < 0 ? size : found;
  }
  /// The first section whose demand is above `bound`, or -1.
  int32_t firstDemandAbove(int64_t bound) {
    return findFirst(1, 0, size, 0,
                     [&](const Node &n) { return n.demand > bound; });
  }

private:
  struct Node {
    int64_t sky = 0, lowSky = 0, demand = 0, sum = 0;
    int64_t assign = kNoAssign, add = 0;
  };

  void build(int32_t node, int32_t l, int32_t r,
             const std::vector<int64_t> &demand) {
    if (r - l == 1) {
      int64_t d = l < static_cast<int32_t>(demand.size()) ? demand[l] : 0;
      nodes[node] = {0, 0, d, d, kNoAssign, 0};
      return;
    }
    int32_t mid = (l + r) / 2;
    build(2 * node, l, mid, demand);
    build(2 * node + 1, mid, r, demand);
    pull(node);
  }
  void apply(int32_t node, int64_t assign, int64_t add) {
    Node &n = nodes[node];
    n.demand += add;
    if (assign != kNoAssign) {
      n.sky = n.lowSky = assign;
      n.assign = assign;
      n.sum = assign + n.demand;
    } else {
      n.sum += add;
    }
    n.add += add;
  }
  void push(int32_t node) {
    Node &n = nodes[node];
    if (n.assign == kNoAssign && n.add == 0)
      return;
    for (int32_t child : {2 * node, 2 * node + 1})
      apply(child, n.assign, n.add);
    n.assign = kNoAssign;
    n.add = 0;
  }
  void pull(int32_t node) {
    const Node &a = nodes[2 * node], &b = nodes[2 * node + 1];
    Node &n = nodes[node];
    n.sky = std::max(a.sky, b.sky);
    n.lowSky = std::min(a.lowSky, b.lowSky);
    n.demand = std::max(a.demand, b.demand);
    n.sum = std::max(a.sum, b.sum);
  }
  void update(int32_t node, int32_t l, int32_t r, int32_t lo, int32_t hi,
              int64_t assign, int64_t add) {
    if (hi <= l || r <= lo)
      return;
    if (lo <= l && r <= hi) {
      apply(node, assign, add);
      return;
    }
    push(node);
    int32_t mid = (l + r) / 2;
    update(2 * node, l, mid, lo, hi, assign, add);
    update(2 * node + 1, mid, r, lo, hi, assign, add);
    pull(node);
  }
  int64_t querySky(int32_t node, int32_t l, int32_t r, int32_t lo, int32_t hi) {
    if (hi <= l || r <= lo)
      return 0;
    if (lo <= l && r <= hi)
      return nodes[node].sky;
    push(node);
    int32_t mid = (l + r) / 2;
    return std::max(querySky(2 * node, l, mid, lo, hi),
                    querySky(2 * node + 1, mid, r, lo, hi));
  }
  int32_t findLast(int32_t node, int32_t l, int32_t r, int32_t before,
                   int64_t level) {
    if (l >= before || nodes[node].sky <= level)
      return -1;
    if (r - l == 1)
      return l;
    push(node);
    int32_t mid = (l + r) / 2;
    int32_t found = findLast(2 * node + 1, mid, r, before, level);
    return found >= 0 ? found : findLast(2 * node, l, mid, before, level);
  }
  /// The first section at or after `from` in a subtree where `holds` is
  /// true of every leaf it marks; `holds` on an inner node says whether the
  /// subtree may contain one (a maximum or minimum test).
  template <typename Holds>
  int32_t findFirst(int32_t node, int32_t l, int32_t r, int32_t from,
                    const Holds &holds) {
    if (r <= from || !holds(nodes[node]))
      return -1;
    if (r - l == 1)
      return l;
    push(node);
    int32_t mid = (l + r) / 2;
    int32_t found = findFirst(2 * node, l, mid, from, holds);
    return found >= 0 ? found : findFirst(2 * node + 1, mid, r, from, holds);
  }

  int32_t size;
  std::vector<Node> nodes;
};

/// Buffers at positions sorted by first section, each with its last section
/// and a rank; present (at first, all) or not. Answers: the best (smallest)
/// rank present among positions [lo, hi) whose last section is in (lastAbove,
/// lastAtMost]. A merge-sort tree: each node keeps its positions sorted by last
/// section and a min-rank tree over them, so queries and updates take O(log^2
/// n).
class RangeTree {
public:
  static constexpr uint32_t kNone = UINT32_MAX;

  RangeTree(const std::vector<int32_t> &lastOf,
            const std::vector<uint32_t> &rankOf)
      : lastOf(lastOf), rankOf(rankOf) {
    const int32_t n = static_cast<int32_t>(lastOf.size());
    while (leaves < n)
      leaves *= 2;
    // Node k's slice of `entries` holds its positions sorted by (last,
    // position); leaves past n are empty. Children merge into parents.
    std::vector<int32_t> count(2 * leaves, 0);
    for (int32_t p = 0; p < n; ++p)
      count[leaves + p] = 1;
    for (int32_t k = leaves - 1; k >= 1; --k)
      count[k] = count[2 * k] + count[2 * k + 1];
    begin.assign(2 * leaves + 1, 0);
    for (int32_t k = 1; k < 2 * leaves; ++k)
      begin[k + 1] = begin[k] + count[k];
    entries.resize(begin[2 * leaves]);
    for (int32_t p = 0; p < n; ++p)
      entries[begin[leaves + p]] = p;
    for (int32_t k = leaves - 1; k >= 1; --k)
      std::merge(entries.data() + begin[2 * k],
                 entries.data() + begin[2 * k + 1],
                 entries.data() + begin[2 * k + 1],
                 entries.data() + begin[2 * k + 2], entries.data() + begin[k],
                 [&](int32_t x, int32_t y) { return before(x, y); });
    // Every position starts present: each node's min tree over its entries.
    best.resize(2 * entries.size());
    for (int32_t k = 1; k < 2 * leaves; ++k) {
      const int32_t m = begin[k + 1] - begin[k];
      uint32_t *tree = best.data() + 2 * begin[k];
      for (int32_t j = 0; j < m; ++j)
        tree[m + j] = rankOf[entries[begin[k] + j]];
      for (int32_t j = m - 1; j >= 1; --j)
        tree[j] = std::min(tree[2 * j], tree[2 * j + 1]);
    }
  }

  void insert(int32_t position) { setRank(position, rankOf[position]); }
  void erase(int32_t position) { setRank(position, kNone); }

  uint32_t query(int32_t lo, int32_t hi, int32_t lastAbove,
                 int32_t lastAtMost) const {
    uint32_t found = kNone;
    for (int32_t a = lo + leaves, b = hi + leaves; a < b; a /= 2, b /= 2) {
      if (a & 1)
        found = std::min(found, nodeQuery(a++, lastAbove, lastAtMost));
      if (b & 1)
        found = std::min(found, nodeQuery(--b, lastAbove, lastAtMost));
    }
    return found;
  }

private:
  bool before(int32_t x, int32_t y) const {
    return lastOf[x] < lastOf[y] || (lastOf[x] == lastOf[y] && x < y);
  }
  void setRank(int32_t position, uint32_t rank) {
    for (int32_t k = position + leaves; k >= 1; k /= 2) {
      const int32_t *first = entries.data() + begin[k];
      const int32_t m = begin[k + 1] - begin[k];
      int32_t at = static_cast<int32_t>(
          std::lower_bound(first, first + m, position,
                           [&](int32_t x, int32_t y) { return before(x, y); }) -
          first);
      uint32_t *tree = best.data() + 2 * begin[k];
      at += m;
      tree[at] = rank;
      for (at /= 2; at >= 1; at /= 2)
        tree[at] = std::min(tree[2 * at], tree[2 * at + 1]);
    }
  }
  uint32_t nodeQuery(int32_t k, int32_t lastAbove, int32_t lastAtMost) const {
    const int32_t *first = entries.data() + begin[k];
    const int32_t m = begin[k + 1] - begin[k];
    auto byLast = [&](int32_t bound) {
      return static_cast<int32_t>(
          std::upper_bound(
              first, first + m, bound,
              [&](int32_t value, int32_t x) { return value < lastOf[x]; }) -
          first);
    };
    int32_t a = byLast(lastAbove) + m, b = byLast(lastAtMost) + m;
    const uint32_t *tree = best.data() + 2 * begin[k];
    uint32_t found = kNone;
    for (; a < b; a /= 2, b /= 2) {
      if (a & 1)
        found = std::min(found, tree[a++]);
      if (b & 1)
        found = std::min(found, tree[--b]);
    }
    return found;
  }

  const std::vector<int32_t> &lastOf;
  const std::vector<uint32_t> &rankOf;
  int32_t leaves = 1;
  std::vector<int32_t> begin, entries;
  std::vector<uint32_t> best; // per node: a min tree over its entries
};

class SkylineDescent {
public:
  SkylineDescent(const Problem &problem, const detail::Sections &sections,
                 const std::vector<uint32_t> &byRank, int64_t capacity)
      : buffers(problem.buffers), sections(sections), byRank(byRank),
        capacity(capacity), tree(sections.liveBytes(byRank)),
        positions(sortByFirst(sections, byRank)),
        present(positions.lasts, positions.ranks) {}

  /// Places every buffer into `offsets`; false at a dead end under the
  /// capacity.
  bool run(std::vector<int64_t> &offsets) {
    if (tree.maxDemand() > capacity)
      return false;
    pushValley(0, sections.count());
    for (size_t remaining = byRank.size(); remaining > 0;) {
      uint32_t r = RangeTree::kNone;
      if (capacity != INT64_MAX)
        r = pickUrgent();
      if (r == RangeTree::kNone) {
        if (valleys.empty()) {
          if (!advance())
            return false;
          continue;
        }
        r = pickFromValleys();
        if (r == RangeTree::kNone)
          continue;
      }
      const uint32_t i = byRank[r];
      const int64_t top = level + buffers[i].size;
      if (top > capacity)
        return false;
      offsets[i] = level;
      present.erase(positions.of[r]);
      tree.place(sections.first(i), sections.last(i), top, buffers[i].size);
      events.push({top, r});
      --remaining;
    }
    return true;
  }

private:
  using Keyed = std::pair<int64_t, uint32_t>;
  using MinHeap =
      std::priority_queue<Keyed, std::vector<Keyed>, std::greater<Keyed>>;
  struct Valley {
    uint32_t rank; // best rank inside when pushed
    int32_t begin, end;
    bool operator>(const Valley &other) const {
      return std::tie(rank, begin) > std::tie(other.rank, other.begin);
    }
  };

  /// Positions: buffers by first section, so that the buffers starting in a
  /// run of sections are one position range.
  struct Positions {
    std::vector<int32_t> of;     // rank -> position
    std::vector<uint32_t> ranks; // position -> rank
    std::vector<int32_t> firsts, lasts;
  };
  static Positions sortByFirst(const detail::Sections &sections,
                               const std::vector<uint32_t> &byRank) {
    const uint32_t n = static_cast<uint32_t>(byRank.size());
    Positions result;
    result.ranks.resize(n);
    for (uint32_t r = 0; r < n; ++r)
      result.ranks[r] = r;
    std::sort(result.ranks.begin(), result.ranks.end(),
              [&](uint32_t x, uint32_t y) {
                int32_t fx = sections.first(byRank[x]);
                int32_t fy = sections.first(byRank[y]);
                return fx < fy || (fx == fy && x < y);
              });
    result.of.resize(n);
    result.firsts.resize(n);
    result.lasts.resize(n);
    for (uint32_t p = 0; p < n; ++p) {
      uint32_t r = result.ranks[p];
      result.of[r] = static_cast<int32_t>(p);
      result.firsts[p] = sections.first(byRank[r]);
      result.lasts[p] = sections.last(byRank[r]);
    }
    return result;
  }

  int32_t positionAt(int32_t section) const {
    return static_cast<int32_t>(std::lower_bound(positions.firsts.begin(),
                                                 positions.firsts.end(),
                                                 section) -
                                positions.firsts.begin());
  }
  /// The best rank present lying inside sections [begin, end).
  uint32_t bestInside(int32_t begin, int32_t end) const {
    return present.query(positionAt(begin), positionAt(end), INT32_MIN, end);
  }
  void pushValley(int32_t begin, int32_t end) {
    if (begin >= end)
      return;
    uint32_t r = bestInside(begin, end);
    if (r != RangeTree::kNone)
      valleys.push({r, begin, end});
  }

  /// The valley heap's best buffer, or kNone after tidying a stale valley.
  /// Valleys are disjoint runs of sections at or below the level; placing a
  /// buffer splits its valley in two.
  uint32_t pickFromValleys() {
    Valley v = valleys.top();
    valleys.pop();
    uint32_t r = bestInside(v.begin, v.end);
    if (r == RangeTree::kNone)
      return r;
    const uint32_t i = byRank[r];
    if (tree.maxSky(sections.first(i), sections.last(i)) > level) {
      // An urgent placement landed inside: keep the parts still level.
      for (int32_t t = tree.firstAtOrBelow(v.begin, level); t < v.end;
           t = tree.firstAtOrBelow(t, level)) {
        int32_t stop = std::min(tree.firstAbove(t, level), v.end);
        pushValley(t, stop);
        t = stop;
      }
      return RangeTree::kNone;
    }
    if (r > v.rank) {
      valleys.push({r, v.begin, v.end}); // its best went elsewhere
      return RangeTree::kNone;
    }
    if (sections.lowestFeasible(i, level) > level) {
      defer(r);
      pushValley(v.begin, v.end);
      return RangeTree::kNone;
    }
    pushValley(v.begin, sections.first(i));
    pushValley(sections.last(i), v.end);
    return r;
  }

  /// An obstacle or alignment lifts buffer (rank) r above the level: it
  /// waits, out of the tree, until the level reaches its candidate.
  void defer(uint32_t r) {
    present.erase(positions.of[r]);
    deferred.push({sections.lowestFeasible(byRank[r], level), r});
  }

  /// Raises the level to the next placement top or deferred candidate and
  /// opens the valleys there. False when the rise leaves some section's
  /// demand no room under the capacity.
  bool advance() {
    int64_t next = nextLevel();
    if (next == INT64_MAX)
      return false; // unreachable: unplaced buffers are somewhere
    level = next;
    opened.clear();
    auto open = [&](uint32_t r) {
      uint32_t i = byRank[r];
      int32_t begin = tree.lastAbove(sections.first(i), level) + 1;
      int32_t end = tree.firstAbove(sections.last(i), level);
      opened.emplace_back(begin, end);
    };
    while (!events.empty() && events.top().first == level) {
      open(events.top().second);
      events.pop();
    }
    while (!deferred.empty() && deferred.top().first <= level) {
      uint32_t r = deferred.top().second;
      deferred.pop();
      present.insert(positions.of[r]);
      if (tree.maxSky(sections.first(byRank[r]), sections.last(byRank[r])) <=
          level)
        open(r);
    }
    // Valleys around neighbouring placements coincide: open each once.
    std::sort(opened.begin(), opened.end());
    opened.erase(std::unique(opened.begin(), opened.end()), opened.end());
    for (auto [begin, end] : opened)
      pushValley(begin, end);
    return level + tree.maxDemand() <= capacity && tree.maxSum() <= capacity;
  }

  int64_t nextLevel() const {
    int64_t next = INT64_MAX;
    if (!events.empty())
      next = events.top().first;
    if (!deferred.empty())
      next = std::min(next, deferred.top().first);
    return next;
  }

  /// Under a capacity: the first section that would overflow if the level
  /// rose now must be covered at this level; the best-ranked buffer that can
  /// sit here over it, or kNone (also when there is no such section).
  uint32_t pickUrgent() {
    if (uncoverableAt == level)
      return RangeTree::kNone;
    int64_t next = nextLevel();
    if (next == INT64_MAX)
      return RangeTree::kNone;
    int32_t t = tree.firstDemandAbove(std::max<int64_t>(capacity - next, 0));
    if (t < 0)
      return RangeTree::kNone;
    // Its valley; a section above the level has room (see advance).
    int32_t begin = tree.lastAbove(t + 1, level) + 1;
    int32_t end = tree.firstAbove(t, level);
    for (;;) {
      uint32_t r = begin <= t ? present.query(positionAt(begin),
                                              positionAt(t + 1), t, end)
                              : RangeTree::kNone;
      if (r == RangeTree::kNone) {
        // Nothing here covers it; smaller placements elsewhere may still
        // lower the next level. Stop looking until the level changes.
        uncoverableAt = level;
        return r;
      }
      if (sections.lowestFeasible(byRank[r], level) == level)
        return r;
      defer(r);
    }
  }

  const std::vector<BufferRequest> &buffers;
  const detail::Sections &sections;
  const std::vector<uint32_t> &byRank;
  const int64_t capacity;
  SectionTree tree;
  const Positions positions;
  RangeTree present;
  std::priority_queue<Valley, std::vector<Valley>, std::greater<Valley>>
      valleys;
  std::vector<std::pair<int32_t, int32_t>> opened;
  MinHeap deferred, events;
  int64_t level = 0;
  int64_t uncoverableAt = -1;
};

} // namespace

Plan planSkyline(const Problem &problem, SkylineRank rank) {
  Plan plan; // with no capacity the descent always succeeds
  planSkylineWithin(problem, rank, INT64_MAX, plan);
  return plan;
}

bool planSkylineWithin(const Problem &problem, SkylineRank rank,
                       int64_t capacity, Plan &plan, uint64_t seed) {
  detail::Sections sections(problem);
  std::vector<int64_t> offsets = sections.initialOffsets();
  std::vector<uint32_t> byRank =
      detail::rankBuffers(problem.buffers, sections.movable(), rank, seed);
  if (!SkylineDescent(problem, sections, byRank, capacity).run(offsets))
    return false;
  plan.offsets = std::move(offsets);
  plan.arenaSize = computeArenaSize(problem, plan.offsets);
  return plan.arenaSize <= capacity;
}

} // namespace zcc::planner
