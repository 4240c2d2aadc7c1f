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

#include "zcc/Runtime/zrt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  const char *optimizer; /* "sgd", "adamw" or "none" */
  double lr;
  double momentum;
  int nesterov;
  double weight_decay;
  double beta1;
  double beta2;
  double eps;
  int accumulate; /* microbatch and apply entries */
  double grad_scale;
} zcc_compile_options;

/* zcc's defaults: sgd, lr 0.01, no momentum, AdamW's 0.9/0.999/1e-8. */
void zcc_compile_options_init(zcc_compile_options *options);

/* Compiles `size` bytes of zt text (`name` names it in messages) with the
 * whole pipeline, checks the plan with the runtime's loader checks, and
 * returns it. A program error is a status whose message names the file,
 * line and rule. */
zrt_status zcc_compile(const char *source, size_t size, const char *name,
                       const zcc_compile_options *options,
                       zrt_plan **out_plan);

#ifdef __cplusplus
}
#endif

#endif /* ZCC_ZCC_H */
