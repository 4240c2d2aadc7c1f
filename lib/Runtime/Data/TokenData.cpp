//===- TokenData.cpp - batches of random windows of a token file ----------===//

#include "zcc/Runtime/Data/TokenData.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace zcc::runtime;

namespace {

/// The file, mapped read-only for the source's life.
struct Mapping {
  const uint8_t *bytes = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (bytes && size)
      munmap(const_cast<uint8_t *>(bytes), size);
  }
};

class TokenSource final : public DataSource {
public:
  TokenSource(std::string path, std::unique_ptr<Mapping> file, int width,
              int64_t tokens, TensorInfo input, TensorInfo label,
              int64_t rows, int64_t length, uint64_t seed, int64_t first)
      : path(std::move(path)), file(std::move(file)), width(width),
        tokens(tokens), input(input), label(label), rows(rows),
        length(length), seed(seed), first(first) {}

  void fill(Session &session, int64_t batch) const override {
    auto *x = static_cast<uint8_t *>(session.data(input));
    auto *y = static_cast<uint8_t *>(session.data(label));
    bool xWide = input.desc->type.dtype == DType::I64;
    bool yWide = label.desc->type.dtype == DType::I64;
    for (int64_t r = 0; r < rows; ++r) {
      int64_t start =
          tokenWindowStart(seed, first + batch, r, tokens, length);
      for (int64_t k = 0; k < length; ++k) {
        int64_t i = r * length + k;
        store(x, xWide, i, token(start + k));
        store(y, yWide, i, token(start + k + 1));
      }
    }
  }

  std::string describe() const override {
    return path + ": " + std::to_string(tokens) + " tokens (" +
           (width == 2 ? "uint16" : "uint32") + "), random windows of " +
           std::to_string(length) + ", " + std::to_string(rows) +
           " a batch, seed " + std::to_string(seed) +
           (first ? ", batches from 2^40 (held out)" : "");
  }

  /// The file's tokens over a batch's: an epoch's worth of batches.
  int64_t batches() const override {
    return std::max<int64_t>(1, tokens / (rows * length));
  }

private:
  uint32_t token(int64_t i) const {
    const uint8_t *at = file->bytes + i * width;
    if (width == 2) {
      uint16_t v;
      std::memcpy(&v, at, 2);
      return v;
    }
    uint32_t v;
    std::memcpy(&v, at, 4);
    return v;
  }
  static void store(uint8_t *to, bool wide, int64_t i, uint32_t v) {
    if (wide)
      reinterpret_cast<int64_t *>(to)[i] = v;
    else // ids past 2^31 fail the embedding's range check as negatives
      reinterpret_cast<int32_t *>(to)[i] = static_cast<int32_t>(v);
  }

  std::string path;
  std::unique_ptr<Mapping> file;
  int width;
  int64_t tokens;
  TensorInfo input, label;
  int64_t rows, length;
  uint64_t seed;
  int64_t first; // an eval entry's batches start at 2^40 (held out)
};

bool isInteger(DType dtype) {
  return dtype == DType::I32 || dtype == DType::I64;
}

} // namespace

Status zcc::runtime::makeTokenSource(const Session &session, int entry,
                                     const std::string &spec, uint64_t seed,
                                     std::unique_ptr<DataSource> &out) {
  std::string path = spec;
  int width = 2;
  size_t colon = spec.rfind(':');
  if (colon != std::string::npos) {
    std::string dtype = spec.substr(colon + 1);
    if (dtype == "uint16" || dtype == "uint32") {
      width = dtype == "uint16" ? 2 : 4;
      path = spec.substr(0, colon);
    }
  }
  if (path.empty())
    return makeError(StatusCode::InvalidArgument,
                     "--data tokens:FILE[:uint16|uint32] names no file");

  // The entry's feeds: one integer input [B, T], one integer label of
  // B*T elements (the next token of each).
  const Entry &e = session.plan().entries[entry];
  const Tensor *in = nullptr, *lab = nullptr;
  int inIndex = -1, labIndex = -1;
  for (size_t t = 0; t < e.tensors.size(); ++t) {
    const Tensor &tensor = e.tensors[t];
    if (tensor.role != TensorRole::Input && tensor.role != TensorRole::Label)
      continue;
    bool isLabel = tensor.role == TensorRole::Label;
    if ((isLabel ? lab : in) != nullptr || !isInteger(tensor.type.dtype))
      return makeError(StatusCode::InvalidArgument, path,
                       ": token data feeds one integer input [batch, "
                       "sequence] and one integer label, and entry '",
                       e.name, "' has ", isLabel ? "label" : "input", " '",
                       tensor.name, "' (", typeString(tensor.type),
                       ") beside them");
    (isLabel ? lab : in) = &tensor;
    (isLabel ? labIndex : inIndex) = static_cast<int>(t);
  }
  if (!in || !lab)
    return makeError(StatusCode::InvalidArgument, path, ": entry '", e.name,
                     "' has no integer ", !in ? "input" : "label",
                     " for token data to feed");
  if (in->type.shape.size() != 2)
    return makeError(StatusCode::InvalidArgument, path, ": input '",
                     in->name, "' is ", typeString(in->type),
                     "; token data feeds [batch, sequence]");
  int64_t rows = in->type.shape[0], length = in->type.shape[1];
  if (lab->type.numElements() != rows * length)
    return makeError(StatusCode::InvalidArgument, path, ": label '",
                     lab->name, "' (", typeString(lab->type),
                     ") does not hold one next token per input token (",
                     rows * length, ")");

  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return makeError(StatusCode::IoError, "cannot open token file ", path,
                     ": ", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return makeError(StatusCode::IoError, "cannot stat token file ", path,
                     ": ", std::strerror(err));
  }
  auto file = std::make_unique<Mapping>();
  file->size = static_cast<size_t>(st.st_size);
  if (file->size % width) {
    ::close(fd);
    return makeError(StatusCode::InvalidArgument, "token file ", path, " is ",
                     file->size, " bytes, not a whole number of ",
                     width == 2 ? "uint16" : "uint32",
                     " tokens (its dtype: FILE:uint16 or FILE:uint32)");
  }
  int64_t tokens = static_cast<int64_t>(file->size / width);
  if (tokens < length + 2) {
    ::close(fd);
    return makeError(StatusCode::InvalidArgument, "token file ", path,
                     " holds ", tokens, " tokens; a window of ", length,
                     " and the token after it need at least ", length + 2);
  }
  void *mapped = ::mmap(nullptr, file->size, PROT_READ, MAP_PRIVATE, fd, 0);
  int err = errno;
  ::close(fd);
  if (mapped == MAP_FAILED)
    return makeError(StatusCode::IoError, "cannot map token file ", path,
                     ": ", std::strerror(err));
  file->bytes = static_cast<const uint8_t *>(mapped);
  out = std::make_unique<TokenSource>(
      path, std::move(file), width, tokens,
      TensorInfo{entry, inIndex, in, Region::Input},
      TensorInfo{entry, labIndex, lab, Region::Input}, rows, length, seed,
      e.kind == EntryKind::Eval ? int64_t(1) << 40 : 0);
  return Status::ok();
}
