//===- SafeTensors.cpp - safetensors checkpoints --------------------------===//
//
// Layout: u64 little-endian N, N bytes of JSON (padded with spaces so the
// data starts 8-byte aligned), then the data section. Each tensor's
// "data_offsets" are relative to the data section; like the reference
// reader, this one requires the ranges to tile the section exactly, so
// every byte of the file is accounted for.
//
//===----------------------------------------------------------------------===//

#include "zcc/Runtime/IO/SafeTensors.h"

#include "IO/InputFile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error                                                                         \
    "tensor files are little-endian and are copied as-is: little-endian host required"
#endif

using namespace zcc::runtime;
// ordered_json keeps the header's key order, so metadata comes back in file
// order.
using Json = nlohmann::ordered_json;

namespace {

const char *fileDTypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "F32";
  case DType::I32:
    return "I32";
  case DType::I64:
    return "I64";
  }
  return "?";
}

std::optional<DType> parseFileDType(const std::string &name) {
  if (name == "F32")
    return DType::F32;
  if (name == "I32")
    return DType::I32;
  if (name == "I64")
    return DType::I64;
  return std::nullopt;
}

/// Dtypes the safetensors format defines that zcc does not hold: refused as
/// unsupported rather than as garbage.
bool isOtherSafeTensorsDType(const std::string &name) {
  static const char *const kOthers[] = {
      "BOOL", "U8",      "I8",      "F8_E5M2", "F8_E4M3", "F8_E8M0",
      "F4",   "F6_E2M3", "F6_E3M2", "I16",     "U16",     "F16",
      "BF16", "U32",     "F64",     "U64",     "C64"};
  return std::any_of(std::begin(kOthers), std::end(kOthers),
                     [&](const char *other) { return name == other; });
}

/// Bytes of a tensor of `shape` and `dtype`, or nullopt for a negative
/// dimension or a size that does not fit in int64.
std::optional<uint64_t> denseBytes(const std::vector<int64_t> &shape,
                                   DType dtype) {
  uint64_t bytes = static_cast<uint64_t>(dtypeBytes(dtype));
  for (int64_t dim : shape) {
    if (dim < 0)
      return std::nullopt;
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(dim), &bytes))
      return std::nullopt;
  }
  if (bytes > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return std::nullopt;
  return bytes;
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

/// Appends `text` as a JSON string literal; false when it is not valid
/// UTF-8 (JSON cannot carry it).
bool appendJsonString(std::string &out, const std::string &text) {
  try {
    out += Json(text).dump();
    return true;
  } catch (const Json::exception &) {
    return false;
  }
}

Status writeError(const std::string &tmpPath, int err) {
  std::remove(tmpPath.c_str());
  return makeError(StatusCode::IoError, "cannot write '", tmpPath,
                   "': ", std::strerror(err));
}

/// Builds the JSON header, padded with spaces to a multiple of 8 bytes.
Status
buildHeader(const std::string &path, const std::vector<HostTensorView> &tensors,
            const std::vector<std::pair<std::string, std::string>> &metadata,
            std::string &out_header) {
  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    std::set<std::string> keys;
    for (size_t i = 0; i < metadata.size(); ++i) {
      const auto &[key, value] = metadata[i];
      if (!keys.insert(key).second)
        return makeError(StatusCode::InvalidArgument, path, ": metadata key '",
                         key, "' is given twice");
      if (i)
        header += ',';
      if (!appendJsonString(header, key))
        return makeError(StatusCode::InvalidArgument, path, ": metadata key '",
                         key, "' is not valid UTF-8");
      header += ':';
      if (!appendJsonString(header, value))
        return makeError(StatusCode::InvalidArgument, path,
                         ": metadata value of '", key, "' is not valid UTF-8");
    }
    header += '}';
  }

  std::set<std::string> names;
  uint64_t offset = 0;
  for (const HostTensorView &tensor : tensors) {
    if (tensor.name.empty())
      return makeError(StatusCode::InvalidArgument, path,
                       ": a tensor has an empty name");
    if (tensor.name == "__metadata__")
      return makeError(StatusCode::InvalidArgument, path,
                       ": '__metadata__' is reserved and cannot name a tensor");
    if (!names.insert(tensor.name).second)
      return makeError(StatusCode::InvalidArgument, path, ": tensor '",
                       tensor.name, "' is given twice");
    std::optional<uint64_t> expected = denseBytes(tensor.shape, tensor.dtype);
    if (!expected)
      return makeError(StatusCode::InvalidArgument, path, ": tensor '",
                       tensor.name, "' has an invalid shape ",
                       shapeString(tensor.shape));
    if (tensor.bytes != *expected)
      return makeError(StatusCode::InvalidArgument, path, ": tensor '",
                       tensor.name, "' has ", tensor.bytes, " bytes but ",
                       fileDTypeName(tensor.dtype), " ",
                       shapeString(tensor.shape), " needs ", *expected);
    if (tensor.bytes && !tensor.data)
      return makeError(StatusCode::InvalidArgument, path, ": tensor '",
                       tensor.name, "' has no data");
    if (header.size() > 1)
      header += ',';
    if (!appendJsonString(header, tensor.name))
      return makeError(StatusCode::InvalidArgument, path, ": tensor name '",
                       tensor.name, "' is not valid UTF-8");
    header += ":{\"dtype\":\"";
    header += fileDTypeName(tensor.dtype);
    header += "\",\"shape\":[";
    for (size_t i = 0; i < tensor.shape.size(); ++i)
      header += (i ? "," : "") + std::to_string(tensor.shape[i]);
    header += "],\"data_offsets\":[" + std::to_string(offset) + ",";
    if (__builtin_add_overflow(offset, tensor.bytes, &offset))
      return makeError(StatusCode::InvalidArgument, path,
                       ": the tensors hold more than 2^64 bytes");
    header += std::to_string(offset) + "]}";
  }
  header += '}';
  // The format recommends padding so the data section is 8-byte aligned.
  header.append((8 - header.size() % 8) % 8, ' ');
  out_header = std::move(header);
  return Status::ok();
}

