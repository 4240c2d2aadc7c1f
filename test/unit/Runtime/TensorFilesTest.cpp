//===- TensorFilesTest.cpp - safetensors, .npy and .npz files -------------===//
//
// numpy is not needed: the .npy and .npz bytes are built here the way numpy
// and Python's zipfile write them (one fixture is numpy's exact output). The
// readers must accept every valid file and turn every corrupt one (all
// truncations, byte flips) into an error, never a crash or a hang.
//
//===----------------------------------------------------------------------===//

#include "zcc/Runtime/IO/Npz.h"
#include "zcc/Runtime/IO/SafeTensors.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <random>
#include <sys/stat.h>
#include <unistd.h>

using namespace zcc::runtime;
namespace fs = std::filesystem;

namespace {

using Bytes = std::vector<uint8_t>;
using Metadata = std::vector<std::pair<std::string, std::string>>;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

Bytes readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

void writeFile(const std::string &path, const Bytes &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

template <typename T> Bytes bytesOf(const std::vector<T> &values) {
  Bytes bytes(values.size() * sizeof(T));
  if (!bytes.empty())
    std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

Bytes bytesOf(const std::string &text) {
  return Bytes(text.begin(), text.end());
}

HostTensor makeTensor(std::string name, DType dtype, std::vector<int64_t> shape,
                      Bytes bytes) {
  return HostTensor{std::move(name), dtype, std::move(shape), std::move(bytes)};
}

std::vector<HostTensorView> viewsOf(const std::vector<HostTensor> &tensors) {
  std::vector<HostTensorView> views;
  for (const HostTensor &tensor : tensors)
    views.push_back(viewOf(tensor));
  return views;
}

::testing::AssertionResult failsWith(const Status &status,
                                     const std::string &needle) {
  if (status.isOk())
    return ::testing::AssertionFailure()
           << "succeeded; expected an error containing \"" << needle << "\"";
  if (status.message().find(needle) == std::string::npos)
    return ::testing::AssertionFailure()
           << "error \"" << status.message() << "\" does not contain \""
           << needle << "\"";
  return ::testing::AssertionSuccess();
}

void expectSameTensors(const std::vector<HostTensor> &actual,
                       const std::vector<HostTensor> &expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    SCOPED_TRACE("tensor " + expected[i].name);
    EXPECT_EQ(actual[i].name, expected[i].name);
    EXPECT_EQ(actual[i].dtype, expected[i].dtype);
    EXPECT_EQ(actual[i].shape, expected[i].shape);
    EXPECT_EQ(actual[i].bytes, expected[i].bytes);
  }
}

void put16(Bytes &out, uint64_t value) {
  for (int i = 0; i < 2; ++i)
    out.push_back(static_cast<uint8_t>(value >> (8 * i)));
}
void put32(Bytes &out, uint64_t value) {
  for (int i = 0; i < 4; ++i)
    out.push_back(static_cast<uint8_t>(value >> (8 * i)));
}
void put64(Bytes &out, uint64_t value) {
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<uint8_t>(value >> (8 * i)));
}
void append(Bytes &out, const Bytes &more) {
  out.insert(out.end(), more.begin(), more.end());
}
void append(Bytes &out, const std::string &more) {
  out.insert(out.end(), more.begin(), more.end());
}

/// A safetensors file with the given header text (unpadded) and data.
Bytes safetensorsFile(const std::string &header, const Bytes &data = {}) {
  Bytes file;
  put64(file, header.size());
  append(file, header);
  append(file, data);
  return file;
}

/// A .npy file with exactly `header` as its header text.
Bytes npyRaw(int major, int minor, const std::string &header,
             const Bytes &data) {
  Bytes file = {0x93,
                'N',
                'U',
                'M',
                'P',
                'Y',
                static_cast<uint8_t>(major),
                static_cast<uint8_t>(minor)};
  if (major == 1)
    put16(file, header.size());
  else
    put32(file, header.size());
  append(file, header);
  append(file, data);
  return file;
}

/// A .npy file as numpy's write_array writes it: sorted keys, a trailing
/// ", " before '}', spaces and '\n' padding the prefix to 64 bytes.
Bytes npyFile(const std::string &descr, const std::string &shape,
              const Bytes &data, int major = 1, bool fortran = false) {
  std::string header = "{'descr': '" + descr +
                       "', 'fortran_order': " + (fortran ? "True" : "False") +
                       ", 'shape': " + shape + ", }";
  size_t prefix = major == 1 ? 10 : 12;
  size_t unpadded = prefix + header.size() + 1;
  header += std::string(64 - unpadded % 64, ' ') + "\n";
  return npyRaw(major, 0, header, data);
}

Bytes deflateRaw(const Bytes &input) {
  z_stream stream;
  std::memset(&stream, 0, sizeof(stream));
  EXPECT_EQ(deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS,
                         8, Z_DEFAULT_STRATEGY),
            Z_OK);
  Bytes output(deflateBound(&stream, input.size()));
  stream.next_in = const_cast<Bytef *>(input.data());
  stream.avail_in = static_cast<uInt>(input.size());
  stream.next_out = output.data();
  stream.avail_out = static_cast<uInt>(output.size());
  EXPECT_EQ(deflate(&stream, Z_FINISH), Z_STREAM_END);
  output.resize(stream.total_out);
  deflateEnd(&stream);
  return output;
}

uint32_t crcOf(const Bytes &bytes) {
  return static_cast<uint32_t>(crc32(crc32(0L, Z_NULL, 0), bytes.data(),
                                     static_cast<uInt>(bytes.size())));
}

struct ZipMemberSpec {
  ZipMemberSpec(std::string name, Bytes contents, bool deflate = false)
      : name(std::move(name)), contents(std::move(contents)), deflate(deflate) {
  }

