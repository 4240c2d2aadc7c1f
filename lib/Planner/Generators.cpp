//===- Generators.cpp - seeded planning instances -------------------------===//

#include "zcc/Planner/Generators.h"

#include <algorithm>
#include <random>

namespace zcc::planner {

namespace {

// std::mt19937_64 is specified exactly by the standard; the distributions are
// not, so values are drawn with explicit arithmetic for portable instances.
struct Random {
  explicit Random(uint64_t seed) : engine(seed) {}
  /// Uniform in [lo, hi].
  int64_t between(int64_t lo, int64_t hi) {
    uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
    return lo + static_cast<int64_t>(engine() % span);
  }
  std::mt19937_64 engine;
};

struct Piece {
  int64_t lower, upper, bottom, top;
};

} // namespace

Problem generateRandomProblem(uint64_t seed, int count, int64_t horizon,
                              int64_t maxSize) {
  Random random(seed);
  Problem problem;
  for (int i = 0; i < count; ++i) {
    BufferRequest buffer;
    buffer.id = i;
    buffer.lower = random.between(0, horizon - 1);
    buffer.upper = random.between(buffer.lower + 1, horizon);
    buffer.size = random.between(0, maxSize);
    buffer.alignment = int64_t{1} << random.between(0, 6);
    problem.buffers.push_back(buffer);
  }
  if (count > 0 && random.between(0, 7) == 0) {
    BufferRequest &pinned = problem.buffers[random.between(0, count - 1)];
    pinned.fixedOffset = pinned.alignment * random.between(0, 16);
  }
  return problem;
}

Problem generateRectangleProblem(uint64_t seed, int count, int64_t capacity,
                                 int64_t horizon) {
  Random random(seed);
  std::vector<Piece> pieces = {{0, horizon, 0, capacity}};
  // Cut a random piece that can still be cut, until there are `count`.
  for (int attempts = 0;
       static_cast<int>(pieces.size()) < count && attempts < count * 64;
       ++attempts) {
    size_t index = random.between(0, pieces.size() - 1);
    Piece piece = pieces[index];
    bool canCutTime = piece.upper - piece.lower >= 2;
    bool canCutSpace = piece.top - piece.bottom >= 2;
    if (!canCutTime && !canCutSpace)
      continue;
    bool cutTime = canCutTime && (!canCutSpace || random.between(0, 1) == 0);
    Piece first = piece, second = piece;
    if (cutTime) {
      int64_t at = random.between(piece.lower + 1, piece.upper - 1);
      first.upper = at;
      second.lower = at;
    } else {
      int64_t at = random.between(piece.bottom + 1, piece.top - 1);
      first.top = at;
      second.bottom = at;
    }
    pieces[index] = first;
    pieces.push_back(second);
  }
  // Shuffle so the input order says nothing about the optimal layout.
  for (size_t i = pieces.size(); i > 1; --i)
    std::swap(pieces[i - 1], pieces[random.between(0, i - 1)]);
  Problem problem;
  for (size_t i = 0; i < pieces.size(); ++i) {
    BufferRequest buffer;
    buffer.id = static_cast<int64_t>(i);
    buffer.lower = pieces[i].lower;
    buffer.upper = pieces[i].upper;
    buffer.size = pieces[i].top - pieces[i].bottom;
    problem.buffers.push_back(buffer);
  }
  return problem;
}

} // namespace zcc::planner
