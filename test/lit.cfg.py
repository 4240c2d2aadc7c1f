# lit configuration for the zcc compiler tests (FileCheck suites mirroring lib/).
import os

import lit.formats

config.name = "zcc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.zcc_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "unit", "python", "Inputs"]

# Project tools first, then FileCheck/not/count from LLVM 19.
config.environment["PATH"] = os.pathsep.join(
    [config.zcc_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])]
)
config.substitutions.append(("%examples", os.path.join(config.zcc_src_root, "examples")))