  std::string name;
  Bytes contents;
  bool deflate;
  // Overrides that make an archive corrupt or unsupported on purpose.
  std::optional<uint16_t> method;
  std::optional<uint16_t> flags;
  std::optional<uint32_t> crc;
  std::optional<uint64_t> declaredSize;
};

ZipMemberSpec withMethod(ZipMemberSpec member, uint16_t method) {
  member.method = method;
  return member;
}

ZipMemberSpec withFlags(ZipMemberSpec member, uint16_t flags) {
  member.flags = flags;
  return member;
}

enum class Zip64 {
  None,    // plain zip
  Numpy,   // np.savez: a zip64 extra in each local header only
  Complete // saturated 32-bit fields, zip64 extras and end record
};

/// A zip archive laid out as Python's zipfile writes one.
Bytes zipArchive(const std::vector<ZipMemberSpec> &members,
                 Zip64 zip64 = Zip64::Numpy) {
  const uint16_t kDosDate = (0 << 9) | (1 << 5) | 1; // 1980-01-01
  const bool complete = zip64 == Zip64::Complete;
  Bytes archive, directory;
  for (const ZipMemberSpec &member : members) {
    Bytes data = member.deflate ? deflateRaw(member.contents) : member.contents;
    uint16_t method = member.method.value_or(member.deflate ? 8 : 0);
    uint16_t flags = member.flags.value_or(0);
    uint32_t crc = member.crc.value_or(crcOf(member.contents));
    uint64_t size = member.declaredSize.value_or(member.contents.size());
    uint64_t offset = archive.size();

    Bytes localExtra;
    if (zip64 != Zip64::None) {
      put16(localExtra, 1);
      put16(localExtra, 16);
      put64(localExtra, size);
      put64(localExtra, data.size());
    }
    put32(archive, 0x04034b50);
    put16(archive, complete ? 45 : 20);
    put16(archive, flags);
    put16(archive, method);
    put16(archive, 0);
    put16(archive, kDosDate);
    put32(archive, crc);
    put32(archive, complete ? 0xFFFFFFFF : data.size());
    put32(archive, complete ? 0xFFFFFFFF : size);
    put16(archive, member.name.size());
    put16(archive, localExtra.size());
    append(archive, member.name);
    append(archive, localExtra);
    append(archive, data);

    Bytes centralExtra;
    if (complete) {
      put16(centralExtra, 1);
      put16(centralExtra, 24);
      put64(centralExtra, size);
      put64(centralExtra, data.size());
      put64(centralExtra, offset);
    }
    put32(directory, 0x02014b50);
    put16(directory, (3 << 8) | 20);
    put16(directory, complete ? 45 : 20);
    put16(directory, flags);
    put16(directory, method);
    put16(directory, 0);
    put16(directory, kDosDate);
    put32(directory, crc);
    put32(directory, complete ? 0xFFFFFFFF : data.size());
    put32(directory, complete ? 0xFFFFFFFF : size);
    put16(directory, member.name.size());
    put16(directory, centralExtra.size());
    put16(directory, 0);
    put16(directory, 0);
    put16(directory, 0);
    put32(directory, 0600u << 16);
    put32(directory, complete ? 0xFFFFFFFF : offset);
    append(directory, member.name);
    append(directory, centralExtra);
  }
  uint64_t directoryOffset = archive.size();
  append(archive, directory);
  if (complete) {
    uint64_t recordOffset = archive.size();
    put32(archive, 0x06064b50);
    put64(archive, 44);
    put16(archive, 45);
    put16(archive, 45);
    put32(archive, 0);
    put32(archive, 0);
    put64(archive, members.size());
    put64(archive, members.size());
    put64(archive, directory.size());
    put64(archive, directoryOffset);
    put32(archive, 0x07064b50);
    put32(archive, 0);
    put64(archive, recordOffset);
    put32(archive, 1);
  }
  put32(archive, 0x06054b50);
  put16(archive, 0);
  put16(archive, 0);
  put16(archive, complete ? 0xFFFF : members.size());
  put16(archive, complete ? 0xFFFF : members.size());
  put32(archive, complete ? 0xFFFFFFFF : directory.size());
  put32(archive, complete ? 0xFFFFFFFF : directoryOffset);
  put16(archive, 0);
  return archive;
}

/// Every test gets its own directory, so ctest may run them in parallel.
class TensorFilesTest : public ::testing::Test {
protected:
  void SetUp() override {
    const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) /
           ("zcc-tensor-files-" + std::string(info->test_suite_name()) + "-" +
            info->name() + "-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  std::string path(const std::string &name) const {
    return (dir_ / name).string();
  }

  Status readSafeTensorsBytes(const Bytes &file,
                              std::vector<HostTensor> &tensors,
                              Metadata *metadata = nullptr) {
    std::string file_path = path("file.safetensors");
    writeFile(file_path, file);
    return readSafeTensors(file_path, tensors, metadata);
  }
  Status readNpzBytes(const Bytes &file, std::vector<HostTensor> &tensors) {
    std::string file_path = path("file.npz");
    writeFile(file_path, file);
    return readNpz(file_path, tensors);
  }
  Status readNpyBytes(const Bytes &file, HostTensor &tensor) {
    std::string file_path = path("x.npy");
    writeFile(file_path, file);
    return readNpy(file_path, tensor);
  }

  fs::path dir_;
};

/// A checkpoint with every dtype, a scalar and an empty tensor.
std::vector<HostTensor> sampleTensors() {
  return {
      makeTensor("layer.weight", DType::F32, {2, 3},
                 bytesOf(std::vector<float>{1.5f, -2, 0, 3.25f, 1e-7f, -0.f})),
      makeTensor("labels", DType::I32, {4},
                 bytesOf(std::vector<int32_t>{7, -1, 0, 2147483647})),
      makeTensor("step", DType::I64, {},
                 bytesOf(std::vector<int64_t>{int64_t(1) << 40})),
      makeTensor("empty", DType::F32, {0, 5}, {}),
  };
}

