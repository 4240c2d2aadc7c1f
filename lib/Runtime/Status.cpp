//===- Status.cpp ---------------------------------------------------------===//

#include "zcc/Runtime/Status.h"

using namespace zcc::runtime;

const char *zcc::runtime::statusCodeName(StatusCode code) {
  switch (code) {
  case StatusCode::Ok:
    return "ok";
  case StatusCode::InvalidArgument:
    return "invalid argument";
  case StatusCode::InvalidPlan:
    return "invalid plan";
  case StatusCode::Unsupported:
    return "unsupported";
  case StatusCode::OutOfMemory:
    return "out of memory";
  case StatusCode::IoError:
    return "I/O error";
  case StatusCode::ExecutionError:
    return "execution error";
  }
  return "unknown error";
}

std::string Status::toString() const {
  if (isOk())
    return "ok";
  return std::string(statusCodeName(code_)) + ": " + message_;
}