/// Records the first key that repeats within one JSON object: the parser
/// itself keeps the last value silently.
class DuplicateKeyFinder {
public:
  bool operator()(int /*depth*/, Json::parse_event_t event, Json &parsed) {
    using Event = Json::parse_event_t;
    switch (event) {
    case Event::object_start:
      frames.push_back(
          Frame{{}, frames.empty() ? "" : frames.back().lastKey, ""});
      break;
    case Event::object_end:
      if (!frames.empty())
        frames.pop_back();
      break;
    case Event::key:
      if (!frames.empty() && parsed.is_string()) {
        Frame &frame = frames.back();
        frame.lastKey = parsed.get_ref<const std::string &>();
        if (!frame.keys.insert(frame.lastKey).second && !duplicate) {
          duplicate = frame.lastKey;
          duplicateDepth = frames.size();
          duplicateParent = frame.parentKey;
        }
      }
      break;
    default:
      break;
    }
    return true;
  }

  std::optional<std::string> duplicate;
  size_t duplicateDepth = 0;
  std::string duplicateParent;

private:
  struct Frame {
    std::set<std::string> keys;
    std::string parentKey;
    std::string lastKey;
  };
  std::vector<Frame> frames;
};

/// Finds where and why a header failed to parse (only on the error path):
/// the DOM parser with exceptions off reports no position.
class ParseErrorLocator : public nlohmann::json_sax<Json> {
public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t &) override { return true; }
  bool string(string_t &) override { return true; }
  bool binary(binary_t &) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t &) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string &,
                   const nlohmann::detail::exception &ex) override {
    // "[json.exception.parse_error.101] parse error at ...": keep the part
    // after the bracketed id.
    std::string what = ex.what();
    size_t close = what.find("] ");
    message = close == std::string::npos ? what : what.substr(close + 2);
    return false;
  }

  std::string message;
};