//===----------------------------------------------------------------------===//
// safetensors
//===----------------------------------------------------------------------===//

using SafeTensorsTest = TensorFilesTest;

// Write then read gives back names, dtypes, shapes, bytes and metadata, in
// the written order.
TEST_F(SafeTensorsTest, RoundTripKeepsDataShapesAndMetadata) {
  std::vector<HostTensor> tensors = sampleTensors();
  Metadata metadata = {{"format", "pt"}, {"zcc.step", "12"}, {"a\"b", "c\nd"}};
  std::string file = path("model.safetensors");
  ASSERT_TRUE(writeSafeTensors(file, viewsOf(tensors), metadata).isOk());

  std::vector<HostTensor> read;
  Metadata readMetadata;
  Status status = readSafeTensors(file, read, &readMetadata);
  ASSERT_TRUE(status.isOk()) << status.toString();
  expectSameTensors(read, tensors);
  EXPECT_EQ(readMetadata, metadata);
  EXPECT_FALSE(fs::exists(file + ".tmp"));

  // Metadata is optional on both sides.
  std::vector<HostTensor> again;
  ASSERT_TRUE(readSafeTensors(file, again, nullptr).isOk());
  ASSERT_TRUE(writeSafeTensors(file, viewsOf(tensors), {}).isOk());
  ASSERT_TRUE(readSafeTensors(file, again, &readMetadata).isOk());
  EXPECT_TRUE(readMetadata.empty());
}

// The bytes follow the format exactly: u64 header length, the JSON in the
// given order, space padding to a multiple of 8, the data.
TEST_F(SafeTensorsTest, WritesTheDocumentedLayout) {
  std::vector<HostTensor> tensors = {
      makeTensor("w", DType::F32, {1}, bytesOf(std::vector<float>{1.0f})),
      makeTensor("b", DType::I64, {}, bytesOf(std::vector<int64_t>{-2}))};
  std::string file = path("layout.safetensors");
  ASSERT_TRUE(writeSafeTensors(file, viewsOf(tensors), {{"k", "v"}}).isOk());

  std::string header = "{\"__metadata__\":{\"k\":\"v\"},"
                       "\"w\":{\"dtype\":\"F32\",\"shape\":[1],"
                       "\"data_offsets\":[0,4]},"
                       "\"b\":{\"dtype\":\"I64\",\"shape\":[],"
                       "\"data_offsets\":[4,12]}}";
  header += std::string((8 - header.size() % 8) % 8, ' ');
  Bytes expected;
  put64(expected, header.size());
  append(expected, header);
  append(expected, Bytes{0x00, 0x00, 0x80, 0x3f});
  append(expected, Bytes{0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff});
  EXPECT_EQ(readFile(file), expected);
  EXPECT_EQ(header.size() % 8, 0u);
}

// Same input, same bytes; and reading then rewriting reproduces the file.
TEST_F(SafeTensorsTest, SameInputGivesIdenticalBytes) {
  std::vector<HostTensor> tensors = sampleTensors();
  Metadata metadata = {{"z", "1"}, {"a", "2"}};
  std::string first = path("first.safetensors");
  std::string second = path("second.safetensors");
  ASSERT_TRUE(writeSafeTensors(first, viewsOf(tensors), metadata).isOk());
  ASSERT_TRUE(writeSafeTensors(second, viewsOf(tensors), metadata).isOk());
  Bytes firstBytes = readFile(first);
  EXPECT_FALSE(firstBytes.empty());
  EXPECT_EQ(firstBytes, readFile(second));

  std::vector<HostTensor> read;
  Metadata readMetadata;
  ASSERT_TRUE(readSafeTensors(first, read, &readMetadata).isOk());
  std::string third = path("third.safetensors");
  ASSERT_TRUE(writeSafeTensors(third, viewsOf(read), readMetadata).isOk());
  EXPECT_EQ(readFile(third), firstBytes);
}

// A write that fails leaves the previous checkpoint in place.
TEST_F(SafeTensorsTest, FailedWriteKeepsPreviousFile) {
  std::vector<HostTensor> tensors = sampleTensors();
  std::string file = path("model.safetensors");
  ASSERT_TRUE(writeSafeTensors(file, viewsOf(tensors), {}).isOk());
  Bytes before = readFile(file);

  // The temporary file cannot be created: a directory holds its name.
  fs::create_directory(file + ".tmp");
  tensors[0].bytes[0] ^= 0xFF;
  Status status = writeSafeTensors(file, viewsOf(tensors), {});
  EXPECT_EQ(status.code(), StatusCode::IoError);
  EXPECT_TRUE(failsWith(status, ".tmp"));
  EXPECT_EQ(readFile(file), before);

  // A directory that does not exist.
  status =
      writeSafeTensors(path("missing/model.safetensors"), viewsOf(tensors), {});
  EXPECT_EQ(status.code(), StatusCode::IoError);
  EXPECT_TRUE(failsWith(status, "No such file or directory"));
}

