/*===- OptionList.h - every compile option, once ------------------*- C -*-===*
 *
 * One row per option of the compiler, grouped by the pass that reads it.
 * Everything else is derived from these rows (docs/adding-an-option.md):
 * the C++ CompileOptions and its table (CompileOptions.h), the C struct
 * zcc_compile_options (zcc.h), zcc's flags, Python's CompileOptions and
 * keyword arguments, the passes' own options (GenPassOptions writes their
 * TableGen), the zcc-train-step pipeline's option string, the checks of each
 * option's rule, and docs/generated/CompileOptions.md.
 *
 *   X(Kind, member, name, default, rule, "help")
 *
 * Kind:    Flag (bool; C int), Int (int64_t), Bytes (int64_t; as text also
 *          "64MiB", "1.5GiB", "100KB"), Real (double, finite), Text
 *          (std::string; C const char *, NULL: the default), Names (a list
 *          of strings; C: comma-separated).
 * member:  the C++ member (CompileOptions, the pass's option).
 * name:    the C field and Python attribute; with '-' for '_', zcc's flag
 *          and the pass option's name.
 * rule:    the one check of the value alone (CompileOptions.h: Any,
 *          AtLeast(x), Above(x), Below1, OneOf("a|b"), PowerOfTwo,
 *          NotEmpty); rules across options are in checkCrossRules.
 *
 * Plain macros only: C includes this file too.
 *
 *===----------------------------------------------------------------------===*/

#ifndef ZCC_COMPILER_OPTIONLIST_H
#define ZCC_COMPILER_OPTIONLIST_H

/* zt-mixed-precision */
#define ZCC_MIXED_PRECISION_OPTIONS(X)                                         \
  X(Text, precision, precision, "f32", OneOf("f32|bf16"),                      \
    "f32, or bf16: activations stored in bf16 (products summed in f32, "      \
    "the norms' statistics f32), f32 parameters, optimizer state and loss")

/* zt-autodiff */
#define ZCC_AUTODIFF_OPTIONS(X)                                                \
  X(Flag, accumulate, accumulate, false, Any,                                  \
    "Accumulate gradients over microbatches (microbatch and apply entries) "  \
    "instead of returning them")                                               \
  X(Flag, recompute, recompute, true, Any,                                     \
    "Compute cheap forward values (element-wise, views, broadcasts, "         \
    "dropout, normalizations) again in the backward instead of keeping them " \
    "across the forward/backward boundary")