std::string describeParseError(const std::string &header) {
  ParseErrorLocator locator;
  Json::sax_parse(header, &locator, nlohmann::detail::input_format_t::json,
                  /*strict=*/true);
  return locator.message.empty() ? "syntax error" : locator.message;
}

/// A non-negative JSON integer, or nullopt.
std::optional<uint64_t> nonNegativeInteger(const Json &value) {
  if (!value.is_number_integer())
    return std::nullopt;
  if (value.is_number_unsigned())
    return value.get<uint64_t>();
  int64_t signedValue = value.get<int64_t>();
  if (signedValue < 0)
    return std::nullopt;
  return static_cast<uint64_t>(signedValue);
}

struct HeaderEntry {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;
  uint64_t end = 0;
};

Status parseTensorEntry(const std::string &path, const std::string &name,
                        const Json &entry, HeaderEntry &out_entry) {
  auto error = [&](const auto &...parts) {
    return makeError(StatusCode::InvalidArgument, path, ": tensor '", name,
                     "': ", parts...);
  };
  if (name.empty())
    return makeError(StatusCode::InvalidArgument, path,
                     ": a tensor has an empty name");
  if (!entry.is_object())
    return error("its header entry is not a JSON object");
  for (const auto &item : entry.items())
    if (item.key() != "dtype" && item.key() != "shape" &&
        item.key() != "data_offsets")
      return error("unknown field '", item.key(),
                   "' (expected dtype, shape, data_offsets)");
  for (const char *field : {"dtype", "shape", "data_offsets"})
    if (!entry.contains(field))
      return error("missing field '", field, "'");

  const Json &dtypeJson = entry["dtype"];
  if (!dtypeJson.is_string())
    return error("'dtype' is not a string");
  const std::string &dtypeText = dtypeJson.get_ref<const std::string &>();
  std::optional<DType> dtype = parseFileDType(dtypeText);
  if (!dtype) {
    if (isOtherSafeTensorsDType(dtypeText))
      return makeError(StatusCode::Unsupported, path, ": unsupported dtype '",
                       dtypeText, "' for tensor '", name,
                       "': zcc checkpoints hold F32, I32 or I64");
    return makeError(StatusCode::InvalidArgument, path, ": unknown dtype '",
                     dtypeText, "' for tensor '", name, "'");
  }

  const Json &shapeJson = entry["shape"];
  if (!shapeJson.is_array())
    return error("'shape' is not an array");
  std::vector<int64_t> shape;
  for (const Json &dim : shapeJson) {
    std::optional<uint64_t> value = nonNegativeInteger(dim);
    if (!value ||
        *value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return error("'shape' ", dim.dump(),
                   " holds something other than a non-negative integer");
    shape.push_back(static_cast<int64_t>(*value));
  }
  std::optional<uint64_t> bytes = denseBytes(shape, *dtype);
  if (!bytes)
    return error("shape ", shapeString(shape), " is too large");

  const Json &offsetsJson = entry["data_offsets"];
  std::optional<uint64_t> begin, end;
  if (offsetsJson.is_array() && offsetsJson.size() == 2) {
    begin = nonNegativeInteger(offsetsJson[0]);
    end = nonNegativeInteger(offsetsJson[1]);
  }
  if (!begin || !end)
    return error("'data_offsets' ", offsetsJson.dump(),
                 " is not a pair of non-negative integers");
  if (*end < *begin)
    return error("data_offsets [", *begin, ", ", *end,
                 "] end before they begin");
  if (*end - *begin != *bytes)
    return error("data_offsets [", *begin, ", ", *end, "] hold ", *end - *begin,
                 " bytes but ", dtypeText, " ", shapeString(shape), " needs ",
                 *bytes);

  out_entry = HeaderEntry{name, *dtype, std::move(shape), *begin, *end};
  return Status::ok();
}

Status readSafeTensorsImpl(
    const std::string &path, std::vector<HostTensor> &out_tensors,
    std::vector<std::pair<std::string, std::string>> *out_metadata) {
  InputFile file;
  ZRT_RETURN_IF_ERROR(file.open(path));
  const uint64_t fileSize = file.size();

  if (fileSize < 8)
    return makeError(StatusCode::InvalidArgument, path, ": file too short (",
                     fileSize,
                     " bytes): a safetensors file starts with an 8-byte "
                     "header length");
  uint8_t lengthBytes[8];
  ZRT_RETURN_IF_ERROR(file.readAt(0, lengthBytes, 8));
  uint64_t headerSize = 0;
  for (int i = 7; i >= 0; --i)
    headerSize = (headerSize << 8) | lengthBytes[i];
  if (headerSize > fileSize - 8)
    return makeError(StatusCode::InvalidArgument, path, ": header length ",
                     headerSize, " runs past the end of the file (", fileSize,
                     " bytes)");
  if (headerSize > kSafeTensorsMaxHeaderBytes)
    return makeError(StatusCode::InvalidArgument, path, ": header length ",
                     headerSize, " exceeds the limit of ",
                     kSafeTensorsMaxHeaderBytes, " bytes");
  std::string header(headerSize, '\0');
  ZRT_RETURN_IF_ERROR(file.readAt(8, header.data(), header.size()));

  DuplicateKeyFinder duplicates;
  Json root = Json::parse(header, std::ref(duplicates),
                          /*allow_exceptions=*/false);
  if (root.is_discarded())
    return makeError(
        StatusCode::InvalidArgument, path,
        ": header is not valid JSON: ", describeParseError(header));
  if (!root.is_object())
    return makeError(StatusCode::InvalidArgument, path,
                     ": header is not a JSON object");
  if (duplicates.duplicate) {
    const std::string &key = *duplicates.duplicate;
    if (duplicates.duplicateDepth == 1)
      return makeError(StatusCode::InvalidArgument, path, ": '", key,
                       "' appears twice in the header");
    if (duplicates.duplicateParent == "__metadata__")
      return makeError(StatusCode::InvalidArgument, path, ": metadata key '",
                       key, "' appears twice");
    return makeError(StatusCode::InvalidArgument, path, ": key '", key,
                     "' appears twice in the entry of '",
                     duplicates.duplicateParent, "'");
  }

  std::vector<std::pair<std::string, std::string>> metadata;
  std::vector<HeaderEntry> entries;
  for (const auto &item : root.items()) {
    if (item.key() == "__metadata__") {
      if (!item.value().is_object())
        return makeError(StatusCode::InvalidArgument, path,
                         ": '__metadata__' is not a JSON object");
      for (const auto &pair : item.value().items()) {
        if (!pair.value().is_string())
          return makeError(StatusCode::InvalidArgument, path,
                           ": metadata value of '", pair.key(),
                           "' is not a string");
        metadata.emplace_back(pair.key(),
                              pair.value().get_ref<const std::string &>());
      }
      continue;
    }
    HeaderEntry entry;
    ZRT_RETURN_IF_ERROR(
        parseTensorEntry(path, item.key(), item.value(), entry));
    entries.push_back(std::move(entry));
  }

  // The ranges must tile [0, dataSize): no overlap, no gap, no tail.
  const uint64_t dataStart = 8 + headerSize;
  const uint64_t dataSize = fileSize - dataStart;
  std::stable_sort(entries.begin(), entries.end(),
                   [](const HeaderEntry &a, const HeaderEntry &b) {
                     return a.begin < b.begin;
                   });
  uint64_t cursor = 0;
  const HeaderEntry *previous = nullptr;
  for (const HeaderEntry &entry : entries) {
    if (entry.end > dataSize)
      return makeError(StatusCode::InvalidArgument, path, ": tensor '",
                       entry.name, "': data_offsets [", entry.begin, ", ",
                       entry.end, "] run past the end of the data (", dataSize,
                       " bytes)");
    if (entry.begin < cursor)
      return makeError(StatusCode::InvalidArgument, path, ": tensor '",
                       entry.name, "': data_offsets [", entry.begin, ", ",
                       entry.end, "] overlap those of tensor '", previous->name,
                       "' [", previous->begin, ", ", previous->end, "]");
    if (entry.begin > cursor)
      return makeError(StatusCode::InvalidArgument, path, ": data bytes [",
                       cursor, ", ", entry.begin,
                       ") belong to no tensor (before tensor '", entry.name,
                       "')");
    cursor = entry.end;
    previous = &entry;
  }
  if (cursor != dataSize)
    return makeError(StatusCode::InvalidArgument, path, ": data bytes [",
                     cursor, ", ", dataSize,
                     ") after the last tensor belong to no tensor");

  std::vector<HostTensor> tensors(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    HeaderEntry &entry = entries[i];
    HostTensor &tensor = tensors[i];
    tensor.name = std::move(entry.name);
    tensor.dtype = entry.dtype;
    tensor.shape = std::move(entry.shape);
    tensor.bytes.resize(entry.end - entry.begin);
    ZRT_RETURN_IF_ERROR(file.readAt(dataStart + entry.begin, tensor.bytes.data(),
                               tensor.bytes.size()));
  }

  out_tensors = std::move(tensors);
  if (out_metadata)
    *out_metadata = std::move(metadata);
  return Status::ok();
}

} // namespace

