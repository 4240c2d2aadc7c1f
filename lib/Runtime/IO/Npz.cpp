//===- Npz.cpp - NumPy .npy and .npz data files ---------------------------===//
//
// A .npy file is "\x93NUMPY", a version, a header length, a Python dict
// literal ({'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), })
// and the raw array bytes. A .npz is a zip archive of such files: libzip
// reads its structure, zlib inflates its members, and every declared size
// and CRC is checked before the data is used, so a corrupt or truncated
// archive is refused with a message instead of read out of bounds.
//
//===----------------------------------------------------------------------===//

#include "zcc/Runtime/IO/Npz.h"

#include "IO/InputFile.h"

#include <zip.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <set>
#include <string_view>
#include <sys/stat.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error                                                                         \
    "tensor files are little-endian and are copied as-is: little-endian host required"
#endif

using namespace zcc::runtime;

namespace {

//===----------------------------------------------------------------------===//
// Little-endian fields
//===----------------------------------------------------------------------===//

uint16_t load16(const uint8_t *p) { return uint16_t(p[0] | (p[1] << 8)); }
uint32_t load32(const uint8_t *p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 |
         uint32_t(p[3]) << 24;
}

//===----------------------------------------------------------------------===//
// .npy header: a Python literal
//===----------------------------------------------------------------------===//

/// The subset of Python literals a .npy header uses.
struct PyValue {
  enum class Kind { None, Bool, Int, String, Tuple, List };
  Kind kind = Kind::None;
  bool boolean = false;
  int64_t integer = 0;
  std::string text;
  std::vector<PyValue> items;
};

/// Parses `{'key': value, ...}` as numpy writes it (ast.literal_eval's
/// grammar restricted to what a header holds). Nesting is bounded so a
/// crafted header cannot exhaust the stack.
class PyDictParser {
public:
  explicit PyDictParser(std::string_view text) : text_(text) {}

  bool parse(std::vector<std::pair<std::string, PyValue>> &out) {
    skipSpace();
    if (!consume('{'))
      return fail("expected '{'");
    while (true) {
      skipSpace();
      if (consume('}'))
        break;
      std::string key;
      if (!peekIs('\'') && !peekIs('"'))
        return fail("expected a quoted key or '}'");
      if (!parseString(key))
        return false;
      skipSpace();
      if (!consume(':'))
        return fail("expected ':' after key '" + key + "'");
      PyValue value;
      if (!parseValue(value, 0))
        return false;
      out.emplace_back(std::move(key), std::move(value));
      skipSpace();
      if (consume('}'))
        break;
      if (!consume(','))
        return fail("expected ',' or '}'");
    }
    skipSpace();
    if (pos_ != text_.size())
      return fail("unexpected text after the dictionary");
    return true;
  }

  const std::string &error() const { return error_; }

private:
  static constexpr int kMaxDepth = 32;

