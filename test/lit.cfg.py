# lit configuration for the zcc compiler tests (FileCheck suites mirroring lib/).
import os
import sys

import lit.formats

config.name = "zcc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.zcc_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "unit", "python", "Inputs", "fuzz", "expect_exit.py", "check_op_coverage.py", "check_zplan.py"]

# Project tools first, then FileCheck/not/count from LLVM 19.
config.environment["PATH"] = os.pathsep.join(
    [config.zcc_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])]
)
config.substitutions.append(("%python", sys.executable))
# The zcc package's interpreter, importing the package built here.
if config.zcc_python:
    config.available_features.add("zcc-python")
    config.substitutions.append(
        ("%zcc-python", "env PYTHONPATH={} {}".format(
            os.path.join(config.zcc_obj_root, "python"), config.zcc_python)))
config.substitutions.append(("%examples", os.path.join(config.zcc_src_root, "examples")))
config.substitutions.append(
    ("%expect-exit", "%s %s" % (sys.executable, os.path.join(config.test_source_root, "tools", "expect_exit.py")))
)

# Data-parallel tests (`REQUIRES: mpi`) run zrun under mpirun: zrun built
# with MPI (scripts/install-deps.sh installs Open MPI, so CI has it). The
# drivers they run are test/tools/distributed/*.py.
import shutil

if getattr(config, "zcc_mpi", False) and shutil.which("mpirun"):
    config.available_features.add("mpi")
    # Two ranks on a two-core CI machine, which may run the tests as root.
    for name in ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM",
                 "OMPI_MCA_rmaps_base_oversubscribe"):
        config.environment[name] = "1"

# Tests that need a GPU say `REQUIRES: cuda`; the feature is set only when
# zcc-cuda-info finds a device a kernel runs on, so elsewhere they are reported
# UNSUPPORTED (skipped), never passed.
import subprocess

_cuda_info = os.path.join(config.zcc_tools_dir, "zcc-cuda-info")
if os.path.exists(_cuda_info):
    try:
        if subprocess.run([_cuda_info, "--smoke", "--quiet"], timeout=120).returncode == 0:
            config.available_features.add("cuda")
    except (OSError, subprocess.TimeoutExpired):
        pass