// Bad tensors are refused before anything is written.
TEST_F(SafeTensorsTest, WriteRejectsBadTensors) {
  float value = 1;
  auto view = [&](std::string name, std::vector<int64_t> shape, size_t bytes,
                  const void *data) {
    return HostTensorView{std::move(name), DType::F32, std::move(shape), data,
                          bytes};
  };
  struct Case {
    std::vector<HostTensorView> tensors;
    Metadata metadata;
    std::string error;
  };
  std::vector<Case> cases = {
      {{view("w", {1}, 4, &value), view("w", {1}, 4, &value)},
       {},
       "tensor 'w' is given twice"},
      {{view("w", {2}, 4, &value)}, {}, "has 4 bytes but F32 [2] needs 8"},
      {{view("", {1}, 4, &value)}, {}, "empty name"},
      {{view("__metadata__", {1}, 4, &value)}, {}, "reserved"},
      {{view("w", {-1}, 0, &value)}, {}, "invalid shape [-1]"},
      {{view("w", {1}, 4, nullptr)}, {}, "has no data"},
      {{view("bad\xff", {1}, 4, &value)}, {}, "not valid UTF-8"},
      {{}, {{"k", "1"}, {"k", "2"}}, "metadata key 'k' is given twice"},
      {{}, {{"k", "\xc3"}}, "metadata value of 'k' is not valid UTF-8"},
  };
  std::string file = path("bad.safetensors");
  for (const Case &c : cases) {
    SCOPED_TRACE(c.error);
    Status status = writeSafeTensors(file, c.tensors, c.metadata);
    EXPECT_EQ(status.code(), StatusCode::InvalidArgument);
    EXPECT_TRUE(failsWith(status, c.error));
    EXPECT_FALSE(fs::exists(file));
    EXPECT_FALSE(fs::exists(file + ".tmp"));
  }
}

// Files from other writers: no metadata, keys in any order. Tensors come
// back in the order of their data.
TEST_F(SafeTensorsTest, ReadsHeadersFromOtherWriters) {
  std::string header =
      "  {\"b\": {\"data_offsets\": [4, 8], \"shape\": [1], \"dtype\": "
      "\"I32\"}, \"a\": {\"shape\": [], \"dtype\": \"F32\", \"data_offsets\": "
      "[0, 4]}}";
  Bytes data = bytesOf(std::vector<float>{2.0f});
  append(data, bytesOf(std::vector<int32_t>{9}));
  std::vector<HostTensor> read;
  Metadata metadata = {{"stale", "entry"}};
  Status status =
      readSafeTensorsBytes(safetensorsFile(header, data), read, &metadata);
  ASSERT_TRUE(status.isOk()) << status.toString();
  expectSameTensors(
      read,
      {makeTensor("a", DType::F32, {}, bytesOf(std::vector<float>{2.0f})),
       makeTensor("b", DType::I32, {1}, bytesOf(std::vector<int32_t>{9}))});
  EXPECT_TRUE(metadata.empty());
}

// Each malformed header is refused with a message naming the problem.
TEST_F(SafeTensorsTest, ReadRejectsMalformedHeaders) {
  const std::string w4 =
      "\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}";
  struct Case {
    std::string header;
    size_t dataBytes;
    std::string error;
  };
  std::vector<Case> cases = {
      {"{\"w\":{\"dtype\":\"F32\",}}", 0,
       "header is not valid JSON: parse error"},
      {"", 0, "header is not valid JSON"},
      {"[1, 2]", 0, "header is not a JSON object"},
      {"{\"w\":{\"dtype\":\"BF16\",\"shape\":[1],\"data_offsets\":[0,2]}}", 2,
       "unsupported dtype 'BF16' for tensor 'w'"},
      {"{\"w\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8,
       "unsupported dtype 'F64' for tensor 'w'"},
      {"{\"w\":{\"dtype\":\"Q7\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
       "unknown dtype 'Q7' for tensor 'w'"},
      {"{\"w\":{\"dtype\":7,\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
       "tensor 'w': 'dtype' is not a string"},
      {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4,
       "tensor 'w': data_offsets [0, 4] hold 4 bytes but F32 [2] needs 8"},
      {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}}", 4,
       "end before they begin"},
      {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
       "\"v\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[2,6]}}",
       6, "tensor 'v': data_offsets [2, 6] overlap those of tensor 'w'"},
      {"{" + w4 + "}", 2,
       "tensor 'w': data_offsets [0, 4] run past the end "
       "of the data (2 bytes)"},
      {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8,
       "data bytes [0, 4) belong to no tensor"},
      {"{" + w4 + "}", 6, "data bytes [4, 6) after the last tensor"},
      {"{" + w4 + "," + w4 + "}", 4, "'w' appears twice in the header"},
      {"{\"w\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],"
       "\"data_offsets\":[0,4]}}",
       4, "key 'dtype' appears twice in the entry of 'w'"},
      {"{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", 0,
       "metadata key 'k' appears twice"},
      {"{\"__metadata__\":{\"k\":1}}", 0,
       "metadata value of 'k' is not a string"},
      {"{\"__metadata__\":[]}", 0, "'__metadata__' is not a JSON object"},
      {"{\"w\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,0]}}", 0,
       "'shape' -1 holds something other than a non-negative integer"},
      {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", 4,
       "'shape' 1.5 holds something other than a non-negative integer"},
      {"{\"w\":{\"dtype\":\"F32\",\"shape\":3,\"data_offsets\":[0,4]}}", 4,
       "'shape' is not an array"},
      {"{\"w\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904,4],"
       "\"data_offsets\":[0,4]}}",
       4, "is too large"},
      {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 4,
       "'data_offsets' [0] is not a pair of non-negative integers"},
      {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4,
       "tensor 'w': missing field 'data_offsets'"},
      {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],"
       "\"extra\":1}}",
       4, "tensor 'w': unknown field 'extra'"},
      {"{\"w\":[]}", 0, "tensor 'w': its header entry is not a JSON object"},
      {"{\"\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
       "a tensor has an empty name"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.header);
    std::vector<HostTensor> read = {makeTensor("kept", DType::F32, {}, {})};
    Status status = readSafeTensorsBytes(
        safetensorsFile(c.header, Bytes(c.dataBytes, 0)), read);
    EXPECT_TRUE(failsWith(status, c.error));
    EXPECT_TRUE(failsWith(status, "file.safetensors"));
    // On error the output is untouched.
    ASSERT_EQ(read.size(), 1u);
    EXPECT_EQ(read[0].name, "kept");
  }
}