  bool fail(const std::string &message) {
    if (error_.empty())
      error_ = message + " at byte " + std::to_string(pos_);
    return false;
  }
  bool peekIs(char c) const { return pos_ < text_.size() && text_[pos_] == c; }
  bool consume(char c) {
    if (!peekIs(c))
      return false;
    ++pos_;
    return true;
  }
  bool consumeWord(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word)
      return false;
    size_t next = pos_ + word.size();
    if (next < text_.size() &&
        (std::isalnum(static_cast<unsigned char>(text_[next])) ||
         text_[next] == '_'))
      return false;
    pos_ = next;
    return true;
  }
  void skipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }

  bool parseString(std::string &out) {
    char quote = text_[pos_++];
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\n')
        return fail("unterminated string");
      if (text_[pos_] == '\\') {
        if (++pos_ == text_.size())
          break;
      }
      out += text_[pos_++];
    }
    if (!consume(quote))
      return fail("unterminated string");
    return true;
  }

  bool parseInt(int64_t &out) {
    bool negative = consume('-');
    if (pos_ == text_.size() ||
        !std::isdigit(static_cast<unsigned char>(text_[pos_])))
      return fail("expected a digit");
    uint64_t value = 0;
    while (pos_ < text_.size() &&
           std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      if (__builtin_mul_overflow(value, 10u, &value) ||
          __builtin_add_overflow(value, unsigned(text_[pos_] - '0'), &value) ||
          value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        return fail("integer too large");
      ++pos_;
    }
    consume('L'); // Python 2 numpy wrote longs as "3L".
    out = negative ? -static_cast<int64_t>(value) : static_cast<int64_t>(value);
    return true;
  }

  /// `(a, b)`, `(a,)`, `()` or `[a, b]`; `(a)` is just `a`, as in Python.
  bool parseSequence(char close, PyValue &out, int depth) {
    bool sawComma = false;
    std::vector<PyValue> items;
    while (true) {
      skipSpace();
      if (consume(close))
        break;
      PyValue item;
      if (!parseValue(item, depth + 1))
        return false;
      items.push_back(std::move(item));
      skipSpace();
      if (consume(close))
        break;
      if (!consume(','))
        return fail(std::string("expected ',' or '") + close + "'");
      sawComma = true;
    }
    if (close == ')' && items.size() == 1 && !sawComma) {
      out = std::move(items.front());
      return true;
    }
    out.kind = close == ')' ? PyValue::Kind::Tuple : PyValue::Kind::List;
    out.items = std::move(items);
    return true;
  }

  bool parseValue(PyValue &out, int depth) {
    if (depth > kMaxDepth)
      return fail("values nested too deeply");
    skipSpace();
    if (pos_ == text_.size())
      return fail("expected a value");
    char c = text_[pos_];
    if (c == '\'' || c == '"') {
      out.kind = PyValue::Kind::String;
      return parseString(out.text);
    }
    if (c == '(' || c == '[') {
      ++pos_;
      return parseSequence(c == '(' ? ')' : ']', out, depth);
    }
    if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) {
      out.kind = PyValue::Kind::Int;
      return parseInt(out.integer);
    }
    for (bool value : {true, false})
      if (consumeWord(value ? "True" : "False")) {
        out.kind = PyValue::Kind::Bool;
        out.boolean = value;
        return true;
      }
    if (consumeWord("None")) {
      out.kind = PyValue::Kind::None;
      return true;
    }
    return fail(std::string("unexpected character '") + c + "'");
  }

  std::string_view text_;
  size_t pos_ = 0;
  std::string error_;
};

//===----------------------------------------------------------------------===//
// .npy arrays
//===----------------------------------------------------------------------===//

/// Names the array in messages: a .npy file, or a member of a .npz.
struct ArrayOrigin {
  const std::string &path;
  const std::string *member = nullptr; // the array name within a .npz

  /// "x.npz: member 'w': " or "w.npy: ".
  std::string prefix() const {
    return member ? path + ": member '" + *member + "': " : path + ": ";
  }
  /// " in member 'w'" or "".
  std::string in() const {
    return member ? " in member '" + *member + "'" : std::string();
  }
};

std::optional<DType> parseDescr(const std::string &descr) {
  if (descr == "<f4")
    return DType::F32;
  if (descr == "<i4")
    return DType::I32;
  if (descr == "<i8")
    return DType::I64;
  return std::nullopt;
}

std::string pyShape(const std::vector<int64_t> &shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + (shape.size() == 1 ? ",)" : ")");
}

