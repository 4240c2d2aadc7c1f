//===- Checkpoint.cpp - a session's persistent state to and from a file ---===//
//
// A checkpoint is a safetensors file of the plan's persistent tensors (f32,
// whatever the session's precision) and its entries' step counters. ZeRO-1's
// sharded optimizer state is gathered and written per parameter, as
// unsharded training names it, and re-sharded on load: a checkpoint moves
// between world sizes.
//
//===----------------------------------------------------------------------===//

#include "Session/SessionImpl.h"

#include "zcc/Runtime/IO/HostTensor.h"
#include "zcc/Runtime/IO/SafeTensors.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

using namespace zcc::runtime;

namespace {
constexpr const char *kStepsKey = "zcc.steps";
} // namespace

Status Session::saveCheckpoint(const std::string &path,
                               const Metadata &metadata) const {
  const Plan &p = *impl->plan;
  impl->executor->beforeHostRead();
  std::vector<HostTensorView> views;
  std::vector<std::vector<float>> narrowed; // f64 precision only
  narrowed.reserve(p.persistent.size() + p.sharded.size());
  // ZeRO-1: each sharded state whole, from every rank's shard, written per
  // parameter as unsharded training names it.
  Communicator *comm = impl->options.communicator.get();
  for (const ShardedState &state : p.sharded) {
    const PersistentTensor &shard = p.persistent[p.findPersistent(state.name)];
    uint64_t count = static_cast<uint64_t>(shard.type.numElements());
    std::vector<double> whole(count * state.ranks);
    const uint8_t *mine = impl->persistentData(shard);
    std::vector<double> local(count);
    // f64 on the wire either way: a checkpoint happens once, not per step.
    if (impl->wide())
      std::memcpy(local.data(), mine, count * 8);
    else
      widenF32(mine, local.data(), static_cast<int64_t>(count));
    if (comm)
      comm->allGather(local.data(), whole.data(), count, CollectiveType::F64);
    else
      whole = local;
    narrowed.emplace_back(whole.begin(), whole.end());
    for (size_t i = 0; i < state.params.size(); ++i) {
      const PersistentTensor &param =
          p.persistent[p.findPersistent(state.params[i])];
      views.push_back({state.params[i] + state.suffix, DType::F32,
                       param.type.shape,
                       narrowed.back().data() + state.offsets[i],
                       static_cast<size_t>(param.type.bytes())});
    }
  }
  // With several ranks every rank gathers; rank 0 writes.
  if (comm && comm->rank() != 0)
    return Status::ok();
  for (const PersistentTensor &t : p.persistent) {
    if (std::any_of(p.sharded.begin(), p.sharded.end(),
                    [&](const ShardedState &s) { return s.name == t.name; }))
      continue; // written per parameter above
    const void *data = impl->persistentData(t);
    if (impl->wide() && t.type.dtype == DType::F32) {
      const double *wide = static_cast<const double *>(data);
      narrowed.emplace_back(wide, wide + t.type.numElements());
      data = narrowed.back().data();
    }
    views.push_back({t.name, t.type.dtype, t.type.shape, data,
                     static_cast<size_t>(t.type.bytes())});
  }
  std::string steps;
  for (size_t i = 0; i < p.entries.size(); ++i)
    steps += (i ? "," : "") + p.entries[i].name + "=" +
             std::to_string(impl->entries[i].steps);
  Metadata header = {
      {"format", "pt"}, {"zcc.producer", p.producer}, {kStepsKey, steps}};
  header.insert(header.end(), metadata.begin(), metadata.end());
  return writeSafeTensors(path, views, header);
}

