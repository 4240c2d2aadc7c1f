//===- PlanFile.cpp - .zplan serialization and loading
//---------------------===//

#include "zcc/Runtime/Plan/PlanFile.h"

#include "zcc/Runtime/Plan/zplan_generated.h"

#include <cstdio>
#include <fstream>
#include <iterator>

using namespace zcc::runtime;
namespace fb = zcc::runtime::fb;

uint64_t zcc::runtime::fnv1a64(const uint8_t *data, size_t size) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < size; ++i) {
    hash ^= data[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

namespace {

flatbuffers::Offset<fb::TensorType> writeType(flatbuffers::FlatBufferBuilder &b,
                                              const TensorType &type) {
  return fb::CreateTensorType(b, type.dtype,
                              b.CreateVector(type.shape));
}

flatbuffers::Offset<fb::Entry> writeEntry(flatbuffers::FlatBufferBuilder &b,
                                          const Entry &entry) {
  std::vector<fb::Buffer> buffers;
  for (const Buffer &buffer : entry.buffers)
    buffers.emplace_back(buffer.region, buffer.offset,
                         buffer.size);
  std::vector<flatbuffers::Offset<fb::Tensor>> tensors;
  for (const Tensor &tensor : entry.tensors)
    tensors.push_back(fb::CreateTensor(
        b, tensor.name.empty() ? 0 : b.CreateString(tensor.name),
        writeType(b, tensor.type), tensor.buffer, tensor.role,
        tensor.strides.empty() ? 0 : b.CreateVector(tensor.strides),
        tensor.offset));
  std::vector<flatbuffers::Offset<fb::Launch>> launches;
  for (const Launch &launch : entry.launches) {
    std::vector<flatbuffers::Offset<fb::Param>> params;
    for (const Param &param : encodeParams(launch))
      params.push_back(fb::CreateParam(
          b, b.CreateString(param.name), param.kind,
          param.intValue, param.floatValue,
          param.kind == ParamKind::Ints ? b.CreateVector(param.ints) : 0,
          param.kind == ParamKind::Floats ? b.CreateVector(param.floats) : 0,
          param.kind == ParamKind::Names ? b.CreateVectorOfStrings(param.names)
                                         : 0));
    launches.push_back(fb::CreateLaunch(
        b, b.CreateString(launch.name()), b.CreateVector(launch.inputs),
        b.CreateVector(launch.outputs), b.CreateVector(params), launch.phase,
        launch.location.empty() ? 0 : b.CreateString(launch.location)));
  }
  return fb::CreateEntry(
      b, b.CreateString(entry.name), entry.kind,
      entry.arenaSize, entry.lowerBound, entry.noReuseSize, entry.inputSize,
      entry.outputSize, b.CreateVectorOfStructs(buffers),
      b.CreateVector(tensors), b.CreateVector(launches), entry.workspace);
}

} // namespace

std::vector<uint8_t> zcc::runtime::serializePlan(const Plan &plan) {
  flatbuffers::FlatBufferBuilder body;
  std::vector<flatbuffers::Offset<fb::PersistentTensor>> persistent;
  for (const PersistentTensor &tensor : plan.persistent)
    persistent.push_back(fb::CreatePersistentTensor(
        body, body.CreateString(tensor.name), writeType(body, tensor.type),
        tensor.offset, tensor.init.kind,
        tensor.init.first, tensor.init.second));
  std::vector<flatbuffers::Offset<fb::Entry>> entries;
  for (const Entry &entry : plan.entries)
    entries.push_back(writeEntry(body, entry));
  std::vector<flatbuffers::Offset<fb::ShardedState>> sharded;
  for (const ShardedState &state : plan.sharded) {
    std::vector<flatbuffers::Offset<flatbuffers::String>> params;
    for (const std::string &param : state.params)
      params.push_back(body.CreateString(param));
    sharded.push_back(fb::CreateShardedState(
        body, body.CreateString(state.name), body.CreateString(state.suffix),
        state.ranks, body.CreateVector(params),
        body.CreateVector(state.offsets)));
  }
  auto root = fb::CreatePlan(
      body, plan.alignment, plan.arenaSize, plan.persistentSize,
      plan.constantSize, body.CreateVector(persistent),
      body.CreateVector(plan.constants), body.CreateVector(entries),
      body.CreateString(plan.producer),
      sharded.empty() ? 0 : body.CreateVector(sharded));
  body.Finish(root);
  return sealPlanBody(body.GetBufferPointer(), body.GetSize());
}

std::vector<uint8_t> zcc::runtime::sealPlanBody(const uint8_t *body,
                                                size_t size) {
  flatbuffers::FlatBufferBuilder file;
  // Align the body so the nested root reads aligned.
  file.ForceVectorAlignment(size, sizeof(uint8_t), 16);
  auto bytes = file.CreateVector(body, size);
  auto envelope =
      fb::CreatePlanFile(file, kPlanFormatVersion, fnv1a64(body, size), bytes);
  fb::FinishSizePrefixedPlanFileBuffer(file, envelope);
  return std::vector<uint8_t>(file.GetBufferPointer(),
                              file.GetBufferPointer() + file.GetSize());
}

Status zcc::runtime::savePlanFile(const std::string &path, const Plan &plan) {
  std::vector<uint8_t> bytes = serializePlan(plan);
  std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out)
      return makeError(StatusCode::IoError, "cannot open '", temporary,
                       "' for writing");
    out.write(reinterpret_cast<const char *>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      std::remove(temporary.c_str());
      return makeError(StatusCode::IoError, "cannot write '", temporary, "'");
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    return makeError(StatusCode::IoError, "cannot rename '", temporary,
                     "' to '", path, "'");
  }
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

namespace {

/// Flatbuffers does not check enum values; a flipped byte can hold any.
template <typename E> bool enumInRange(E value) {
  return !flatbuffers::IsOutRange(value, E::MIN, E::MAX);
}

Status corrupt(const std::string &what) {
  return makeError(StatusCode::InvalidPlan, what);
}

Status readType(const fb::TensorType *in, TensorType &out,
                const std::string &what) {
  if (!enumInRange(in->dtype()))
    return corrupt(what + ": unknown dtype " +
                   std::to_string(static_cast<int>(in->dtype())));
  out.dtype = in->dtype();
  out.shape.clear();
  if (in->shape())
    out.shape.assign(in->shape()->begin(), in->shape()->end());
  return Status::ok();
}

std::string str(const flatbuffers::String *s) {
  return s ? std::string(s->c_str(), s->size()) : std::string();
}

Status readEntry(const fb::Entry *in, size_t index, Entry &out) {
  std::string where = "entry " + std::to_string(index);
  out.name = str(in->name());
  if (!enumInRange(in->kind()))
    return corrupt(where + ": unknown kind");
  out.kind = in->kind();
  out.arenaSize = in->arena_size();
  out.lowerBound = in->lower_bound();
  out.noReuseSize = in->no_reuse_size();
  out.inputSize = in->input_size();
  out.outputSize = in->output_size();
  out.workspace = in->workspace();
  if (in->buffers())
    for (const fb::Buffer *buffer : *in->buffers()) {
      if (!enumInRange(buffer->region()))
        return corrupt(where + ": buffer " +
                       std::to_string(out.buffers.size()) +
                       " has an unknown region");
      out.buffers.push_back({buffer->region(),
                             buffer->offset(), buffer->size()});
    }
  if (in->tensors())
    for (const fb::Tensor *tensor : *in->tensors()) {
      Tensor t;
      t.name = str(tensor->name());
      std::string what = where + ": tensor " +
                         std::to_string(out.tensors.size()) + " ('" + t.name +
                         "')";
      ZRT_RETURN_IF_ERROR(readType(tensor->type(), t.type, what));
      t.buffer = tensor->buffer();
      if (!enumInRange(tensor->role()))
        return corrupt(what + ": unknown role");
      t.role = tensor->role();
      if (tensor->strides())
        t.strides.assign(tensor->strides()->begin(), tensor->strides()->end());
      t.offset = tensor->offset();
      out.tensors.push_back(std::move(t));
    }
  if (in->launches())
    for (const fb::Launch *launch : *in->launches()) {
      std::string what = "entry '" + out.name + "': launch " +
                         std::to_string(out.launches.size());
      std::string kernel = str(launch->kernel());
      std::vector<Param> params;
      if (launch->params())
        for (const fb::Param *param : *launch->params()) {
          Param p;
          p.name = str(param->name());
          if (!enumInRange(param->kind()))
            return corrupt(what + " (" + kernel + "): parameter '" + p.name +
                           "' has an unknown kind");
          p.kind = param->kind();
          p.intValue = param->int_value();
          p.floatValue = param->float_value();
          if (param->ints())
            p.ints.assign(param->ints()->begin(), param->ints()->end());
          if (param->floats())
            p.floats.assign(param->floats()->begin(), param->floats()->end());
          if (param->names())
            for (const flatbuffers::String *name : *param->names())
              p.names.push_back(str(name));
          params.push_back(std::move(p));
        }
      Launch l;
      Status decoded = decodeLaunch(kernel, params, l);
      if (!decoded.isOk())
        return corrupt(what + (findKernel(kernel) ? " (" + kernel + ")" : "") +
                       ": " + decoded.message());
      if (launch->inputs())
        l.inputs.assign(launch->inputs()->begin(), launch->inputs()->end());
      if (launch->outputs())
        l.outputs.assign(launch->outputs()->begin(), launch->outputs()->end());
      if (!enumInRange(launch->phase()))
        return corrupt(what + " (" + kernel + "): unknown phase");
      l.phase = launch->phase();
      l.location = str(launch->location());
      out.launches.push_back(std::move(l));
    }
  return Status::ok();
}

/// The envelope alone, so a file from another format version is reported as
/// such even when its body would not verify against this schema.
bool verifyEnvelope(const uint8_t *data, size_t size) {
  flatbuffers::Verifier::Options options;
  options.check_nested_flatbuffers = false;
  flatbuffers::Verifier verifier(data, size, options);
  return verifier.VerifySizePrefixedBuffer<fb::PlanFile>(
      fb::PlanFileIdentifier());
}

/// The size prefix, identifier and envelope; on success `file` is set.
Status openEnvelope(const uint8_t *data, size_t size,
                    const fb::PlanFile *&file) {
  if (size < 12)
    return corrupt("file is " + std::to_string(size) +
                   " bytes: too short to be a .zplan (truncated?)");
  if (!flatbuffers::BufferHasIdentifier(data, fb::PlanFileIdentifier(),
                                        /*size_prefixed=*/true))
    return corrupt("not a .zplan file: missing the 'ZPLN' identifier");
  uint32_t prefix = flatbuffers::ReadScalar<uint32_t>(data);
  if (static_cast<uint64_t>(prefix) + 4 != size)
    return corrupt(
        "file is " + std::to_string(size) + " bytes but its header says " +
        std::to_string(prefix + 4ull) +
        (prefix + 4ull > size ? " (truncated)" : " (trailing bytes)"));
  if (!verifyEnvelope(data, size))
    return corrupt("the file's envelope does not verify (corrupted)");
  file = fb::GetSizePrefixedPlanFile(data);
  if (file->version() != kPlanFormatVersion)
    return makeError(StatusCode::Unsupported, "plan format version ",
                     file->version(), "; this runtime reads version ",
                     kPlanFormatVersion,
                     " (recompile the model with this zcc)");
  if (!file->plan())
    return corrupt("the file has no plan body");
  return Status::ok();
}

} // namespace

Status zcc::runtime::locatePlanBody(const uint8_t *data, size_t size,
                                    size_t &out_offset, size_t &out_size) {
  const fb::PlanFile *file = nullptr;
  ZRT_RETURN_IF_ERROR(openEnvelope(data, size, file));
  out_offset = static_cast<size_t>(file->plan()->data() - data);
  out_size = file->plan()->size();
  return Status::ok();
}

Status zcc::runtime::parsePlan(const uint8_t *data, size_t size, Plan &out) {
  // Flatbuffers offsets are 32-bit; larger files cannot be valid.
  if (size >= (size_t(1) << 31))
    return corrupt("file larger than 2 GiB");
  const fb::PlanFile *file = nullptr;
  ZRT_RETURN_IF_ERROR(openEnvelope(data, size, file));
  const uint8_t *body = file->plan()->data();
  size_t bodySize = file->plan()->size();
  uint64_t checksum = fnv1a64(body, bodySize);
  if (checksum != file->checksum())
    return makeError(StatusCode::InvalidPlan,
                     "checksum mismatch: the plan body hashes to 0x", std::hex,
                     checksum, ", the file says 0x", file->checksum(),
                     " (the file is corrupted)");
  flatbuffers::Verifier verifier(body, bodySize);
  if (!verifier.VerifyBuffer<fb::Plan>(nullptr))
    return corrupt("the plan body does not verify against the schema");
  const fb::Plan *plan = flatbuffers::GetRoot<fb::Plan>(body);

  Plan result;
  result.alignment = plan->alignment();
  result.arenaSize = plan->arena_size();
  result.persistentSize = plan->persistent_size();
  result.constantSize = plan->constant_size();
  result.producer = str(plan->producer());
  if (plan->persistent())
    for (const fb::PersistentTensor *tensor : *plan->persistent()) {
      PersistentTensor t;
      t.name = str(tensor->name());
      std::string what = "persistent tensor '" + t.name + "'";
      ZRT_RETURN_IF_ERROR(readType(tensor->type(), t.type, what));
      t.offset = tensor->offset();
      if (!enumInRange(tensor->init_kind()))
        return corrupt(what + ": unknown initializer kind");
      t.init = {tensor->init_kind(),
                tensor->init_first(), tensor->init_second()};
      result.persistent.push_back(std::move(t));
    }
  if (plan->constants())
    result.constants.assign(plan->constants()->begin(),
                            plan->constants()->end());
  if (plan->sharded())
    for (const fb::ShardedState *state : *plan->sharded()) {
      ShardedState t;
      t.name = str(state->name());
      t.suffix = str(state->suffix());
      t.ranks = state->ranks();
      if (state->params())
        for (const flatbuffers::String *param : *state->params())
          t.params.push_back(str(param));
      if (state->offsets())
        t.offsets.assign(state->offsets()->begin(), state->offsets()->end());
      result.sharded.push_back(std::move(t));
    }
  if (plan->entries())
    for (const fb::Entry *entry : *plan->entries()) {
      Entry e;
      ZRT_RETURN_IF_ERROR(readEntry(entry, result.entries.size(), e));
      result.entries.push_back(std::move(e));
    }
  ZRT_RETURN_IF_ERROR(validatePlan(result));
  out = std::move(result);
  return Status::ok();
}

Status zcc::runtime::loadPlanFile(const std::string &path, Plan &out) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return makeError(StatusCode::IoError, "cannot open '", path, "'");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  if (in.bad())
    return makeError(StatusCode::IoError, "cannot read '", path, "'");
  Status status = parsePlan(bytes.data(), bytes.size(), out);
  if (!status.isOk())
    return Status(status.code(), path + ": " + status.message());
  return Status::ok();
}