/// Turns the bytes of a whole .npy file into `out_tensor` (its name left to
/// the caller), moving them rather than copying.
Status parseNpyArray(std::vector<uint8_t> &&file, const ArrayOrigin &origin,
                     HostTensor &out_tensor) {
  static const uint8_t kMagic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  auto invalid = [&](const auto &...parts) {
    return makeError(StatusCode::InvalidArgument, origin.prefix(), parts...);
  };
  if (file.size() < 10)
    return invalid("too short for a .npy header (", file.size(), " bytes)");
  if (std::memcmp(file.data(), kMagic, sizeof(kMagic)) != 0)
    return invalid("not a .npy array (no \\x93NUMPY magic)");
  unsigned major = file[6], minor = file[7];
  if (minor != 0 || major < 1 || major > 3)
    return makeError(StatusCode::Unsupported, origin.prefix(),
                     ".npy format version ", major, ".", minor,
                     " is not supported (1.0, 2.0 and 3.0 are)");
  size_t prefixSize = major == 1 ? 10 : 12;
  if (file.size() < prefixSize)
    return invalid("too short for a .npy ", major, ".0 header (", file.size(),
                   " bytes)");
  uint64_t headerSize = major == 1 ? load16(&file[8]) : load32(&file[8]);
  if (headerSize > file.size() - prefixSize)
    return invalid(".npy header length ", headerSize,
                   " runs past the end of the array (", file.size(), " bytes)");
  std::string_view header(reinterpret_cast<const char *>(&file[prefixSize]),
                          headerSize);

  std::vector<std::pair<std::string, PyValue>> dict;
  PyDictParser parser(header);
  if (!parser.parse(dict))
    return invalid(".npy header is not a Python dict literal: ",
                   parser.error());
  const PyValue *descr = nullptr, *fortran = nullptr, *shape = nullptr;
  for (const auto &[key, value] : dict) {
    const PyValue **slot = key == "descr"           ? &descr
                           : key == "fortran_order" ? &fortran
                           : key == "shape"         ? &shape
                                                    : nullptr;
    if (!slot)
      return invalid(".npy header has an unexpected key '", key,
                     "' (expected descr, fortran_order, shape)");
    if (*slot)
      return invalid(".npy header gives '", key, "' twice");
    *slot = &value;
  }
  for (auto [name, value] :
       {std::pair{"descr", descr}, std::pair{"fortran_order", fortran},
        std::pair{"shape", shape}})
    if (!value)
      return invalid(".npy header lacks '", name, "'");

  if (descr->kind == PyValue::Kind::List)
    return makeError(StatusCode::Unsupported, origin.path, ": structured dtype",
                     origin.in(),
                     " is not supported: zcc data files hold float32, int32 "
                     "or int64");
  if (descr->kind != PyValue::Kind::String)
    return invalid("'descr' is not a dtype string");
  std::optional<DType> dtype = parseDescr(descr->text);
  if (!dtype)
    return makeError(StatusCode::Unsupported, origin.path,
                     ": unsupported dtype '", descr->text, "'", origin.in(),
                     ": zcc data files hold float32, int32 or int64 (convert "
                     "with astype)");
  if (fortran->kind != PyValue::Kind::Bool)
    return invalid("'fortran_order' is not True or False");
  if (fortran->boolean)
    return makeError(StatusCode::Unsupported, origin.prefix(),
                     "the array is stored in Fortran order; zcc reads C-order "
                     "arrays (save np.ascontiguousarray(a))");
  if (shape->kind != PyValue::Kind::Tuple)
    return invalid("'shape' is not a tuple");
  std::vector<int64_t> dims;
  uint64_t bytes = static_cast<uint64_t>(dtypeBytes(*dtype));
  for (const PyValue &dim : shape->items) {
    if (dim.kind != PyValue::Kind::Int || dim.integer < 0)
      return invalid("'shape' holds something other than a non-negative "
                     "integer");
    dims.push_back(dim.integer);
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(dim.integer),
                               &bytes))
      return invalid("shape ", pyShape(dims), "... is too large");
  }

  uint64_t dataStart = prefixSize + headerSize;
  uint64_t dataSize = file.size() - dataStart;
  if (dataSize != bytes)
    return invalid("array data holds ", dataSize, " bytes but ", descr->text,
                   " ", pyShape(dims), " needs ", bytes,
                   dataSize < bytes ? " (truncated)" : " (trailing bytes)");

  // Drop the header in place: the file's buffer becomes the tensor's.
  file.erase(file.begin(), file.begin() + static_cast<ptrdiff_t>(dataStart));
  out_tensor.dtype = *dtype;
  out_tensor.shape = std::move(dims);
  out_tensor.bytes = std::move(file);
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Zip archives
//===----------------------------------------------------------------------===//

constexpr uint16_t kStored = 0;
constexpr uint16_t kDeflated = 8;
/// Deflate cannot expand data by more than about 1032:1; a larger declared
/// size is corrupt and must not become an allocation.
constexpr uint64_t kMaxDeflateRatio = 1032;

// libzip reads the archive's structure (the end record and its zip64 form,
// the central directory, the local headers, with its consistency checks).
// The member data is read raw and inflated here with zlib, so sizes, CRCs
// and the end of the deflate stream are checked exactly, with messages
// that name what is wrong.

struct ZipCloser {
  void operator()(zip_t *archive) const { zip_discard(archive); }
};
using ZipArchive = std::unique_ptr<zip_t, ZipCloser>;

