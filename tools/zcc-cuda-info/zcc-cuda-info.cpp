//===- zcc-cuda-info.cpp - report the CUDA devices zcc can use ------------===//
//
// Exit 0: at least one device, and (with --smoke) a kernel ran correctly on
// each. Exit 77 (the skip code ctest and the test scripts use): no usable
// device, with the reason. Exit 1: a device exists but the smoke kernel failed.
//
//===----------------------------------------------------------------------===//

#include "zcc/Runtime/Executors/CUDA/DeviceInfo.h"

#include <cstdio>
#include <cstring>

int main(int argc, char **argv) {
  bool smoke = false;
  bool quiet = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--smoke") == 0) {
      smoke = true;
    } else if (std::strcmp(argv[i], "--quiet") == 0) {
      quiet = true;
    } else {
      std::fprintf(stderr, "usage: zcc-cuda-info [--smoke] [--quiet]\n"
                           "  --smoke  run a check kernel on every device\n"
                           "  --quiet  print nothing; the exit code tells\n");
      return 2;
    }
  }
  using namespace zcc::runtime::cuda;
  DeviceQuery query = queryDevices();
  if (query.devices.empty()) {
    if (!quiet)
      std::printf("no usable CUDA device: %s\n", query.error.c_str());
    return 77;
  }
  int failures = 0;
  for (const DeviceInfo &device : query.devices) {
    if (!quiet)
      std::printf("device %d: %s, sm_%d%d, %d SMs, %.1f GiB total, %.1f GiB "
                  "free\n",
                  device.ordinal, device.name.c_str(), device.computeMajor,
                  device.computeMinor, device.multiprocessors,
                  device.totalBytes / 1073741824.0,
                  device.freeBytes / 1073741824.0);
    if (!smoke)
      continue;
    std::string error = runSmokeKernel(device.ordinal);
    if (!error.empty()) {
      ++failures;
      if (!quiet)
        std::printf("device %d: smoke kernel FAILED: %s\n", device.ordinal,
                    error.c_str());
    } else if (!quiet) {
      std::printf("device %d: smoke kernel ok\n", device.ordinal);
    }
  }
  return failures == 0 ? 0 : 1;
}
