//===- OverlapIndex.cpp - centred interval tree over lifetimes ------------===//

#include "OverlapIndex.h"

#include <algorithm>
#include <numeric>

namespace zcc::planner::detail {

OverlapIndex::OverlapIndex(const std::vector<BufferRequest> &buffers)
    : buffers(buffers) {
  byLower.resize(buffers.size());
  std::iota(byLower.begin(), byLower.end(), 0u);
  std::stable_sort(byLower.begin(), byLower.end(), [&](uint32_t a, uint32_t b) {
    return buffers[a].lower < buffers[b].lower;
  });
  std::vector<uint32_t> items = byLower;
  root = build(items);
}

int32_t OverlapIndex::build(std::vector<uint32_t> &items) {
  if (items.empty())
    return -1;
  // `items` is sorted by lower. The median buffer's lower as the centre puts
  // at least that buffer in this node, so every level shrinks.
  int64_t center = buffers[items[items.size() / 2]].lower;
  std::vector<uint32_t> left, right, here;
  for (uint32_t j : items) {
    if (buffers[j].upper <= center)
      left.push_back(j);
    else if (buffers[j].lower > center)
      right.push_back(j);
    else
      here.push_back(j);
  }
  items.clear();
  items.shrink_to_fit();
  int32_t index = static_cast<int32_t>(nodes.size());
  nodes.emplace_back();
  nodes[index].center = center;
  nodes[index].byLower = here; // still sorted by lower
  nodes[index].byUpperDesc = std::move(here);
  std::stable_sort(nodes[index].byUpperDesc.begin(),
                   nodes[index].byUpperDesc.end(), [&](uint32_t a, uint32_t b) {
                     return buffers[a].upper > buffers[b].upper;
                   });
  int32_t leftChild = build(left);
  int32_t rightChild = build(right);
  nodes[index].left = leftChild;
  nodes[index].right = rightChild;
  return index;
}

std::vector<uint32_t>::const_iterator
OverlapIndex::firstStartAfter(int64_t time) const {
  return std::upper_bound(
      byLower.begin(), byLower.end(), time,
      [&](int64_t t, uint32_t j) { return t < buffers[j].lower; });
}

} // namespace zcc::planner::detail
