//===- Npz.cpp - NumPy .npy and .npz data files ---------------------------===//
//
// A .npy file is "\x93NUMPY", a version, a header length, a Python dict
// literal ({'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), })
// and the raw array bytes. A .npz is a zip archive of such files, read
// here through its central directory; every size and offset is checked
// against the file before it is used, so a corrupt or truncated archive is
// refused with a message instead of read out of bounds.
//
//===----------------------------------------------------------------------===//

#include "zcc/Runtime/IO/Npz.h"

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
// Files and little-endian fields
//===----------------------------------------------------------------------===//

struct FileCloser {
  void operator()(FILE *file) const { std::fclose(file); }
};
using FilePtr = std::unique_ptr<FILE, FileCloser>;

/// A regular file opened for reading; reads outside it are errors.
class InputFile {
public:
  Status open(const std::string &path) {
    path_ = path;
    // Refuse a FIFO or device before opening it: opening a FIFO blocks.
    struct stat before;
    if (::stat(path.c_str(), &before) == 0 && !S_ISREG(before.st_mode))
      return makeError(StatusCode::InvalidArgument, "'", path,
                       "' is not a regular file");
    file_.reset(std::fopen(path.c_str(), "rb"));
    if (!file_)
      return makeError(StatusCode::IoError, "cannot open '", path,
                       "': ", std::strerror(errno));
    struct stat info;
    if (fstat(fileno(file_.get()), &info) != 0)
      return makeError(StatusCode::IoError, "cannot stat '", path,
                       "': ", std::strerror(errno));
    if (!S_ISREG(info.st_mode))
      return makeError(StatusCode::InvalidArgument, "'", path,
                       "' is not a regular file");
    size_ = static_cast<uint64_t>(info.st_size);
    return Status::ok();
  }

  uint64_t size() const { return size_; }

  Status readAt(uint64_t offset, void *dst, uint64_t size) const {
    if (offset > size_ || size > size_ - offset)
      return makeError(StatusCode::InvalidArgument, path_, ": reading ", size,
                       " bytes at offset ", offset, " runs past the end (",
                       size_, " bytes)");
    if (size == 0)
      return Status::ok();
    if (fseeko(file_.get(), static_cast<off_t>(offset), SEEK_SET) != 0 ||
        std::fread(dst, 1, size, file_.get()) != size)
      return makeError(StatusCode::IoError, path_, ": cannot read ", size,
                       " bytes at offset ", offset, ": ",
                       std::ferror(file_.get()) ? std::strerror(errno)
                                                : "the file ended early");
    return Status::ok();
  }

private:
  std::string path_;
  FilePtr file_;
  uint64_t size_ = 0;
};

