# Helpers for targets that use MLIR. MLIR/LLVM include paths and definitions are
# attached to these targets only, so runtime, planner and CUDA targets never see them.

set(ZCC_GENERATED_INCLUDE_DIR ${ZCC_BINARY_DIR}/include)

function(zcc_use_mlir target)
  target_include_directories(${target} SYSTEM PRIVATE ${LLVM_INCLUDE_DIRS} ${MLIR_INCLUDE_DIRS})
  target_include_directories(${target} PRIVATE ${ZCC_SOURCE_DIR}/include ${ZCC_GENERATED_INCLUDE_DIR})
  separate_arguments(_zcc_llvm_defs NATIVE_COMMAND "${LLVM_DEFINITIONS}")
  target_compile_options(${target} PRIVATE ${_zcc_llvm_defs})
  # Fuzzing (-DZCC_FUZZ=ON): LLVM's allocators poison their slabs when the
  # code including them is built with ASan, which the uninstrumented
  # libMLIR does not expect (a false use-after-poison): compiler code keeps
  # the fuzzer's coverage and UBSan, not ASan. It is optimized whatever the
  # build's level: at -O0 the pipeline runs 6 inputs a second, not 500.
  if(ZCC_FUZZ)
    target_compile_options(${target} PRIVATE -fno-sanitize=address -O1)
  endif()
endfunction()

# zcc_add_compiler_library(name SRCS ... DEPENDS ... LINK ...)
function(zcc_add_compiler_library name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPENDS;LINK" ${ARGN})
  add_library(${name} STATIC ${ARG_SRCS})
  zcc_use_mlir(${name})
  # Consumers of a compiler library are compiler code as well.
  target_include_directories(${name} SYSTEM INTERFACE ${LLVM_INCLUDE_DIRS} ${MLIR_INCLUDE_DIRS})
  target_include_directories(${name} INTERFACE ${ZCC_SOURCE_DIR}/include ${ZCC_GENERATED_INCLUDE_DIR})
  if(ARG_DEPENDS)
    add_dependencies(${name} ${ARG_DEPENDS})
  endif()
  target_link_libraries(${name} PUBLIC ${ARG_LINK})
endfunction()