Status zcc::runtime::writeSafeTensors(
    const std::string &path, const std::vector<HostTensorView> &tensors,
    const std::vector<std::pair<std::string, std::string>> &metadata) {
  std::string header;
  try {
    ZRT_RETURN_IF_ERROR(buildHeader(path, tensors, metadata, header));
  } catch (const std::bad_alloc &) {
    return makeError(StatusCode::OutOfMemory, path,
                     ": out of memory building the header");
  }

  const std::string tmpPath = path + ".tmp";
  FILE *file = std::fopen(tmpPath.c_str(), "wb");
  if (!file)
    return makeError(StatusCode::IoError, "cannot create '", tmpPath,
                     "': ", std::strerror(errno));
  auto fail = [&]() {
    int err = errno ? errno : EIO;
    std::fclose(file);
    return writeError(tmpPath, err);
  };
  auto write = [&](const void *data, size_t size) {
    return size == 0 || std::fwrite(data, 1, size, file) == size;
  };

  errno = 0;
  uint8_t lengthBytes[8];
  uint64_t headerSize = header.size();
  for (int i = 0; i < 8; ++i)
    lengthBytes[i] = static_cast<uint8_t>(headerSize >> (8 * i));
  if (!write(lengthBytes, 8) || !write(header.data(), header.size()))
    return fail();
  for (const HostTensorView &tensor : tensors)
    if (!write(tensor.data, tensor.bytes))
      return fail();
  // Flush to disk before the rename, or a crash could leave the new name
  // pointing at a file whose data never arrived.
  if (std::fflush(file) != 0 || fsync(fileno(file)) != 0)
    return fail();
  if (std::fclose(file) != 0)
    return writeError(tmpPath, errno ? errno : EIO);
  if (std::rename(tmpPath.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::remove(tmpPath.c_str());
    return makeError(StatusCode::IoError, "cannot rename '", tmpPath, "' to '",
                     path, "': ", std::strerror(err));
  }
  return Status::ok();
}

Status zcc::runtime::readSafeTensors(
    const std::string &path, std::vector<HostTensor> &out_tensors,
    std::vector<std::pair<std::string, std::string>> *out_metadata) {
  try {
    return readSafeTensorsImpl(path, out_tensors, out_metadata);
  } catch (const std::bad_alloc &) {
    return makeError(StatusCode::OutOfMemory, path,
                     ": out of memory reading the file");
  } catch (const std::exception &e) {
    // Every JSON access above is guarded; this is a backstop so a missed
    // case still reaches the caller as a message.
    return makeError(StatusCode::InvalidArgument, path,
                     ": malformed header: ", e.what());
  }
}