/* zt-optimizer */
#define ZCC_OPTIMIZER_OPTIONS(X)                                               \
  X(Text, optimizer, optimizer, "sgd", OneOf("sgd|adamw|none"),                \
    "sgd, adamw, or none (the gradients become step outputs)")                \
  X(Real, lr, lr, 0.01, AtLeast(0), "Learning rate")                           \
  X(Real, momentum, momentum, 0.0, Below1,                                     \
    "SGD momentum in [0, 1); 0 keeps no momentum buffer")                      \
  X(Flag, nesterov, nesterov, false, Any,                                      \
    "SGD with Nesterov momentum (needs momentum > 0)")                         \
  X(Real, weightDecay, weight_decay, 0.0, AtLeast(0),                          \
    "Weight decay: L2 for SGD, decoupled for AdamW")                           \
  X(Int, weightDecayMinRank, weight_decay_min_rank, 0, AtLeast(0),             \
    "Parameters of fewer dimensions take no weight decay (nanoGPT's 2: "      \
    "biases and normalization scales are not decayed)")                        \
  X(Names, noWeightDecay, no_weight_decay, {}, NotEmpty,                       \
    "Parameters that take no weight decay: names, or patterns with * and ? " \
    "(comma-separated; each must match a parameter)")                          \
  X(Real, beta1, beta1, 0.9, Below1, "AdamW first-moment decay in [0, 1)")     \
  X(Real, beta2, beta2, 0.999, Below1,                                         \
    "AdamW second-moment decay in [0, 1)")                                     \
  X(Real, eps, eps, 1e-8, Above(0), "AdamW denominator term")                  \
  X(Flag, maximize, maximize, false, Any,                                      \
    "Maximize the objective: step along the gradients instead of against "   \
    "them (torch.optim's maximize=True)")                                      \
  X(Real, gradScale, grad_scale, 1.0, Above(0),                                \
    "Gradients are multiplied by this before the update (1/K to average K " \
    "accumulated microbatches)")                                               \
  X(Real, clipGradNorm, clip_grad_norm, 0.0, AtLeast(0),                       \
    "Clip the gradients by their global norm to at most this before the "     \
    "updates, as torch.nn.utils.clip_grad_norm_ (data parallel: of the "      \
    "averaged gradients; 0: no clipping)")                                     \
  X(Int, lrWarmupSteps, lr_warmup_steps, 0, AtLeast(0),                        \
    "Learning-rate schedule: raise lr linearly over this many optimizer "     \
    "steps ((k+1)/(N+1) of lr at step k, counted from 0)")                     \
  X(Text, lrDecay, lr_decay, "none", OneOf("none|cosine|linear"),              \
    "After the warmup: none (constant lr), cosine or linear, to min-lr at "   \
    "step lr-decay-steps (nanoGPT's schedule; the plan returns each step's " \
    "learning rate as the output 'lr')")                                       \
  X(Int, lrDecaySteps, lr_decay_steps, 0, AtLeast(0),                          \
    "With lr-decay: the optimizer step (counted from 0, warmup included) "    \
    "where lr reaches min-lr")                                                 \
  X(Real, minLr, min_lr, 0.0, AtLeast(0),                                      \
    "With lr-decay: the learning rate the decay ends at, in [0, lr]")          \
  X(Flag, dataParallel, data_parallel, false, Any,                             \
    "Average the gradients over the ranks of a data-parallel job (mpirun "    \
    "-np N zrun ...; the world size is chosen at run time) before the "       \
    "updates, in buckets")                                                     \
  X(Bytes, bucketBytes, bucket_bytes, 0, AtLeast(0),                           \
    "With data-parallel: bytes of gradients per bucket (0: a sixteenth of "   \
    "the gradients, from 1 to 25 MiB)")                                        \
  X(Flag, shardOptimizerState, shard_optimizer_state, false, Any,              \
    "With data-parallel: ZeRO-1, each rank holds and updates one shard of "  \
    "the optimizer state (needs world-size)")                                  \
  X(Int, worldSize, world_size, 0, AtLeast(0),                                 \
    "With shard-optimizer-state: the ranks the plan runs on")

/* zt-remat and zt-plan-memory */
#define ZCC_LAYOUT_OPTIONS(X)                                                  \
  X(Int, alignment, alignment, 256, PowerOfTwo,                                \
    "Byte alignment of every slot offset (a power of two)")                   \
  X(Flag, attentionViews, attention_views, true, Any,                          \
    "Attention and rotary read their heads where they are (slices and "      \
    "transposes of a projection as strided views) and write their results "  \
    "in the layout their reader wants, instead of copying them; false "      \
    "copies")

/* zt-remat */
#define ZCC_REMAT_OPTIONS(X)                                                   \
  X(Bytes, memoryBudget, memory_budget, 0, AtLeast(0),                         \
    "Largest arena in bytes, workspace included: forward values are "         \
    "recomputed in the backward until the plan fits, else an error names "   \
    "the smallest arena reachable (zt-remat alone: the peak of live bytes; " \
    "0: no budget)")                                                           \
  X(Text, rematProblem, remat_problem, "", Any,                                \
    "With memory-budget: also write the recompute problem and the choice "   \
    "made here (JSON, zcc.remat-problem/v1; bench/memory/remat_bound.py "     \
    "solves it for a lower bound)")                                            \
  X(Flag, rematReport, remat_report, false, Any,                               \
    "With memory-budget: report per entry the peak of live bytes before and " \
    "after, the ops copied and their FLOPs (remarks)")

/* zt-plan-memory */
#define ZCC_PLAN_MEMORY_OPTIONS(X)                                             \
  X(Text, algorithm, algorithm, "auto", NotEmpty,                              \
    "Planner algorithm (auto, exact, skyline, time-order, greedy-best, "      \
    "greedy-size)")                                                            \
  X(Real, plannerTimeLimit, planner_time_limit, 60.0, Above(0),                \
    "Seconds the planner may search per entry: a guard; a warning says "     \
    "when it ends a search before the node limit, as the plan may then "     \
    "differ between machines")                                                 \
  X(Int, plannerNodeLimit, planner_node_limit, 2000000, AtLeast(0),            \
    "Search nodes the planner may expand per entry (0: none): the same "     \
    "plan on every machine")                                                   \
  X(Flag, inPlace, in_place, true, Any,                                        \
    "Write a result over an operand that dies at its op (same size, a "       \
    "kernel that may run in place); false gives every value its own buffer")  \
  X(Flag, plantInPlaceBug, test_plant_in_place_bug, false, Any,                \
    "Tests of the random-program driver only: also write results over "      \
    "operands read again later, a wrong plan every plan check accepts")

