/*===- zrt.h - the zcc runtime's C API ----------------------------*- C -*-===*
 *
 * For Python (ctypes/nanobind), Go (cgo) and anything else that speaks C.
 * Conventions: every call that can fail returns a zrt_status, NULL meaning
 * success; a non-NULL status owns its message and is freed with
 * zrt_status_free. Outputs come last and are named out_*. Objects are
 * created by *_create/*_load and freed by the matching *_free; a session
 * keeps its plan alive on its own, so the plan may be freed first.
 *
 *===----------------------------------------------------------------------===*/

#ifndef ZCC_RUNTIME_ZRT_H
#define ZCC_RUNTIME_ZRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zrt_status_s *zrt_status;
typedef struct zrt_plan_s zrt_plan;
typedef struct zrt_session_s zrt_session;

typedef enum {
  ZRT_OK = 0,
  ZRT_INVALID_ARGUMENT = 1,
  ZRT_INVALID_PLAN = 2,
  ZRT_UNSUPPORTED = 3,
  ZRT_OUT_OF_MEMORY = 4,
  ZRT_IO_ERROR = 5,
  ZRT_EXECUTION_ERROR = 6,
} zrt_status_code;

zrt_status_code zrt_status_get_code(zrt_status status);
/* A new status (for feed callbacks and the layers above the runtime, such
 * as the compiler's C API, zcc/zcc.h); ZRT_OK is taken as ZRT_INVALID_ARGUMENT
 * (a returned status is a failure). NULL only when out of memory. */
zrt_status zrt_status_create(zrt_status_code code, const char *message);
/* "invalid plan: <what>"; valid until the status is freed. */
const char *zrt_status_message(zrt_status status);
void zrt_status_free(zrt_status status);

/* Reads and fully verifies a .zplan file (see docs/plan-format.md). */
zrt_status zrt_plan_load_file(const char *path, zrt_plan **out_plan);
zrt_status zrt_plan_load_bytes(const void *data, size_t size,
                               zrt_plan **out_plan);
void zrt_plan_free(zrt_plan *plan);
/* The plan as .zplan bytes (what zrt_plan_load_bytes reads): the size is
 * always written to *out_size (`data` NULL and `capacity` 0 asks only for
 * it); the bytes when `capacity` holds them, else ZRT_INVALID_ARGUMENT and
 * nothing written. For a job whose ranks must load the same plan: one compiles
 * and sends the bytes to the others. */
zrt_status zrt_plan_to_bytes(const zrt_plan *plan, void *data, size_t capacity,
                             size_t *out_size);
/* Writes the plan to `path` (a temporary file renamed over it: a reader
 * never sees half a plan); zrun and zrt_plan_load_file read it. */
zrt_status zrt_plan_save_file(const zrt_plan *plan, const char *path);

typedef enum {
  ZRT_MODE_PLANNED = 0,
  ZRT_MODE_NO_REUSE = 1,
  ZRT_MODE_POISON = 2,
} zrt_mode;

typedef enum {
  ZRT_PRECISION_F32 = 0,
  ZRT_PRECISION_F64 = 1,
} zrt_precision;

typedef struct {
  zrt_mode mode;
  zrt_precision precision;
  uint64_t seed;
} zrt_session_options;

/* Planned mode, f32, seed 0. */
void zrt_session_options_init(zrt_session_options *options);

/* Allocates every region of the plan (the only allocations the session
 * makes) and fills the parameters from their initializers. */
zrt_status zrt_session_create(const zrt_plan *plan,
                              const zrt_session_options *options,
                              zrt_session **out_session);
void zrt_session_free(zrt_session *session);

/* A data-parallel job's ranks for plans compiled with --data-parallel
 * (docs/distributed.md), through the caller's own engine (MPI, a
 * framework's process group): the runtime calls these from the thread
 * that runs the session. Each returns 0 on success; any other value ends
 * the process with a message naming the rank and the collective, as a
 * failed collective leaves the other ranks nothing to do. */
typedef enum {
  /* `count` elements at `data` become their sum over the ranks, in place,
   * the same bits on every rank (the runtime divides for the mean). */
  ZRT_COLLECTIVE_ALL_REDUCE = 0,
  /* `source` (`count` times the ranks) summed over the ranks; this rank's
   * `count` elements of the sum, from rank * count on, into `data`. */
  ZRT_COLLECTIVE_REDUCE_SCATTER = 1,
  /* Every rank's `count` elements at `source`, in rank order, into `data`. */
  ZRT_COLLECTIVE_ALL_GATHER = 2,
} zrt_collective_kind;

typedef struct {
  int rank, size;
  void *user_data;
  /* Begins a collective of f32 elements (f64 when `f64` is non-zero) and
   * may return before it completes, with a ticket for `finish`; its bytes
   * are untouched by the runtime until then. Every rank starts the same
   * collectives in the same order. */
  int (*start)(void *user_data, zrt_collective_kind kind, const void *source,
               void *data, uint64_t count, int f64, uint64_t *out_ticket);
  /* Waits for a started collective; tickets finish in any order. */
  int (*finish)(void *user_data, uint64_t ticket);
  /* Rank 0's `bytes` at `data` replace every other rank's. */
  int (*broadcast)(void *user_data, void *data, uint64_t bytes);
  /* Optional (may be NULL): lets started collectives advance; called
   * between kernels. */
  void (*progress)(void *user_data);
} zrt_communicator;

