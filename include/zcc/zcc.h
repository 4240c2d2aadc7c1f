/*===- zcc.h - the compiler's C API ---------------------------------*- C -*-===*
 *
 * Compiles a zt training step (forward + loss, the text `zcc` reads) into a
 * plan in memory, for the runtime's C API (zcc/Runtime/zrt.h) to run: the
 * way in for languages other than C++ and Python (Go through cgo, for
 * example). Same conventions as zrt.h: a NULL status is success, outputs
 * last. Links the compiler libraries (MLIR) on top of the runtime.
 *
 *===----------------------------------------------------------------------===*/

#ifndef ZCC_ZCC_H
#define ZCC_ZCC_H

#include "zcc/Compiler/OptionList.h"
#include "zcc/Runtime/zrt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Called once per warning of a successful compile ("file:line:col: warning:
 * ..."), before zcc_compile returns; `message` is valid during the call. */
typedef void (*zcc_warning_fn)(void *context, const char *message);

/* The options of `zcc`, one field per flag: the rows of
 * zcc/Compiler/OptionList.h, named as there (`weight_decay` for
 * --weight-decay); docs/generated/CompileOptions.md says what each means
 * and its default. Flags are int (0 or 1), byte counts and whole numbers
 * int64_t, numbers double, text const char * (NULL: the default) and lists
 * of names one comma-separated const char * (NULL: none). Call
 * zcc_compile_options_init first: every field gets zcc's default, so
 * fields added later keep it. */
#define ZCC_COMPILE_OPTION_FIELD(kind, member, name, init, rule, help)         \
  ZCC_C_TYPE_##kind name;
typedef struct {
  ZCC_COMPILE_OPTIONS(ZCC_COMPILE_OPTION_FIELD)
  /* Where the warnings go; NULL: to stderr, one line each. */
  zcc_warning_fn warning;
  void *warning_context;
} zcc_compile_options;
#undef ZCC_COMPILE_OPTION_FIELD

/* zcc's defaults: sgd, lr 0.01, no momentum, AdamW's 0.9/0.999/1e-8,
 * recompute on, f32, one device, 256-byte slots, the planner's "auto". */
void zcc_compile_options_init(zcc_compile_options *options);

/* Compiles `size` bytes of zt text (`name` names it in messages) with the
 * whole pipeline, checks the plan with the runtime's loader checks, and
 * returns it: the same plan, byte for byte, as `zcc` with the same options
 * (zrt_plan_to_bytes, zrt_plan_save_file). A program error or a bad option
 * is a status whose message names the file, line and rule, or the option;
 * nothing is returned then. */
zrt_status zcc_compile(const char *source, size_t size, const char *name,
                       const zcc_compile_options *options,
                       zrt_plan **out_plan);

#ifdef __cplusplus
}
#endif

#endif /* ZCC_ZCC_H */