/* The zcc-train-step pipeline's own */
#define ZCC_PIPELINE_OPTIONS(X)                                                \
  X(Flag, fuseElementwise, fuse_elementwise, true, Any,                        \
    "Run each chain of element ops (bias adds, activations, dropout, their "  \
    "gradients, scales) as one kernel (zt-fuse-elementwise); the results "    \
    "are bit-identical either way (=false: each op its own kernel)")         \
  X(Flag, fuseClassifier, fuse_classifier, true, Any,                          \
    "Compute the cross-entropy loss and its gradient in one pass over the "   \
    "logits, the gradient written over them (zt-fuse-classifier); the "       \
    "results are bit-identical either way (=false: two kernels)")            \
  X(Text, matmulPrecision, matmul_precision, "highest",                        \
    OneOf("highest|tf32"),                                                     \
    "f32 matrix products: highest (f32), or tf32 (on the GPU, operands "      \
    "rounded to TF32 on tensor cores, as PyTorch's "                          \
    "set_float32_matmul_precision('high'); zt-allow-tf32)")

/* The compile driver's own (the plan's export) */
#define ZCC_EXPORT_OPTIONS(X)                                                  \
  X(Bytes, matmulWorkspace, matmul_workspace, -1, AtLeast(-1),                 \
    "Bytes of each entry's workspace given to cuBLAS (-1: twice the largest " \
    "matmul output, at most 32 MiB)")                                          \
  X(Bytes, fit, fit, 0, AtLeast(0),                                            \
    "Device memory the step must fit in (0: no limit): the persistent, "      \
    "input, output and constant regions and fit-reserve are counted, and "    \
    "the arena gets the rest as its memory budget when it needs one "        \
    "(forward values recomputed), else an error names the bytes")            \
  X(Bytes, fitReserve, fit_reserve, 536870912, AtLeast(0),                     \
    "With fit: bytes kept for what is not the plan's (the CUDA context, "     \
    "graphs, libraries' workspaces; default 512 MiB)")

/* Every option, each once, in this order (the C struct's). */
#define ZCC_COMPILE_OPTIONS(X)                                                 \
  ZCC_OPTIMIZER_OPTIONS(X)                                                     \
  ZCC_AUTODIFF_OPTIONS(X)                                                      \
  ZCC_MIXED_PRECISION_OPTIONS(X)                                               \
  ZCC_REMAT_OPTIONS(X)                                                         \
  ZCC_LAYOUT_OPTIONS(X)                                                        \
  ZCC_PLAN_MEMORY_OPTIONS(X)                                                   \
  ZCC_PIPELINE_OPTIONS(X)                                                      \
  ZCC_EXPORT_OPTIONS(X)

/* Each pass's options: its groups. */
#define ZCC_ZT_MIXED_PRECISION_PASS_OPTIONS(X) ZCC_MIXED_PRECISION_OPTIONS(X)
#define ZCC_ZT_AUTODIFF_PASS_OPTIONS(X) ZCC_AUTODIFF_OPTIONS(X)
#define ZCC_ZT_OPTIMIZER_PASS_OPTIONS(X) ZCC_OPTIMIZER_OPTIONS(X)
#define ZCC_ZT_REMAT_PASS_OPTIONS(X)                                           \
  ZCC_LAYOUT_OPTIONS(X) ZCC_REMAT_OPTIONS(X)
#define ZCC_ZT_PLAN_MEMORY_PASS_OPTIONS(X)                                     \
  ZCC_LAYOUT_OPTIONS(X) ZCC_PLAN_MEMORY_OPTIONS(X)

/* The C types of the kinds (zcc.h). */
#define ZCC_C_TYPE_Flag int
#define ZCC_C_TYPE_Int int64_t
#define ZCC_C_TYPE_Bytes int64_t
#define ZCC_C_TYPE_Real double
#define ZCC_C_TYPE_Text const char *
#define ZCC_C_TYPE_Names const char *

#endif /* ZCC_COMPILER_OPTIONLIST_H */