struct ZipMember {
  std::string name;
  zip_uint64_t index = 0;
  bool encrypted = false;
  uint64_t method = 0;
  uint32_t crc = 0;
  uint64_t compressedSize = 0;
  uint64_t uncompressedSize = 0;
};

/// The central directory's entries, in order.
Status readDirectory(zip_t *archive, const std::string &path,
                     std::vector<ZipMember> &out_members) {
  zip_int64_t count = zip_get_num_entries(archive, 0);
  std::vector<ZipMember> members;
  for (zip_int64_t i = 0; i < count; ++i) {
    zip_stat_t info;
    zip_stat_init(&info);
    if (zip_stat_index(archive, static_cast<zip_uint64_t>(i), ZIP_FL_ENC_RAW,
                       &info) != 0)
      return makeError(StatusCode::InvalidArgument, path,
                       ": corrupt central directory entry ", i, " (",
                       zip_strerror(archive), ")");
    const zip_uint64_t needed = ZIP_STAT_NAME | ZIP_STAT_SIZE |
                                ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD |
                                ZIP_STAT_CRC | ZIP_STAT_ENCRYPTION_METHOD;
    if ((info.valid & needed) != needed)
      return makeError(StatusCode::InvalidArgument, path,
                       ": central directory entry ", i, " is incomplete");
    ZipMember member;
    member.name = info.name;
    member.index = static_cast<zip_uint64_t>(i);
    member.encrypted = info.encryption_method != ZIP_EM_NONE;
    member.method = info.comp_method;
    member.crc = info.crc;
    member.compressedSize = info.comp_size;
    member.uncompressedSize = info.size;
    members.push_back(std::move(member));
  }
  out_members = std::move(members);
  return Status::ok();
}

/// Checks a member's name-independent fields: encryption, method, sizes.
Status checkMember(const std::string &path, const ZipMember &member) {
  auto invalid = [&](const auto &...parts) {
    return makeError(StatusCode::InvalidArgument, path, ": member '",
                     member.name, "': ", parts...);
  };
  if (member.encrypted)
    return makeError(StatusCode::Unsupported, path, ": member '", member.name,
                     "' is encrypted");
  if (member.method != kStored && member.method != kDeflated) {
    const char *known = member.method == 9    ? " (deflate64)"
                        : member.method == 12 ? " (bzip2)"
                        : member.method == 14 ? " (lzma)"
                        : member.method == 93 ? " (zstandard)"
                                              : "";
    return makeError(StatusCode::Unsupported, path, ": member '", member.name,
                     "' uses compression method ", member.method, known,
                     "; zcc reads stored (np.savez) and deflated "
                     "(np.savez_compressed) members");
  }
  if (member.method == kStored &&
      member.compressedSize != member.uncompressedSize)
    return invalid("stored with ", member.compressedSize,
                   " bytes but declares ", member.uncompressedSize);
  if (member.method == kDeflated &&
      member.uncompressedSize / kMaxDeflateRatio > member.compressedSize)
    return invalid("declares ", member.uncompressedSize, " bytes from ",
                   member.compressedSize,
                   " deflated bytes, more than deflate can produce");
  return Status::ok();
}

/// The member's bytes as stored (raw: still deflated if it is), after
/// libzip has checked its local header.
Status readStoredBytes(zip_t *archive, const std::string &path,
                       const ZipMember &member, uint64_t fileSize,
                       std::vector<uint8_t> &out) {
  auto invalid = [&](const auto &...parts) {
    return makeError(StatusCode::InvalidArgument, path, ": member '",
                     member.name, "': ", parts...);
  };
  // Before allocating: the data cannot be larger than the file.
  if (member.compressedSize > fileSize)
    return invalid(member.compressedSize, " bytes of data in a file of ",
                   fileSize);
  std::unique_ptr<zip_file_t, int (*)(zip_file_t *)> data(
      zip_fopen_index(archive, member.index, ZIP_FL_COMPRESSED), zip_fclose);
  if (!data)
    return invalid("cannot open its data (", zip_strerror(archive), ")");
  out.resize(member.compressedSize);
  uint64_t done = 0;
  while (done < out.size()) {
    zip_int64_t read = zip_fread(data.get(), out.data() + done,
                                 out.size() - done);
    if (read < 0)
      return invalid("cannot read its data (",
                     zip_error_strerror(zip_file_get_error(data.get())), ")");
    if (read == 0)
      return invalid("its ", out.size(), " bytes of data end after ", done,
                     " (truncated)");
    done += static_cast<uint64_t>(read);
  }
  return Status::ok();
}