/* zrt_session_create for one rank of a data-parallel job: checks that
 * every rank loaded the same plan and gives every rank rank 0's parameters
 * (both through `communicator`, which every rank must call this with), and
 * each step reduces the gradients over the ranks. `communicator` is copied;
 * its user_data must outlive the session. */
zrt_status zrt_session_create_distributed(const zrt_plan *plan,
                                          const zrt_session_options *options,
                                          const zrt_communicator *communicator,
                                          zrt_session **out_session);

/* `entry` may be NULL or "" for the plan's training entry; "eval" and
 * "predict" name the plan's eval and predict entries (a predict entry's
 * outputs are read by their names after zrt_session_run). Inputs are
 * given in their own dtype (f32, i32 or i64), `size` bytes exactly. */
zrt_status zrt_session_set_input(zrt_session *session, const char *entry,
                                 const char *name, const void *data,
                                 size_t size);
zrt_status zrt_session_run(zrt_session *session, const char *entry);
/* An output or persistent tensor as f32 (`count` elements exactly). */
zrt_status zrt_session_read_f32(const zrt_session *session, const char *entry,
                                const char *name, float *out_values,
                                size_t count);
/* Overwrites a persistent tensor (a parameter, optimizer state) from f32
 * values (`count` elements exactly): weights trained elsewhere, or the value
 * of a parameter initialized `given`. */
zrt_status zrt_session_write_f32(zrt_session *session, const char *entry,
                                 const char *name, const float *values,
                                 size_t count);

/* The training protocol (docs/runtime.md): one optimizer step is the
 * training entry run once or, for plans compiled with --accumulate,
 * `microbatches` runs of the microbatch entry then the apply entry. The
 * trainer uses `session`, which must outlive it. */
typedef struct zrt_trainer_s zrt_trainer;

/* Writes microbatch `batch`'s inputs (batches count on across steps from 0)
 * with zrt_session_set_input(session, entry, ...). A non-NULL status ends
 * the step before that microbatch runs; the trainer returns its message. */
typedef zrt_status (*zrt_feed_fn)(zrt_session *session, const char *entry,
                                  int64_t batch, void *user_data);

zrt_status zrt_trainer_create(zrt_session *session, int64_t microbatches,
                              zrt_trainer **out_trainer);
/* One optimizer step; `out_loss` (may be NULL) is the mean of its
 * microbatches' losses. */
zrt_status zrt_trainer_step(zrt_trainer *trainer, zrt_feed_fn feed,
                            void *user_data, double *out_loss);
void zrt_trainer_free(zrt_trainer *trainer);

/* The validation loss: the plan's eval entry (no gradient, no update; it
 * writes no parameter or state) run on `batches` batches, batch b's inputs
 * written by `feed` (its `entry` is the eval entry's name); `out_loss` (may
 * be NULL) is the mean of their losses. Between training steps it leaves
 * training exactly where it was. */
zrt_status zrt_session_evaluate(zrt_session *session, zrt_feed_fn feed,
                                void *user_data, int64_t batches,
                                double *out_loss);

zrt_status zrt_session_save_checkpoint(const zrt_session *session,
                                       const char *path);
zrt_status zrt_session_load_checkpoint(zrt_session *session, const char *path);

/* A training run's checkpoints in a directory (docs/runtime.md,
 * "Checkpoints and resume"): writes DIR/step-N.safetensors, N the
 * trainer's steps so far (the session's persistent tensors and step
 * counters, the trainer's data position), then DIR/manifest.json listing
 * the newest `keep` with their CRC-32s, then removes older ones. Every rank
 * of a data-parallel job calls it; rank 0 writes. */
zrt_status zrt_trainer_save_checkpoint(const zrt_trainer *trainer,
                                       const char *dir, int64_t keep);
/* Continues the run in DIR: the newest checkpoint that verifies and loads
 * (a newer one that does not is passed over, with a warning on stderr),
 * which must be of the same seed, microbatches and ranks. *out_steps_done
 * is its step: the next zrt_trainer_step is step *out_steps_done + 1, its
 * feed's batch numbers continue the saved run's. 0 when DIR holds no
 * checkpoint yet (nothing changes). */
zrt_status zrt_trainer_resume(zrt_trainer *trainer, const char *dir,
                              int64_t *out_steps_done);

typedef struct {
  uint64_t arena_capacity;
  uint64_t arena_size;
  uint64_t lower_bound;
  uint64_t no_reuse_size;
  uint64_t persistent_size;
  uint64_t input_size;
  uint64_t output_size;
  uint64_t constant_size;
  uint64_t steps_run;
  uint64_t launches_run;
  uint64_t allocations_at_load;
  uint64_t allocations_after_load;
  uint64_t bytes_allocated;
  /* Runs per entry kind; microbatch runs since the last apply (grows without
   * bound when a step boundary is never driven). */
  uint64_t train_step_runs;
  uint64_t microbatch_runs;
  uint64_t apply_runs;
  uint64_t microbatches_since_apply;
  uint64_t device_bytes;
  uint64_t eval_runs;
  uint64_t predict_runs;
} zrt_stats;

zrt_status zrt_session_get_stats(const zrt_session *session,
                                 zrt_stats *out_stats);

#ifdef __cplusplus
}
#endif

#endif /* ZCC_RUNTIME_ZRT_H */