uint16_t load16(const uint8_t *p) { return uint16_t(p[0] | (p[1] << 8)); }
uint32_t load32(const uint8_t *p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 |
         uint32_t(p[3]) << 24;
}
uint64_t load64(const uint8_t *p) {
  return uint64_t(load32(p)) | uint64_t(load32(p + 4)) << 32;
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

constexpr uint32_t kLocalHeaderSig = 0x04034b50;
constexpr uint32_t kCentralHeaderSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr uint64_t kLocalHeaderSize = 30;
constexpr uint64_t kCentralHeaderSize = 46;
constexpr uint64_t kEndSize = 22;
constexpr uint64_t kZip64EndSize = 56;
constexpr uint64_t kZip64LocatorSize = 20;
constexpr uint16_t kZip64ExtraId = 0x0001;
constexpr uint16_t kStored = 0;
constexpr uint16_t kDeflated = 8;
/// Deflate cannot expand data by more than about 1032:1; a larger declared
/// size is corrupt and must not become an allocation.
constexpr uint64_t kMaxDeflateRatio = 1032;

struct ZipMember {
  std::string name;
  uint16_t flags = 0;
  uint16_t method = 0;
  uint32_t crc = 0;
  uint64_t compressedSize = 0;
  uint64_t uncompressedSize = 0;
  uint64_t localHeaderOffset = 0;
  uint64_t dataOffset = 0; // from the local header
};

struct CentralDirectory {
  uint64_t offset = 0;
  uint64_t size = 0;
  std::vector<ZipMember> members;
};

/// Locates the central directory through the end record (and its zip64
/// form when present) and checks it lies inside the file.
Status findCentralDirectory(const InputFile &file, const std::string &path,
                            CentralDirectory &out_directory) {
  auto invalid = [&](const auto &...parts) {
    return makeError(StatusCode::InvalidArgument, path, ": ", parts...);
  };
  const uint64_t fileSize = file.size();
  // The end record is the last 22 bytes plus a comment of up to 64 KiB.
  uint64_t tailSize = std::min<uint64_t>(fileSize, kEndSize + 0xFFFF);
  std::vector<uint8_t> tail(tailSize);
  ZRT_RETURN_IF_ERROR(file.readAt(fileSize - tailSize, tail.data(), tailSize));
  std::optional<uint64_t> endInTail;
  for (uint64_t i = tailSize >= kEndSize ? tailSize - kEndSize + 1 : 0;
       i-- > 0;)
    if (load32(&tail[i]) == kEndSig &&
        i + kEndSize + load16(&tail[i + 20]) == tailSize) {
      endInTail = i;
      break;
    }
  if (!endInTail) {
    static const uint8_t kNpyMagic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
    uint8_t head[sizeof(kNpyMagic)];
    if (fileSize >= sizeof(head) && file.readAt(0, head, sizeof(head)).isOk() &&
        std::memcmp(head, kNpyMagic, sizeof(kNpyMagic)) == 0)
      return invalid("this is a .npy array, not a .npz archive (read it with "
                     "readNpy)");
    return invalid("no zip end-of-central-directory record: not a .npz "
                   "archive, or a truncated one");
  }
  const uint8_t *end = &tail[*endInTail];
  const uint64_t endOffset = fileSize - tailSize + *endInTail;
  uint64_t disk = load16(end + 4), directoryDisk = load16(end + 6);
  uint64_t entriesHere = load16(end + 8), entries = load16(end + 10);
  uint64_t directorySize = load32(end + 12), directoryOffset = load32(end + 16);
  uint64_t directoryLimit = endOffset;

  // A zip64 archive puts a locator just before the end record, pointing at
  // the zip64 end record with 64-bit counts, size and offset.
  uint8_t locator[kZip64LocatorSize];
  bool hasLocator = false;
  if (endOffset >= kZip64LocatorSize) {
    ZRT_RETURN_IF_ERROR(
        file.readAt(endOffset - kZip64LocatorSize, locator, kZip64LocatorSize));
    hasLocator = load32(locator) == kZip64LocatorSig;
  }
  if (hasLocator) {
    uint64_t locatorOffset = endOffset - kZip64LocatorSize;
    uint64_t zip64Offset = load64(locator + 8);
    if (load32(locator + 4) != 0 || load32(locator + 16) > 1)
      return makeError(StatusCode::Unsupported, path,
                       ": multi-disk (split) zip archives are not supported");
    if (zip64Offset > locatorOffset ||
        locatorOffset - zip64Offset < kZip64EndSize)
      return invalid("zip64 end record at offset ", zip64Offset,
                     " does not fit before its locator at ", locatorOffset);
    uint8_t record[kZip64EndSize];
    ZRT_RETURN_IF_ERROR(file.readAt(zip64Offset, record, kZip64EndSize));
    if (load32(record) != kZip64EndSig)
      return invalid("no zip64 end record at offset ", zip64Offset,
                     " where the locator points");
    uint64_t recordSize = load64(record + 4);
    if (recordSize < kZip64EndSize - 12 ||
        recordSize > locatorOffset - zip64Offset - 12)
      return invalid("zip64 end record size ", recordSize, " is invalid");
    disk = load32(record + 16);
    directoryDisk = load32(record + 20);
    entriesHere = load64(record + 24);
    entries = load64(record + 32);
    directorySize = load64(record + 40);
    directoryOffset = load64(record + 48);
    directoryLimit = zip64Offset;
  } else if (directorySize == 0xFFFFFFFF || directoryOffset == 0xFFFFFFFF) {
    return invalid("the end record defers to a zip64 end record, but there is "
                   "no zip64 locator before it");
  }
  if (disk != 0 || directoryDisk != 0 || entriesHere != entries)
    return makeError(StatusCode::Unsupported, path,
                     ": multi-disk (split) zip archives are not supported");
  if (directoryOffset > directoryLimit ||
      directorySize > directoryLimit - directoryOffset)
    return invalid("central directory [", directoryOffset, ", +", directorySize,
                   ") runs past its end record at offset ", directoryLimit);
  if (entries > directorySize / kCentralHeaderSize)
    return invalid("the end record declares ", entries,
                   " members, more than its ", directorySize,
                   "-byte central directory can hold");

  std::vector<uint8_t> directory(directorySize);
  ZRT_RETURN_IF_ERROR(
      file.readAt(directoryOffset, directory.data(), directorySize));
  std::vector<ZipMember> members;
  uint64_t pos = 0;
  for (uint64_t index = 0; index < entries; ++index) {
    if (directorySize - pos < kCentralHeaderSize)
      return invalid("central directory entry ", index, " is truncated");
    const uint8_t *entry = &directory[pos];
    if (load32(entry) != kCentralHeaderSig)
      return invalid("central directory entry ", index, " has a bad signature");
    uint64_t nameSize = load16(entry + 28), extraSize = load16(entry + 30),
             commentSize = load16(entry + 32);
    if (directorySize - pos - kCentralHeaderSize <
        nameSize + extraSize + commentSize)
      return invalid("central directory entry ", index, " is truncated");
    ZipMember member;
    member.flags = load16(entry + 8);
    member.method = load16(entry + 10);
    member.crc = load32(entry + 16);
    member.compressedSize = load32(entry + 20);
    member.uncompressedSize = load32(entry + 24);
    uint64_t startDisk = load16(entry + 34);
    member.localHeaderOffset = load32(entry + 42);
    member.name.assign(
        reinterpret_cast<const char *>(entry) + kCentralHeaderSize, nameSize);

    // Fields saturated at 0xFFFF(FFFF) continue, in this order, in the
    // zip64 extra field.
    const uint8_t *extra = entry + kCentralHeaderSize + nameSize;
    const uint8_t *extraEnd = extra + extraSize;
    bool sawZip64 = false;
    while (extraEnd - extra >= 4) {
      uint16_t id = load16(extra), size = load16(extra + 2);
      const uint8_t *data = extra + 4;
      if (size > extraEnd - data)
        return invalid("member '", member.name,
                       "': extra field runs past its entry");
      if (id == kZip64ExtraId && !sawZip64) {
        sawZip64 = true;
        const uint8_t *field = data, *fieldEnd = data + size;
        auto take = [&](uint64_t &value, int width) {
          if (fieldEnd - field < width)
            return false;
          value = width == 8 ? load64(field) : load32(field);
          field += width;
          return true;
        };
        if ((member.uncompressedSize == 0xFFFFFFFF &&
             !take(member.uncompressedSize, 8)) ||
            (member.compressedSize == 0xFFFFFFFF &&
             !take(member.compressedSize, 8)) ||
            (member.localHeaderOffset == 0xFFFFFFFF &&
             !take(member.localHeaderOffset, 8)) ||
            (startDisk == 0xFFFF && !take(startDisk, 4)))
          return invalid("member '", member.name,
                         "': zip64 extra field is too short");
      }
      extra = data + size;
    }
    if (!sawZip64 && (member.uncompressedSize == 0xFFFFFFFF ||
                      member.compressedSize == 0xFFFFFFFF ||
                      member.localHeaderOffset == 0xFFFFFFFF))
      return invalid("member '", member.name,
                     "' defers its sizes or offset to a zip64 extra field it "
                     "does not have");
    if (startDisk != 0)
      return makeError(StatusCode::Unsupported, path,
                       ": multi-disk (split) zip archives are not supported");
    members.push_back(std::move(member));
    pos += kCentralHeaderSize + nameSize + extraSize + commentSize;
  }
  if (pos != directorySize)
    return invalid("central directory has ", directorySize - pos,
                   " bytes after its ", entries, " entries");

  out_directory.offset = directoryOffset;
  out_directory.size = directorySize;
  out_directory.members = std::move(members);
  return Status::ok();
}

/// Checks a member's name, method and sizes and its local header, and sets
/// `dataOffset`. Member data must lie before the central directory.
Status checkMember(const InputFile &file, const std::string &path,
                   uint64_t directoryOffset, ZipMember &member) {
  auto invalid = [&](const auto &...parts) {
    return makeError(StatusCode::InvalidArgument, path, ": member '",
                     member.name, "': ", parts...);
  };
  if (member.flags & 0x41) // bit 0: encrypted, bit 6: strong encryption
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

  if (member.localHeaderOffset > directoryOffset ||
      directoryOffset - member.localHeaderOffset < kLocalHeaderSize)
    return invalid("local header at offset ", member.localHeaderOffset,
                   " lies outside the member data (which ends at ",
                   directoryOffset, ")");
  uint8_t local[kLocalHeaderSize];
  ZRT_RETURN_IF_ERROR(
      file.readAt(member.localHeaderOffset, local, kLocalHeaderSize));
  if (load32(local) != kLocalHeaderSig)
    return invalid("no local header at offset ", member.localHeaderOffset);
  if (load16(local + 8) != member.method)
    return invalid("local header gives compression method ", load16(local + 8),
                   ", the central directory ", member.method);
  uint64_t nameSize = load16(local + 26), extraSize = load16(local + 28);
  uint64_t dataOffset =
      member.localHeaderOffset + kLocalHeaderSize + nameSize + extraSize;
  if (dataOffset > directoryOffset ||
      member.compressedSize > directoryOffset - dataOffset)
    return invalid(member.compressedSize, " bytes of data at offset ",
                   dataOffset, " run past the member data (which ends at ",
                   directoryOffset, ")");
  std::string localName(nameSize, '\0');
  ZRT_RETURN_IF_ERROR(file.readAt(member.localHeaderOffset + kLocalHeaderSize,
                                  localName.data(), nameSize));
  if (localName != member.name)
    return invalid("local header names it '", localName, "'");
  member.dataOffset = dataOffset;
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
  CentralDirectory directory;
  ZRT_RETURN_IF_ERROR(findCentralDirectory(file, path, directory));

  // Validate every member before reading any data.
  std::set<std::string> names;
  for (ZipMember &member : directory.members) {
    if (!endsWith(member.name, ".npy") || member.name.size() == 4)
      return makeError(StatusCode::InvalidArgument, path, ": member '",
                       member.name,
                       "' is not a named .npy array (a .npz holds only "
                       "'<name>.npy' members)");
    if (!names.insert(member.name).second)
      return makeError(StatusCode::InvalidArgument, path, ": member '",
                       member.name, "' appears twice");
    ZRT_RETURN_IF_ERROR(checkMember(file, path, directory.offset, member));
  }
  std::vector<const ZipMember *> byOffset;
  for (const ZipMember &member : directory.members)
    byOffset.push_back(&member);
  std::sort(byOffset.begin(), byOffset.end(),
            [](const ZipMember *a, const ZipMember *b) {
              return a->localHeaderOffset < b->localHeaderOffset;
            });
  for (size_t i = 1; i < byOffset.size(); ++i) {
    const ZipMember &before = *byOffset[i - 1], &after = *byOffset[i];
    if (before.dataOffset + before.compressedSize > after.localHeaderOffset)
      return makeError(StatusCode::InvalidArgument, path, ": members '",
                       before.name, "' and '", after.name, "' overlap");
  }

  std::vector<HostTensor> tensors;
  tensors.reserve(directory.members.size());
  for (const ZipMember &member : directory.members) {
    std::vector<uint8_t> stored(member.compressedSize);
    ZRT_RETURN_IF_ERROR(
        file.readAt(member.dataOffset, stored.data(), stored.size()));
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
