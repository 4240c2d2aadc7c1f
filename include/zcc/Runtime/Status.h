//===- Status.h - runtime errors as values ----------------------*- C++ -*-===//
//
// Every runtime call that can fail returns a Status naming what went wrong
// and where (the tensor, launch or byte offset), never throws and never aborts:
// a corrupt plan or a bad label must reach the user as a message.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_RUNTIME_STATUS_H
#define ZCC_RUNTIME_STATUS_H

#include <sstream>
#include <string>
#include <utility>

namespace zcc::runtime {

enum class StatusCode {
  Ok = 0,
  InvalidArgument, // a bad call: unknown name, wrong size, bad option
  InvalidPlan,     // the plan file is corrupt, truncated or inconsistent
  Unsupported,     // a valid plan this runtime cannot run (version, dtype)
  OutOfMemory,     // a region could not be allocated
  IoError,         // a file could not be read or written
  ExecutionError,  // a kernel found bad data (an index out of range)
};

const char *statusCodeName(StatusCode code);

class [[nodiscard]] Status {
public:
  Status() = default;
  Status(StatusCode code, std::string message)
      : code_(code), message_(std::move(message)) {}
  static Status ok() { return Status(); }

  bool isOk() const { return code_ == StatusCode::Ok; }
  explicit operator bool() const { return isOk(); }
  StatusCode code() const { return code_; }
  const std::string &message() const { return message_; }
  /// "invalid plan: <message>".
  std::string toString() const;

private:
  StatusCode code_ = StatusCode::Ok;
  std::string message_;
};

/// Builds a Status message from streamed parts:
///   return makeError(StatusCode::InvalidPlan, "tensor '", name, "' ...");
template <typename... Parts>
Status makeError(StatusCode code, const Parts &...parts) {
  std::ostringstream os;
  (os << ... << parts);
  return Status(code, os.str());
}

} // namespace zcc::runtime

#define ZRT_RETURN_IF_ERROR(expr)                                              \
  do {                                                                         \
    ::zcc::runtime::Status zrtStatus_ = (expr);                                \
    if (!zrtStatus_.isOk())                                                    \
      return zrtStatus_;                                                       \
  } while (0)

#endif // ZCC_RUNTIME_STATUS_H
