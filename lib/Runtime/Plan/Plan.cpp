//===- Plan.cpp - names and lookups of the in-memory plan -----------------===//

#include "zcc/Runtime/Plan/Plan.h"

using namespace zcc::runtime;

const char *zcc::runtime::dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "f32";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  case DType::BF16:
    return "bf16";
  case DType::Bool:
    return "bool";
  }
  return "?";
}

int64_t zcc::runtime::dtypeBytes(DType dtype) {
  switch (dtype) {
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::I64:
    return 8;
  case DType::BF16:
    return 2;
  case DType::Bool:
    return 1;
  }
  return 0;
}

int64_t TensorType::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string zcc::runtime::typeString(const TensorType &type) {
  std::string s;
  for (int64_t d : type.shape)
    s += std::to_string(d) + "x";
  return s + dtypeName(type.dtype);
}

int Entry::findTensor(std::string_view name, Region region) const {
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].name == name && buffers[tensors[i].buffer].region == region)
      return static_cast<int>(i);
  return -1;
}

int Plan::findEntry(std::string_view name) const {
  for (size_t i = 0; i < entries.size(); ++i)
    if (entries[i].name == name)
      return static_cast<int>(i);
  return -1;
}

uint32_t Plan::worldSize() const {
  if (!sharded.empty())
    return sharded.front().ranks;
  for (const Entry &e : entries)
    for (const Launch &l : e.launches)
      if (kernelIsSharded(l.kernel))
        return static_cast<uint32_t>(l.params.ranks);
  return 0;
}

bool Plan::communicates() const {
  for (const Entry &e : entries)
    for (const Launch &l : e.launches)
      if (kernelCommunicates(l.kernel))
        return true;
  return false;
}

const ShardedState *Plan::findShardedState(std::string_view name,
                                           size_t &param) const {
  for (const ShardedState &state : sharded)
    for (size_t i = 0; i < state.params.size(); ++i)
      if (name.size() == state.params[i].size() + state.suffix.size() &&
          name.substr(0, state.params[i].size()) == state.params[i] &&
          name.substr(state.params[i].size()) == state.suffix) {
        param = i;
        return &state;
      }
  return nullptr;
}

int Plan::findPersistent(std::string_view name) const {
  for (size_t i = 0; i < persistent.size(); ++i)
    if (persistent[i].name == name)
      return static_cast<int>(i);
  return -1;
}

std::vector<std::vector<uint32_t>> Entry::arenaBuffersDyingAfter() const {
  std::vector<int64_t> lastUse(buffers.size(), -1);
  for (size_t i = 0; i < launches.size(); ++i)
    for (const auto *list : {&launches[i].inputs, &launches[i].outputs})
      for (uint32_t t : *list)
        lastUse[tensors[t].buffer] = static_cast<int64_t>(i);
  std::vector<std::vector<uint32_t>> dying(launches.size());
  for (size_t b = 0; b < buffers.size(); ++b)
    if (buffers[b].region == Region::Arena && lastUse[b] >= 0)
      dying[lastUse[b]].push_back(static_cast<uint32_t>(b));
  return dying;
}