// Errors before the JSON: the file's length and the header length.
TEST_F(SafeTensorsTest, ReadRejectsBadLengths) {
  std::vector<HostTensor> read;
  EXPECT_TRUE(failsWith(readSafeTensorsBytes(Bytes{1, 2, 3}, read),
                        "file too short (3 bytes)"));
  Bytes pastEnd;
  put64(pastEnd, 100);
  append(pastEnd, std::string("{}"));
  EXPECT_TRUE(failsWith(readSafeTensorsBytes(pastEnd, read),
                        "header length 100 runs past the end of the file "
                        "(10 bytes)"));
  Bytes huge;
  put64(huge, ~uint64_t(0));
  EXPECT_TRUE(failsWith(readSafeTensorsBytes(huge, read), "runs past the end"));

  Status missing = readSafeTensors(path("missing.safetensors"), read, nullptr);
  EXPECT_EQ(missing.code(), StatusCode::IoError);
  EXPECT_TRUE(failsWith(missing, "cannot open"));
  EXPECT_TRUE(failsWith(readSafeTensors(dir_.string(), read, nullptr),
                        "is not a regular file"));
  // A FIFO is refused without opening it (which would block).
  std::string fifo = path("fifo.safetensors");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_TRUE(
      failsWith(readSafeTensors(fifo, read, nullptr), "is not a regular file"));
}

// No prefix of a valid file is a valid file.
TEST_F(SafeTensorsTest, EveryTruncationIsAnError) {
  std::vector<HostTensor> tensors = sampleTensors();
  std::string file = path("model.safetensors");
  ASSERT_TRUE(writeSafeTensors(file, viewsOf(tensors), {{"k", "v"}}).isOk());
  Bytes bytes = readFile(file);
  for (size_t length = 0; length < bytes.size(); ++length) {
    SCOPED_TRACE("length " + std::to_string(length));
    std::vector<HostTensor> read;
    Status status = readSafeTensorsBytes(
        Bytes(bytes.begin(), bytes.begin() + length), read);
    EXPECT_FALSE(status.isOk());
    EXPECT_TRUE(read.empty());
  }
}

// Flipping any byte gives an error or a file that reads (safetensors has no
// checksum, so a data byte may flip unnoticed), never a crash; a header
// flip that still reads must describe the same tensors' layout.
TEST_F(SafeTensorsTest, ByteFlipsNeverCrash) {
  std::vector<HostTensor> tensors = sampleTensors();
  std::string file = path("model.safetensors");
  ASSERT_TRUE(writeSafeTensors(file, viewsOf(tensors), {{"k", "v"}}).isOk());
  Bytes bytes = readFile(file);
  size_t errors = 0;
  for (size_t i = 0; i < bytes.size(); ++i)
    for (uint8_t mask : {0x01, 0x20, 0xFF}) {
      Bytes flipped = bytes;
      flipped[i] ^= mask;
      std::vector<HostTensor> read;
      Status status = readSafeTensorsBytes(flipped, read);
      if (!status.isOk()) {
        EXPECT_FALSE(status.message().empty());
        ++errors;
        continue;
      }
      size_t total = 0;
      for (const HostTensor &tensor : read)
        total += tensor.bytes.size();
      EXPECT_LE(total, bytes.size());
    }
  EXPECT_GT(errors, 0u);
}

//===----------------------------------------------------------------------===//
// .npy
//===----------------------------------------------------------------------===//

using NpyTest = TensorFilesTest;

const std::vector<float> kSixFloats = {0.5f, 1, -2, 3e10f, -0.f, 7};

