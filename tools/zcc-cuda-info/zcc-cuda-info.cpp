//===- zcc-cuda-info.cpp - report the CUDA devices zcc can use ------------===//
//
// Exit 0: at least one device, and (with --smoke) a kernel ran correctly on
// each. Exit 77 (the skip code ctest and the test scripts use): no usable
// device, with the reason. Exit 1: a device exists but the smoke kernel failed.
//
//===----------------------------------------------------------------------===//

#include "zcc/Runtime/Executors/CUDA/DeviceInfo.h"

#include <CLI/CLI.hpp>

#include <cstdio>

int main(int argc, char **argv) {
  bool smoke = false;
  bool quiet = false;
  CLI::App app("zcc-cuda-info: the CUDA devices zcc can use");
  app.add_flag("--smoke", smoke, "run a check kernel on every device");
  app.add_flag("--quiet", quiet, "print nothing; the exit code tells");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e) == 0 ? 0 : 2;
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
