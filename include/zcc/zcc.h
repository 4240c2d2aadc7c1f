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

/* Called once per warning of a successful compile ("file:line:col: warning:
 * ..."), before zcc_compile returns; `message` is valid during the call. */
typedef void (*zcc_warning_fn)(void *context, const char *message);

/* The options of `zcc` (docs/runtime.md), one field per flag. Call
 * zcc_compile_options_init first: fields added later get zcc's defaults. */
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
  /* Cheap forward values (elementwise, views, normalizations) computed
   * again in the backward instead of kept (1, the default). */
  int recompute;
  /* Largest arena in bytes, workspace included: more forward values are
   * recomputed until the plan fits, else an error names the smallest arena
   * reachable (0: none). */
  int64_t memory_budget;
  /* With a memory budget: the recompute problem is written to this path
   * (JSON, zcc.remat-problem/v1); NULL: not written. */
  const char *remat_problem;
  /* "f32", or "bf16": matrix products on bf16 operands summed in f32. */
  const char *precision;
  /* Gradients averaged over the ranks (zrt_session_create_distributed) in
   * buckets of about `bucket_bytes` (0: a sixteenth of the gradients, from
   * 1 to 25 MiB). */
  int data_parallel;
  int64_t bucket_bytes;
  /* ZeRO-1 (with data_parallel): each of `world_size` ranks holds one shard
   * of the optimizer state. */
  int shard_optimizer_state;
  int64_t world_size;
  int64_t alignment;     /* slot alignment in bytes (256) */
  const char *algorithm; /* the planner's ("auto") */
  /* The planner's budget per entry: nodes decide the plan (the same on
   * every machine; 0: no node limit), seconds are a guard, and a warning
   * says when the clock ended a search first (2,000,000 and 60). */
  int64_t planner_node_limit;
  double planner_time_limit;
  int64_t matmul_workspace; /* bytes for cuBLAS per entry; -1: sized by zcc */
  /* Where the warnings go; NULL: to stderr, one line each. */
  zcc_warning_fn warning;
  void *warning_context;
  /* Gradients clipped by their global norm to at most this before the
   * updates, as torch.nn.utils.clip_grad_norm_ (data parallel: of the
   * averaged gradients); 0: no clipping (the default). */
  double clip_grad_norm;
  /* Learning-rate schedule (nanoGPT's): lr raised linearly over
   * `lr_warmup_steps` optimizer steps, then constant (`lr_decay` "none",
   * the default, or NULL), or "cosine" / "linear" down to `min_lr` at step
   * `lr_decay_steps` (counted from 0, warmup included). */
  int64_t lr_warmup_steps;
  const char *lr_decay;
  int64_t lr_decay_steps;
  double min_lr;
  /* Parameter groups: parameters of fewer dimensions than
   * `weight_decay_min_rank` (nanoGPT: 2), or named in `no_weight_decay`
   * (comma-separated names or patterns with * and ?; NULL: none), take no
   * weight decay. */
  int64_t weight_decay_min_rank;
  const char *no_weight_decay;
} zcc_compile_options;

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