/// Inflates raw deflate data into `out`, which holds the declared size;
/// anything but exactly that many bytes from exactly all the input is an
/// error. Every iteration consumes input or produces output, so corrupt
/// data cannot loop forever.
Status inflateMember(const std::string &path, const std::string &name,
                     const std::vector<uint8_t> &compressed,
                     std::vector<uint8_t> &out) {
  auto invalid = [&](const auto &...parts) {
    return makeError(StatusCode::InvalidArgument, path, ": member '", name,
                     "': ", parts...);
  };
  z_stream stream;
  std::memset(&stream, 0, sizeof(stream));
  if (inflateInit2(&stream, -MAX_WBITS) != Z_OK)
    return makeError(StatusCode::OutOfMemory, path,
                     ": cannot initialize zlib's inflate");
  std::unique_ptr<z_stream, int (*)(z_stream *)> guard(&stream, inflateEnd);
  constexpr uint64_t kChunk = 1u << 30; // z_stream counts in 32-bit uInt
  uint64_t inPos = 0, outPos = 0;
  uint8_t overflow = 0;
  while (true) {
    uInt inChunk = static_cast<uInt>(
        std::min<uint64_t>(compressed.size() - inPos, kChunk));
    stream.next_in = const_cast<Bytef *>(compressed.data() + inPos);
    stream.avail_in = inChunk;
    bool full = outPos == out.size();
    // With the output full, offer one byte to learn whether more follows.
    uInt outChunk = full ? 1u
                         : static_cast<uInt>(
                               std::min<uint64_t>(out.size() - outPos, kChunk));
    stream.next_out = full ? &overflow : out.data() + outPos;
    stream.avail_out = outChunk;
    int result = inflate(&stream, Z_NO_FLUSH);
    uint64_t consumed = inChunk - stream.avail_in;
    uint64_t produced = outChunk - stream.avail_out;
    inPos += consumed;
    if (full && produced)
      return invalid("inflates to more than the declared ", out.size(),
                     " bytes");
    outPos += produced;
    if (result == Z_STREAM_END)
      break;
    if (result == Z_MEM_ERROR)
      return makeError(StatusCode::OutOfMemory, path, ": member '", name,
                       "': out of memory inflating");
    if (result == Z_DATA_ERROR || result == Z_NEED_DICT)
      return invalid("corrupt deflate data (",
                     stream.msg ? stream.msg : "invalid stream", ")");
    if ((result != Z_OK && result != Z_BUF_ERROR) ||
        (consumed == 0 && produced == 0))
      return invalid("deflate data ends before the stream does (truncated)");
  }
  if (outPos != out.size())
    return invalid("inflates to ", outPos, " bytes, not the declared ",
                   out.size());
  if (inPos != compressed.size())
    return invalid(compressed.size() - inPos,
                   " bytes follow the end of the deflate stream");
  return Status::ok();
}

uint32_t crc32Of(const std::vector<uint8_t> &bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  for (size_t pos = 0; pos < bytes.size();) {
    uInt chunk =
        static_cast<uInt>(std::min<size_t>(bytes.size() - pos, 1u << 30));
    crc = crc32(crc, bytes.data() + pos, chunk);
    pos += chunk;
  }
  return static_cast<uint32_t>(crc);
}

std::string hex32(uint32_t value) {
  char text[11];
  std::snprintf(text, sizeof(text), "0x%08x", value);
  return text;
}

