/* Trains examples/mlp.mlir through the C APIs alone (zcc/zcc.h compiles it
 * in memory, zcc/Runtime/zrt.h runs it), on a synthetic task made here:
 * each image is one of 10 class prototypes plus noise.
 *
 *   zcc-c-example examples/mlp.mlir [steps]
 *
 * Exits 0 when the loss fell below half its first value and the runtime
 * allocated nothing after load. The same calls work from Go through cgo. */

#include "zcc/zcc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kRows = 32, kWidth = 784, kClasses = 10 };

typedef struct {
  float prototypes[kClasses][kWidth];
  float images[kRows][kWidth];
  int32_t labels[kRows];
} Task;

/* xorshift64*: a small deterministic generator for the data. */
static uint64_t next(uint64_t *state) {
  *state ^= *state >> 12;
  *state ^= *state << 25;
  *state ^= *state >> 27;
  return *state * 2685821657736338717ull;
}

static double uniform(uint64_t *state) {
  return (double)(next(state) >> 11) / 9007199254740992.0;
}

static float gaussian(uint64_t *state) {
  double u1 = uniform(state), u2 = uniform(state);
  if (u1 < 1e-300)
    u1 = 1e-300;
  return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

/* Batch `batch`'s inputs, a pure function of the batch number. */
static zrt_status feed(zrt_session *session, const char *entry, int64_t batch,
                       void *user) {
  Task *task = (Task *)user;
  uint64_t state = 0x9e3779b97f4a7c15ull ^ (uint64_t)(batch + 1);
  for (int r = 0; r < kRows; ++r) {
    int label = (int)(next(&state) % kClasses);
    task->labels[r] = label;
    for (int c = 0; c < kWidth; ++c)
      task->images[r][c] = task->prototypes[label][c] + gaussian(&state);
  }
  zrt_status status = zrt_session_set_input(session, entry, "images",
                                            task->images, sizeof task->images);
  if (status)
    return status;
  return zrt_session_set_input(session, entry, "labels", task->labels,
                               sizeof task->labels);
}

static int fail(const char *what, zrt_status status) {
  fprintf(stderr, "zcc-c-example: %s: %s\n", what, zrt_status_message(status));
  zrt_status_free(status);
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: zcc-c-example MODEL.mlir [steps]\n");
    return 2;
  }
  int steps = argc > 2 ? atoi(argv[2]) : 200;
  FILE *file = fopen(argv[1], "rb");
  if (!file) {
    fprintf(stderr, "zcc-c-example: cannot open %s\n", argv[1]);
    return 1;
  }
  fseek(file, 0, SEEK_END);
  long size = ftell(file);
  fseek(file, 0, SEEK_SET);
  char *source = malloc((size_t)size);
  if (!source || fread(source, 1, (size_t)size, file) != (size_t)size) {
    fprintf(stderr, "zcc-c-example: cannot read %s\n", argv[1]);
    return 1;
  }
  fclose(file);

  zcc_compile_options options;
  zcc_compile_options_init(&options);
  options.optimizer = "adamw";
  options.lr = 1e-3;
  zrt_plan *plan = NULL;
  zrt_status status = zcc_compile(source, (size_t)size, argv[1], &options, &plan);
  free(source);
  if (status)
    return fail("compile", status);

  zrt_session_options session_options;
  zrt_session_options_init(&session_options);
  zrt_session *session = NULL;
  status = zrt_session_create(plan, &session_options, &session);
  zrt_plan_free(plan);
  if (status)
    return fail("session", status);

  /* Weights can come from anywhere: the output layer's bias starts at a
   * value written from C. */
  float bias[kClasses];
  for (int i = 0; i < kClasses; ++i)
    bias[i] = 0.01f * (float)i;
  if ((status = zrt_session_write_f32(session, NULL, "b3", bias, kClasses)))
    return fail("write b3", status);
  float back[kClasses];
  if ((status = zrt_session_read_f32(session, NULL, "b3", back, kClasses)))
    return fail("read b3", status);
  if (memcmp(back, bias, sizeof bias) != 0) {
    fprintf(stderr, "zcc-c-example: b3 reads back differently\n");
    return 1;
  }

  Task *task = malloc(sizeof(Task));
  uint64_t state = 42;
  for (int k = 0; k < kClasses; ++k)
    for (int c = 0; c < kWidth; ++c)
      task->prototypes[k][c] = gaussian(&state);

  zrt_trainer *trainer = NULL;
  if ((status = zrt_trainer_create(session, 1, &trainer)))
    return fail("trainer", status);
  double first = 0, loss = 0;
  for (int step = 0; step < steps; ++step) {
    if ((status = zrt_trainer_step(trainer, feed, task, &loss)))
      return fail("step", status);
    if (step == 0)
      first = loss;
    if (step % 50 == 0 || step == steps - 1)
      printf("step %d loss %.6f\n", step, loss);
  }
  zrt_stats stats;
  if ((status = zrt_session_get_stats(session, &stats)))
    return fail("stats", status);
  printf("arena %llu bytes, lower bound %llu, allocations after load %llu\n",
         (unsigned long long)stats.arena_size,
         (unsigned long long)stats.lower_bound,
         (unsigned long long)stats.allocations_after_load);
  zrt_trainer_free(trainer);
  zrt_session_free(session);
  free(task);
  if (!(loss < 0.5 * first) || stats.allocations_after_load != 0) {
    fprintf(stderr, "zcc-c-example: the loss went from %f to %f\n", first,
            loss);
    return 1;
  }
  return 0;
}