Status Session::loadCheckpoint(const std::string &path, Metadata *out) {
  const Plan &p = *impl->plan;
  std::vector<HostTensor> tensors;
  Metadata metadata;
  ZRT_RETURN_IF_ERROR(readSafeTensors(path, tensors, &metadata));
  std::vector<const HostTensor *> byPersistent(p.persistent.size(), nullptr);
  // ZeRO-1: per sharded state, the file's tensor of each parameter.
  std::vector<std::vector<const HostTensor *>> byShard(p.sharded.size());
  for (size_t s = 0; s < p.sharded.size(); ++s)
    byShard[s].assign(p.sharded[s].params.size(), nullptr);
  for (const HostTensor &t : tensors) {
    int index = p.findPersistent(t.name);
    size_t param = 0;
    if (const ShardedState *state = p.findShardedState(t.name, param);
        index < 0 && state) {
      const TensorType &want =
          p.persistent[p.findPersistent(state->params[param])].type;
      if (t.dtype != DType::F32 || t.shape != want.shape)
        return makeError(StatusCode::InvalidArgument, path, ": tensor '",
                         t.name, "' is ",
                         typeString(TensorType{t.dtype, t.shape}),
                         ", the plan's parameter has ", typeString(want));
      byShard[state - p.sharded.data()][param] = &t;
      continue;
    }
    if (index < 0)
      return makeError(StatusCode::InvalidArgument, path, ": tensor '", t.name,
                       "' is not a persistent tensor of this plan");
    const PersistentTensor &want = p.persistent[index];
    if (t.dtype != want.type.dtype || t.shape != want.type.shape)
      return makeError(StatusCode::InvalidArgument, path, ": tensor '", t.name,
                       "' is ", typeString(TensorType{t.dtype, t.shape}),
                       ", the plan has ", typeString(want.type));
    byPersistent[index] = &t;
  }
  std::vector<int> shardOf(p.persistent.size(), -1);
  for (size_t s = 0; s < p.sharded.size(); ++s) {
    shardOf[p.findPersistent(p.sharded[s].name)] = static_cast<int>(s);
    for (size_t i = 0; i < byShard[s].size(); ++i)
      if (!byShard[s][i])
        return makeError(StatusCode::InvalidArgument, path, ": no tensor '",
                         p.sharded[s].params[i] + p.sharded[s].suffix, "'");
  }
  for (size_t i = 0; i < p.persistent.size(); ++i)
    if (!byPersistent[i] && shardOf[i] < 0)
      return makeError(StatusCode::InvalidArgument, path, ": no tensor '",
                       p.persistent[i].name, "'");
  // Everything matched: now write.
  impl->executor->beforeHostWrite();
  int rank =
      impl->options.communicator ? impl->options.communicator->rank() : 0;
  for (size_t i = 0; i < p.persistent.size(); ++i) {
    const PersistentTensor &t = p.persistent[i];
    if (shardOf[i] >= 0) {
      // This rank's elements [rank S, rank S + S) of the flat state, from
      // the parameters' tensors that overlap them; padding is zero.
      const ShardedState &state = p.sharded[shardOf[i]];
      const std::vector<const HostTensor *> &files = byShard[shardOf[i]];
      uint64_t count = static_cast<uint64_t>(t.type.numElements());
      uint64_t begin = static_cast<uint64_t>(rank) * count;
      std::vector<float> shard(count, 0.0f);
      for (size_t k = 0; k < state.params.size(); ++k) {
        uint64_t n = files[k]->bytes.size() / 4;
        uint64_t from = std::max(begin, state.offsets[k]);
        uint64_t to = std::min(begin + count, state.offsets[k] + n);
        if (from < to)
          std::memcpy(shard.data() + (from - begin),
                      files[k]->bytes.data() + 4 * (from - state.offsets[k]),
                      4 * (to - from));
      }
      uint8_t *at = impl->persistentData(t);
      if (impl->wide())
        widenF32(reinterpret_cast<const uint8_t *>(shard.data()),
                 reinterpret_cast<double *>(at), static_cast<int64_t>(count));
      else
        std::memcpy(at, shard.data(), count * 4);
      impl->markWritten(i);
      continue;
    }
    uint8_t *to = impl->persistentData(t);
    const uint8_t *from = byPersistent[i]->bytes.data();
    if (impl->wide() && t.type.dtype == DType::F32) {
      widenF32(from, reinterpret_cast<double *>(to), t.type.numElements());
    } else {
      std::memcpy(to, from, static_cast<size_t>(t.type.bytes()));
    }
    impl->markWritten(i);
  }
  // Step counters resume (AdamW's bias correction depends on them).
  for (const auto &[key, value] : metadata) {
    if (key != kStepsKey)
      continue;
    size_t pos = 0;
    while (pos < value.size()) {
      size_t comma = value.find(',', pos);
      std::string item = value.substr(pos, comma - pos);
      size_t eq = item.rfind('=');
      if (eq != std::string::npos) {
        int index = p.findEntry(item.substr(0, eq));
        if (index >= 0)
          impl->entries[index].steps =
              std::strtoll(item.c_str() + eq + 1, nullptr, 10);
      }
      if (comma == std::string::npos)
        break;
      pos = comma + 1;
    }
  }
  if (out)
    *out = std::move(metadata);
  return Status::ok();
}

Status Session::copyStateFrom(const Session &source) {
  const Plan &p = *impl->plan;
  const Plan &q = *source.impl->plan;
  bool same = p.persistent.size() == q.persistent.size() &&
              p.entries.size() == q.entries.size() &&
              impl->wide() == source.impl->wide();
  for (size_t i = 0; same && i < p.persistent.size(); ++i)
    same = p.persistent[i].name == q.persistent[i].name &&
           p.persistent[i].type.dtype == q.persistent[i].type.dtype &&
           p.persistent[i].type.shape == q.persistent[i].type.shape;
  if (!same)
    return makeError(StatusCode::InvalidArgument,
                     "copying a session's state: the source runs another "
                     "plan, or another precision");
  source.impl->executor->beforeHostRead();
  impl->executor->beforeHostWrite();
  for (size_t i = 0; i < p.persistent.size(); ++i) {
    const PersistentTensor &t = p.persistent[i];
    size_t bytes = static_cast<size_t>(t.type.bytes());
    if (impl->wide() && t.type.dtype == DType::F32)
      bytes *= 2; // stored as doubles
    std::memcpy(impl->persistentData(t),
                source.impl->persistentData(q.persistent[i]), bytes);
    impl->markWritten(i);
  }
  for (size_t i = 0; i < p.entries.size(); ++i)
    impl->entries[i].steps = source.impl->entries[i].steps;
  return Status::ok();
}