// Version 1.0: a 2-byte header length.
TEST_F(NpyTest, ReadsVersion1Header) {
  HostTensor tensor;
  Status status =
      readNpyBytes(npyFile("<f4", "(2, 3)", bytesOf(kSixFloats)), tensor);
  ASSERT_TRUE(status.isOk()) << status.toString();
  EXPECT_EQ(tensor.name, "x");
  EXPECT_EQ(tensor.dtype, DType::F32);
  EXPECT_EQ(tensor.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(tensor.bytes, bytesOf(kSixFloats));
}

// Versions 2.0 and 3.0: a 4-byte header length.
TEST_F(NpyTest, ReadsVersion2And3Headers) {
  for (int major : {2, 3}) {
    SCOPED_TRACE(major);
    HostTensor tensor;
    Bytes data = bytesOf(std::vector<int64_t>{-1, 1LL << 50, 3});
    Status status = readNpyBytes(npyFile("<i8", "(3,)", data, major), tensor);
    ASSERT_TRUE(status.isOk()) << status.toString();
    EXPECT_EQ(tensor.dtype, DType::I64);
    EXPECT_EQ(tensor.shape, (std::vector<int64_t>{3}));
    EXPECT_EQ(tensor.bytes, data);
  }
}

// np.save("x.npy", np.arange(6, dtype=np.float32).reshape(2, 3)), byte for
// byte: numpy pads "magic + length + dict" with spaces and a newline to 64
// bytes (the header length is 118 whether or not numpy adds its spare
// growth-axis spaces), then writes the data little-endian.
TEST_F(NpyTest, ReadsFixtureWrittenByNumpy) {
  static const char kHeader[] =
      "\x93NUMPY\x01\x00\x76\x00"
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
      "                                                          \n";
  static const uint8_t kData[] = {
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0x40,
      0x00, 0x00, 0x40, 0x40, 0x00, 0x00, 0x80, 0x40, 0x00, 0x00, 0xa0, 0x40};
  Bytes file(kHeader, kHeader + sizeof(kHeader) - 1);
  ASSERT_EQ(file.size(), 128u);
  file.insert(file.end(), std::begin(kData), std::end(kData));

  HostTensor tensor;
  Status status = readNpyBytes(file, tensor);
  ASSERT_TRUE(status.isOk()) << status.toString();
  EXPECT_EQ(tensor.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(tensor.bytes, bytesOf(std::vector<float>{0, 1, 2, 3, 4, 5}));
  // The test's own writer produces the same bytes.
  EXPECT_EQ(
      npyFile("<f4", "(2, 3)", bytesOf(std::vector<float>{0, 1, 2, 3, 4, 5})),
      file);
}

// Scalars, int32, empty arrays, and header spellings numpy has used.
TEST_F(NpyTest, ReadsScalarsAndHeaderVariants) {
  HostTensor tensor;
  Bytes scalar = bytesOf(std::vector<int32_t>{-5});
  ASSERT_TRUE(readNpyBytes(npyFile("<i4", "()", scalar), tensor).isOk());
  EXPECT_EQ(tensor.dtype, DType::I32);
  EXPECT_TRUE(tensor.shape.empty());
  EXPECT_EQ(tensor.bytes, scalar);

  ASSERT_TRUE(readNpyBytes(npyFile("<f4", "(0, 4)", {}), tensor).isOk());
  EXPECT_EQ(tensor.shape, (std::vector<int64_t>{0, 4}));
  EXPECT_TRUE(tensor.bytes.empty());

  // Keys in another order, double quotes, Python 2 longs, no trailing comma.
  Status status =
      readNpyBytes(npyRaw(1, 0,
                          "{\"shape\": (1L, 2L), 'fortran_order': False, "
                          "'descr': \"<i4\"}\n",
                          bytesOf(std::vector<int32_t>{1, 2})),
                   tensor);
  ASSERT_TRUE(status.isOk()) << status.toString();
  EXPECT_EQ(tensor.shape, (std::vector<int64_t>{1, 2}));
}

// Arrays zcc does not read, and broken files, are refused by name.
TEST_F(NpyTest, RejectsUnsupportedAndBrokenArrays) {
  Bytes eight(8, 0);
  struct Case {
    Bytes file;
    std::string error;
  };
  std::vector<Case> cases = {
      {npyFile("<f8", "(1,)", eight),
       "x.npy: unsupported dtype '<f8': zcc data files hold float32, int32 "
       "or int64 (convert with astype)"},
      {npyFile(">f4", "(2,)", eight), "unsupported dtype '>f4'"},
      {npyFile("|b1", "(8,)", eight), "unsupported dtype '|b1'"},
      {npyFile("<f4", "(2,)", eight, 1, /*fortran=*/true), "Fortran order"},
      {npyRaw(1, 0,
              "{'descr': [('a', '<f4')], 'fortran_order': False, "
              "'shape': (2,), }",
              eight),
       "structured dtype is not supported"},
      {npyFile("<f4", "(3,)", eight), "array data holds 8 bytes but <f4 (3,) "
                                      "needs 12 (truncated)"},
      {npyFile("<f4", "(1,)", eight), "needs 4 (trailing bytes)"},
      {npyFile("<f4", "(-2,)", eight), "'shape' holds something other than a "
                                       "non-negative integer"},
      {npyFile("<f4", "[2]", eight), "'shape' is not a tuple"},
      {npyFile("<f4", "(2)", eight), "'shape' is not a tuple"},
      {npyFile("<f4", "(99999999999999999999,)", eight), "integer too large"},
      {npyFile("<f4", "(4611686018427387904, 2)", eight), "is too large"},
      {npyRaw(1, 0, "{'descr': '<f4', 'shape': (2,)}", eight),
       ".npy header lacks 'fortran_order'"},
      {npyRaw(1, 0,
              "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), "
              "'x': 1}",
              eight),
       "unexpected key 'x'"},
      {npyRaw(1, 0,
              "{'descr': '<f4', 'descr': '<f4', 'fortran_order': 0, "
              "'shape': (2,)}",
              eight),
       "gives 'descr' twice"},
      {npyRaw(1, 0, "{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}",
              eight),
       "'fortran_order' is not True or False"},
      {npyRaw(1, 0, "{'descr': 4, 'fortran_order': False, 'shape': (2,)}",
              eight),
       "'descr' is not a dtype string"},
      {npyRaw(1, 0, "{'descr': '<f4' 'fortran_order': False}", eight),
       "not a Python dict literal: expected ',' or '}' at byte 16"},
      {npyRaw(1, 0, "{'descr': '<f4", eight), "unterminated string"},
      {npyRaw(1, 0, "{'shape': " + std::string(200, '(') + "}", eight),
       "nested too deeply"},
      {npyRaw(1, 0, "{} trailing", eight), "unexpected text after"},
      {npyRaw(4, 0, "{}", eight), ".npy format version 4.0 is not supported"},
      {npyRaw(1, 1, "{}", eight), ".npy format version 1.1 is not supported"},
      {bytesOf(std::string("\x93NUMPZ\x01\x00\x00\x00", 10)),
       "not a .npy array"},
      {bytesOf(std::string("\x93NUM")), "too short for a .npy header"},
  };
  Bytes pastEnd = npyFile("<f4", "(2,)", eight);
  pastEnd[8] = pastEnd[9] = 0xFF;
  cases.push_back({pastEnd, ".npy header length 65535 runs past the end"});
  Bytes v2Short = npyRaw(2, 0, "", {});
  v2Short.resize(11);
  cases.push_back({v2Short, "too short for a .npy 2.0 header (11 bytes)"});

  for (const Case &c : cases) {
    SCOPED_TRACE(c.error);
    HostTensor tensor = makeTensor("kept", DType::F32, {}, {});
    EXPECT_TRUE(failsWith(readNpyBytes(c.file, tensor), c.error));
    EXPECT_EQ(tensor.name, "kept");
  }
  HostTensor tensor;
  Status missing = readNpy(path("missing.npy"), tensor);
  EXPECT_EQ(missing.code(), StatusCode::IoError);
}

//===----------------------------------------------------------------------===//
// .npz
//===----------------------------------------------------------------------===//

using NpzTest = TensorFilesTest;

/// Members of a typical dataset file.
std::vector<ZipMemberSpec> sampleMembers(bool deflate) {
  std::vector<float> images(4 * 8);
  for (size_t i = 0; i < images.size(); ++i)
    images[i] = float(i % 7) * 0.25f;
  return {
      {"images.npy", npyFile("<f4", "(4, 8)", bytesOf(images)), deflate},
      {"labels.npy",
       npyFile("<i4", "(4,)", bytesOf(std::vector<int32_t>{3, 1, 4, 1})),
       deflate},
      {"ids.npy", npyFile("<i8", "(2,)", bytesOf(std::vector<int64_t>{9, -9})),
       deflate},
  };
}

std::vector<HostTensor> sampleMemberTensors() {
  std::vector<float> images(4 * 8);
  for (size_t i = 0; i < images.size(); ++i)
    images[i] = float(i % 7) * 0.25f;
  return {
      makeTensor("images", DType::F32, {4, 8}, bytesOf(images)),
      makeTensor("labels", DType::I32, {4},
                 bytesOf(std::vector<int32_t>{3, 1, 4, 1})),
      makeTensor("ids", DType::I64, {2}, bytesOf(std::vector<int64_t>{9, -9})),
  };
}

// np.savez: stored members, in the archive's order.
TEST_F(NpzTest, ReadsStoredMembers) {
  for (Zip64 zip64 : {Zip64::None, Zip64::Numpy}) {
    std::vector<HostTensor> read;
    Status status = readNpzBytes(zipArchive(sampleMembers(false), zip64), read);
    ASSERT_TRUE(status.isOk()) << status.toString();
    expectSameTensors(read, sampleMemberTensors());
  }
}

// np.savez_compressed: deflated members.
TEST_F(NpzTest, ReadsDeflatedMembers) {
  std::vector<ZipMemberSpec> members = sampleMembers(true);
  Bytes archive = zipArchive(members);
  // The data did compress, so the inflate path really ran.
  EXPECT_LT(archive.size(), zipArchive(sampleMembers(false)).size());
  std::vector<HostTensor> read;
  Status status = readNpzBytes(archive, read);
  ASSERT_TRUE(status.isOk()) << status.toString();
  expectSameTensors(read, sampleMemberTensors());
}

// Sizes and offsets moved into zip64 fields, as for arrays over 4 GiB.
TEST_F(NpzTest, ReadsZip64Archive) {
  std::vector<ZipMemberSpec> members = sampleMembers(false);
  members[1].deflate = true;
  std::vector<HostTensor> read;
  Status status = readNpzBytes(zipArchive(members, Zip64::Complete), read);
  ASSERT_TRUE(status.isOk()) << status.toString();
  expectSameTensors(read, sampleMemberTensors());
}

// np.savez() with no arrays; an archive comment.
TEST_F(NpzTest, ReadsEmptyArchiveAndComment) {
  std::vector<HostTensor> read = sampleMemberTensors();
  ASSERT_TRUE(readNpzBytes(zipArchive({}), read).isOk());
  EXPECT_TRUE(read.empty());

  Bytes commented = zipArchive(sampleMembers(true));
  commented[commented.size() - 2] = 5;
  append(commented, std::string("hello"));
  ASSERT_TRUE(readNpzBytes(commented, read).isOk());
  expectSameTensors(read, sampleMemberTensors());
}

// A corrupted byte in a member's data is caught by its CRC-32.
TEST_F(NpzTest, RejectsCrcMismatch) {
  std::vector<ZipMemberSpec> members = sampleMembers(false);
  Bytes archive = zipArchive(members);
  // Flip a byte of the images' data (after its 128-byte .npy header).
  size_t dataStart = 30 + members[0].name.size() + 20;
  archive[dataStart + 128 + 5] ^= 0x10;
  std::vector<HostTensor> read;
  EXPECT_TRUE(failsWith(readNpzBytes(archive, read),
                        "member 'images.npy': CRC-32 mismatch"));

  members[2].crc = 0x12345678;
  EXPECT_TRUE(failsWith(readNpzBytes(zipArchive(members), read),
                        "member 'ids.npy': CRC-32 mismatch (recorded "
                        "0x12345678"));
  members[2].deflate = true;
  EXPECT_TRUE(
      failsWith(readNpzBytes(zipArchive(members), read), "CRC-32 mismatch"));
}

// What numpy cannot have written, or zcc does not read, is refused by name.
TEST_F(NpzTest, RejectsUnsupportedArchives) {
  Bytes eight(8, 0);
  struct Case {
    std::vector<ZipMemberSpec> members;
    std::string error;
  };
  std::vector<Case> cases = {
      {{{"x.npy", npyFile("<f8", "(1,)", eight)}},
       "file.npz: unsupported dtype '<f8' in member 'x': zcc data files hold "
       "float32, int32 or int64 (convert with astype)"},
      {{{"x.npy", npyFile("<f4", "(2,)", eight, 1, true), true}},
       "member 'x': the array is stored in Fortran order"},
      {{{"x.npy", npyFile("<f4", "(3,)", eight)}},
       "member 'x': array data holds 8 bytes"},
      {{withMethod({"x.npy", npyFile("<f4", "(2,)", eight)}, 12)},
       "member 'x.npy' uses compression method 12 (bzip2)"},
      {{withFlags({"x.npy", npyFile("<f4", "(2,)", eight)}, 1)},
       "member 'x.npy' is encrypted"},
      {{{"notes.txt", eight}}, "member 'notes.txt' is not a named .npy array"},
      {{{".npy", npyFile("<f4", "(2,)", eight)}},
       "member '.npy' is not a named .npy array"},
      {{{"x.npy", npyFile("<f4", "(2,)", eight)},
        {"x.npy", npyFile("<f4", "(2,)", eight)}},
       "two members have the same name"},
      {{{"x.npy", Bytes(16, 0)}}, "member 'x': not a .npy array"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.error);
    std::vector<HostTensor> read = {makeTensor("kept", DType::F32, {}, {})};
    EXPECT_TRUE(failsWith(readNpzBytes(zipArchive(c.members), read), c.error));
    ASSERT_EQ(read.size(), 1u);
    EXPECT_EQ(read[0].name, "kept");
  }
}

// Declared sizes that disagree with the data.
TEST_F(NpzTest, RejectsWrongDeclaredSizes) {
  Bytes contents =
      npyFile("<i4", "(4,)", bytesOf(std::vector<int32_t>{1, 2, 3, 4}));
  std::vector<HostTensor> read;
  ZipMemberSpec stored{"x.npy", contents};
  stored.declaredSize = contents.size() + 1;
  EXPECT_TRUE(failsWith(readNpzBytes(zipArchive({stored}), read),
                        "stored with 144 bytes but declares 145"));

  ZipMemberSpec deflated{"x.npy", contents, true};
  deflated.declaredSize = contents.size() - 1;
  EXPECT_TRUE(failsWith(readNpzBytes(zipArchive({deflated}), read),
                        "inflates to more than the declared 143 bytes"));
  deflated.declaredSize = contents.size() + 1;
  EXPECT_TRUE(failsWith(readNpzBytes(zipArchive({deflated}), read),
                        "inflates to 144 bytes, not the declared 145"));
  deflated.declaredSize = uint64_t(1) << 40;
  EXPECT_TRUE(
      failsWith(readNpzBytes(zipArchive({deflated}, Zip64::Complete), read),
                "more than deflate can produce"));
}

// Files that are not zip archives at all.
TEST_F(NpzTest, RejectsFilesThatAreNotArchives) {
  std::vector<HostTensor> read;
  EXPECT_TRUE(failsWith(
      readNpzBytes(npyFile("<f4", "(2,)", Bytes(8, 0)), read),
      "this is a .npy array, not a .npz archive (read it with readNpy)"));
  EXPECT_TRUE(failsWith(readNpzBytes(bytesOf(std::string("hello")), read),
                        "no zip end-of-central-directory record"));
  EXPECT_TRUE(failsWith(readNpzBytes({}, read),
                        "no zip end-of-central-directory record"));
  Status missing = readNpz(path("missing.npz"), read);
  EXPECT_EQ(missing.code(), StatusCode::IoError);
  EXPECT_TRUE(failsWith(missing, "missing.npz"));
  std::string fifo = path("fifo.npz");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_TRUE(failsWith(readNpz(fifo, read), "is not a regular file"));
  HostTensor tensor;
  EXPECT_TRUE(failsWith(readNpy(fifo, tensor), "is not a regular file"));
}

// Garbage where deflate data should be fails cleanly and quickly.
TEST_F(NpzTest, GarbageDeflateDataFailsCleanly) {
  std::mt19937 random(1234);
  for (int trial = 0; trial < 200; ++trial) {
    Bytes garbage(1 + random() % 300);
    for (uint8_t &byte : garbage)
      byte = static_cast<uint8_t>(random());
    ZipMemberSpec member = withMethod({"x.npy", garbage}, 8);
    member.declaredSize = 100 + random() % 1000;
    std::vector<HostTensor> read;
    EXPECT_FALSE(readNpzBytes(zipArchive({member}), read).isOk());
  }
}

// No prefix of a valid archive reads, in any of its layouts.
TEST_F(NpzTest, EveryTruncationIsAnError) {
  for (bool deflate : {false, true})
    for (Zip64 zip64 : {Zip64::None, Zip64::Numpy, Zip64::Complete}) {
      Bytes archive = zipArchive(sampleMembers(deflate), zip64);
      for (size_t length = 0; length < archive.size(); ++length) {
        SCOPED_TRACE("length " + std::to_string(length));
        std::vector<HostTensor> read;
        Status status = readNpzBytes(
            Bytes(archive.begin(), archive.begin() + length), read);
        EXPECT_FALSE(status.isOk());
        EXPECT_TRUE(read.empty());
      }
    }
}

// Flipping any byte gives an error or, where the byte does not matter (a
// timestamp, "version made by"), the same arrays: never a crash, never
// silently different data.
TEST_F(NpzTest, ByteFlipsAreDetectedOrHarmless) {
  std::vector<HostTensor> expected = sampleMemberTensors();
  for (bool deflate : {false, true})
    for (Zip64 zip64 : {Zip64::Numpy, Zip64::Complete}) {
      Bytes archive = zipArchive(sampleMembers(deflate), zip64);
      size_t errors = 0;
      for (size_t i = 0; i < archive.size(); ++i)
        for (uint8_t mask : {0x01, 0x80, 0xFF}) {
          SCOPED_TRACE("byte " + std::to_string(i) + " ^ " +
                       std::to_string(mask));
          Bytes flipped = archive;
          flipped[i] ^= mask;
          std::vector<HostTensor> read;
          Status status = readNpzBytes(flipped, read);
          if (status.isOk())
            expectSameTensors(read, expected);
          else
            ++errors;
        }
      EXPECT_GT(errors, archive.size());
    }
}

// Reading a .npz member's array and the same bytes as a .npy agree.
TEST_F(NpzTest, MembersMatchStandaloneNpy) {
  std::vector<ZipMemberSpec> members = sampleMembers(true);
  std::vector<HostTensor> read;
  ASSERT_TRUE(readNpzBytes(zipArchive(members), read).isOk());
  for (size_t i = 0; i < members.size(); ++i) {
    HostTensor tensor;
    ASSERT_TRUE(readNpyBytes(members[i].contents, tensor).isOk());
    EXPECT_EQ(tensor.shape, read[i].shape);
    EXPECT_EQ(tensor.bytes, read[i].bytes);
  }
}

} // namespace
