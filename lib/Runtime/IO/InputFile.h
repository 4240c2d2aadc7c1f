//===- InputFile.h - a regular file read at checked offsets -----*- C++ -*-===//
//
// The tensor-file readers' one way in: refuses anything but a regular file
// (opening a FIFO would block), and every read is checked against the size,
// so a corrupt length in a file is an error, never a read past its end.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_LIB_RUNTIME_IO_INPUTFILE_H
#define ZCC_LIB_RUNTIME_IO_INPUTFILE_H

#include "zcc/Runtime/Status.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <sys/stat.h>

namespace zcc::runtime {

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

} // namespace zcc::runtime

#endif // ZCC_LIB_RUNTIME_IO_INPUTFILE_H