bool endsWith(const std::string &text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Status readNpzImpl(const std::string &path,
                   std::vector<HostTensor> &out_tensors) {
  InputFile file;
  ZRT_RETURN_IF_ERROR(file.open(path));
  int error = 0;
  ZipArchive archive(zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &error));
  if (!archive) {
    static const uint8_t kNpyMagic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
    uint8_t head[sizeof(kNpyMagic)];
    if (file.size() >= sizeof(head) &&
        file.readAt(0, head, sizeof(head)).isOk() &&
        std::memcmp(head, kNpyMagic, sizeof(kNpyMagic)) == 0)
      return makeError(StatusCode::InvalidArgument, path,
                       ": this is a .npy array, not a .npz archive (read it "
                       "with readNpy)");
    zip_error_t reason;
    zip_error_init_with_code(&reason, error);
    std::string why = zip_error_strerror(&reason);
    zip_error_fini(&reason);
    if (error == ZIP_ER_NOZIP)
      return makeError(StatusCode::InvalidArgument, path,
                       ": no zip end-of-central-directory record: not a .npz "
                       "archive, or a truncated one");
    if (error == ZIP_ER_EXISTS)
      return makeError(StatusCode::InvalidArgument, path,
                       ": two members have the same name");
    if (error == ZIP_ER_OPEN || error == ZIP_ER_READ || error == ZIP_ER_SEEK)
      return makeError(StatusCode::IoError, path, ": ", why);
    return makeError(StatusCode::InvalidArgument, path,
                     ": not a valid zip archive (", why, ")");
  }
  std::vector<ZipMember> members;
  ZRT_RETURN_IF_ERROR(readDirectory(archive.get(), path, members));

  // Validate every member before reading any data.
  std::set<std::string> names;
  for (const ZipMember &member : members) {
    if (!endsWith(member.name, ".npy") || member.name.size() == 4)
      return makeError(StatusCode::InvalidArgument, path, ": member '",
                       member.name,
                       "' is not a named .npy array (a .npz holds only "
                       "'<name>.npy' members)");
    if (!names.insert(member.name).second)
      return makeError(StatusCode::InvalidArgument, path, ": member '",
                       member.name, "' appears twice");
    ZRT_RETURN_IF_ERROR(checkMember(path, member));
  }

  std::vector<HostTensor> tensors;
  tensors.reserve(members.size());
  for (const ZipMember &member : members) {
    std::vector<uint8_t> stored;
    ZRT_RETURN_IF_ERROR(
        readStoredBytes(archive.get(), path, member, file.size(), stored));
    std::vector<uint8_t> contents;
    if (member.method == kStored) {
      contents = std::move(stored);
    } else {
      contents.resize(member.uncompressedSize);
      ZRT_RETURN_IF_ERROR(inflateMember(path, member.name, stored, contents));
      std::vector<uint8_t>().swap(stored);
    }
    uint32_t crc = crc32Of(contents);
    if (crc != member.crc)
      return makeError(StatusCode::InvalidArgument, path, ": member '",
                       member.name, "': CRC-32 mismatch (recorded ",
                       hex32(member.crc), ", computed ", hex32(crc),
                       "): the archive is corrupt");
    HostTensor tensor;
    tensor.name = member.name.substr(0, member.name.size() - 4);
    ZRT_RETURN_IF_ERROR(parseNpyArray(std::move(contents),
                                      ArrayOrigin{path, &tensor.name}, tensor));
    tensors.push_back(std::move(tensor));
  }
  out_tensors = std::move(tensors);
  return Status::ok();
}

Status readNpyImpl(const std::string &path, HostTensor &out_tensor) {
  InputFile file;
  ZRT_RETURN_IF_ERROR(file.open(path));
  std::vector<uint8_t> bytes(file.size());
  ZRT_RETURN_IF_ERROR(file.readAt(0, bytes.data(), bytes.size()));
  HostTensor tensor;
  size_t slash = path.find_last_of('/');
  tensor.name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (endsWith(tensor.name, ".npy"))
    tensor.name.resize(tensor.name.size() - 4);
  ZRT_RETURN_IF_ERROR(
      parseNpyArray(std::move(bytes), ArrayOrigin{path}, tensor));
  out_tensor = std::move(tensor);
  return Status::ok();
}

} // namespace

Status zcc::runtime::readNpz(const std::string &path,
                             std::vector<HostTensor> &out_tensors) {
  try {
    return readNpzImpl(path, out_tensors);
  } catch (const std::bad_alloc &) {
    return makeError(StatusCode::OutOfMemory, path,
                     ": out of memory reading the archive");
  }
}

Status zcc::runtime::readNpy(const std::string &path, HostTensor &out_tensor) {
  try {
    return readNpyImpl(path, out_tensor);
  } catch (const std::bad_alloc &) {
    return makeError(StatusCode::OutOfMemory, path,
                     ": out of memory reading the array");
  }
}
