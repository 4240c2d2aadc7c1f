//===- zrun.cpp - train a compiled plan -----------------------------------===//
//
//   zrun MODEL.zplan [--steps N] [--device cpu|cuda|emulator] [--seed S]
//        [--data synthetic|FILE.npz|tokens:FILE] [--mode planned|...]
//        [--eval-data synthetic|FILE.npz|tokens:FILE [--eval-every N]]
//        [--checkpoint-dir D [--checkpoint-every N] [--keep K]] [--resume D]
//   mpirun -np N zrun MODEL.zplan ...   (a plan compiled --data-parallel)
//
// Loads and verifies the plan, allocates its regions once, then runs steps:
// one line per step with the loss (a progress line every so often on long
// runs), then the session's stats, including the allocation count after
// load. Exit status: 0 ok, 1 a runtime error, 2 bad usage. Started by an
// MPI launcher, each process is one rank of a data-parallel job: rank 0
// prints and writes checkpoints, every rank reads its share of each batch.
// With a checkpoint directory, SIGTERM and SIGINT end the run after the
// step that is running, with a checkpoint (exit status 128 + the signal);
// --resume continues it exactly (docs/runtime.md, "Checkpoints and resume").
//
//===----------------------------------------------------------------------===//

#include "zcc/Runtime/Data/DataSource.h"
#include "zcc/Reports/MemoryTimeline.h"
#include "zcc/Runtime/Plan/PlanFile.h"
#include "zcc/Reports/PlanReport.h"
#include "zcc/Reports/Progress.h"
#include "zcc/Runtime/Session/Session.h"
#include "zcc/Runtime/Training/Evaluator.h"
#include "zcc/Runtime/Training/RunCheckpoints.h"
#include "zcc/Runtime/Training/Trainer.h"
#include "zcc/Runtime/Training/TrainingLoop.h"

#ifdef ZCC_HAVE_MPI
#include "zcc/Runtime/Distributed/MpiCommunicator.h"
#endif

#include <CLI/CLI.hpp>

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

using namespace zcc::runtime;

namespace {

#ifdef ZCC_HAVE_MPI
/// The data-parallel job this process is a rank of, if any.
std::shared_ptr<MpiCommunicator> job;
#endif

/// An error on one rank of a job ends every rank: the others would wait for
/// it in their next collective.
[[noreturn]] void endJob(const std::string &message, int code) {
#ifdef ZCC_HAVE_MPI
  if (job && job->size() > 1)
    job->abortJob(message, code);
#endif
  std::fprintf(stderr, "zrun: error: %s\n", message.c_str());
  std::exit(code);
}

/// The signal that asked the run to stop (SIGTERM, SIGINT), or 0. A second
/// one finds the default action restored and ends the process at once.
volatile int stopSignal = 0;
extern "C" void askToStop(int signal) {
  stopSignal = signal;
  std::signal(signal, SIG_DFL);
}

int usage(const std::string &message) {
  endJob(message + "\n(zrun --help lists the options)", 2);
}

int fail(const Status &status) { endJob(status.toString(), 1); }

/// Writes `text` to `path` whole, or says why not.
bool writeFile(const std::string &path, const std::string &text) {
  std::FILE *out = std::fopen(path.c_str(), "wb");
  bool written =
      out && std::fwrite(text.data(), 1, text.size(), out) == text.size();
  if (out)
    written = std::fclose(out) == 0 && written;
  if (!written)
    std::fprintf(stderr, "zrun: error: cannot write %s: %s\n", path.c_str(),
                 std::strerror(errno));
  return written;
}

/// Rows of one batch: the first dimension of the entry's first input (or
/// label), 1 for a scalar.
int64_t planBatchRows(const Entry &e) {
  for (const Tensor &t : e.tensors)
    if (t.role == TensorRole::Input || t.role == TensorRole::Label)
      return t.type.shape.empty() ? 1 : t.type.shape[0];
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  std::string planPath, device = "cpu", data = "synthetic", mode = "planned",
                        precision = "f32", launch = "graph", loadCheckpoint,
                        saveCheckpoint;
  int64_t steps = 100, microbatches = 1, printEvery = 0, seed = 0, ordinal = -1,
          threads = 0;
  double hostMemoryFraction = kDefaultHostMemoryFraction;
  bool trace = false, report = false;

  CLI::App app("zrun: train a compiled plan (.zplan): loads and checks it, "
               "allocates its memory once, runs steps",
               "zrun");
  // As before: an option given twice takes its last value.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("plan", planPath, "the compiled plan (MODEL.zplan)");
  app.add_option("--steps", steps, "optimizer steps to run (default 100)");
  app.add_option("--microbatches", microbatches,
                 "microbatches per step for plans compiled with --accumulate "
                 "(default 1)");
  app.add_option("--device", device,
                 "cpu (default), cuda (one CUDA graph per step) or emulator "
                 "(the CUDA kernels run on the host)");
  app.add_option("--launch", launch,
                 "cuda: replay the captured graph (graph, default), or issue "
                 "the same kernels one by one every step (eager)");
  app.add_option("--device-ordinal", ordinal,
                 "which CUDA device (default: 0, or in a data-parallel job "
                 "the rank's place among the job's ranks on its host)");
  app.add_option("--seed", seed,
                 "parameter initialization and synthetic data (default 0)");
  app.add_option("--threads", threads,
                 "cpu: threads for the kernels (default: one per hardware "
                 "thread); the results do not depend on it");
  app.add_option("--host-memory-fraction", hostMemoryFraction,
                 "cpu: the share of the memory the OS reports available "
                 "that the session may hold (default 0.75); a plan needing "
                 "more fails at load");
  app.add_option("--data", data,
                 "synthetic (default), FILE.npz (one array per input) or "
                 "tokens:FILE[:uint16|uint32] (a token file: random windows "
                 "of the plan's sequence, labels one token on)");
  app.add_option("--mode", mode, "planned (default), no-reuse or poison");
  app.add_option("--precision", precision,
                 "f32 (default) or f64 (float math in double)");
  app.add_option("--print-every", printEvery,
                 "print every Nth step (default: every step up to 1000 "
                 "steps, else about 100 progress lines)");
  app.add_flag("--trace", trace,
               "per step: the loss's bits and a hash of every persistent "
               "tensor (for bit-identical comparisons)");
  app.add_option("--load-checkpoint", loadCheckpoint,
                 "start from a safetensors checkpoint");
  app.add_option("--save-checkpoint", saveCheckpoint,
                 "write the parameters (safetensors) after the run");
  std::string checkpointDir, resumeDir;
  int64_t checkpointEvery = 0, keep = 3;
  app.add_option("--checkpoint-dir", checkpointDir,
                 "write the run's checkpoints here: every --checkpoint-every "
                 "steps, after the last step, and when SIGTERM or SIGINT "
                 "stops the run (default: the --resume directory)");
  app.add_option("--checkpoint-every", checkpointEvery,
                 "a checkpoint every N steps (needs --checkpoint-dir or "
                 "--resume)");
  app.add_option("--keep", keep,
                 "checkpoints kept in the directory, the newest (default 3)");
  std::string onNonFinite = "stop";
  app.add_option("--on-nonfinite", onNonFinite,
                 "a step whose loss or gradient norm is NaN or infinite is "
                 "replayed, checked, to name the op that first wrote one; "
                 "then stop (default), or skip-step: its update is not "
                 "applied and training goes on");
  app.add_option("--resume", resumeDir,
                 "continue the run whose checkpoints are in this directory "
                 "from its newest valid one (from the start, or from "
                 "--load-checkpoint, when it has none yet), writing on "
                 "there");
  app.add_flag("--report", report, "print the plan's memory report first");
  double collectiveTimeout = 300;
  int64_t globalBatch = 0;
  app.add_option("--collective-timeout", collectiveTimeout,
                 "data parallel: seconds a rank waits in a collective (on a "
                 "GPU: for a step, its NCCL collectives inside) before it "
                 "names the ranks that did not come and ends the job "
                 "(default 300)");
  app.add_option("--global-batch", globalBatch,
                 "data parallel: the rows of one step over all ranks; checked "
                 "against the world size and the plan's batch at load");
  std::string evalData;
  int64_t evalEvery = 0, evalBatches = 0;
  app.add_option("--eval-data", evalData,
                 "a validation loss from the plan's eval entry on this data "
                 "(synthetic, FILE.npz, one array per eval input, or "
                 "tokens:FILE[:uint16|uint32]), after "
                 "the last step (and every --eval-every steps)");
  app.add_option("--eval-every", evalEvery,
                 "evaluate every N steps as well as after the last (needs "
                 "--eval-data)");
  app.add_option("--eval-batches", evalBatches,
                 "batches per evaluation (default: every whole batch the "
                 "file holds; 1 for synthetic data)");
  std::string memoryJson, memoryHtml, memoryTorch, statsJson;
  app.add_option("--memory-json", memoryJson,
                 "write the plan's memory timeline here first (JSON, "
                 "zcc.memory/v1: docs/memory.md)");
  app.add_option("--memory-html", memoryHtml,
                 "write the memory timeline drawn as one HTML page here");
  app.add_option("--memory-torch-snapshot", memoryTorch,
                 "write the plan as PyTorch's memory snapshot (pickle) here");
  app.add_option("--stats-json", statsJson,
                 "write the session's stats here after the run (JSON, "
                 "zcc.stats/v1: docs/runtime.md)");
  std::string metricsJsonl;
  double peakTflops = 0;
  app.add_option("--metrics-jsonl", metricsJsonl,
                 "write one JSON line per step here (step, loss, lr, "
                 "grad_norm, seconds, tokens or examples per second, MFU); "
                 "a resumed run keeps the steps before its checkpoint's");
  app.add_option("--peak-tflops", peakTflops,
                 "the device's peak TFLOP/s for MFU (default: known CUDA "
                 "devices' dense peak for the plan's precision; none on the "
                 "CPU)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp &) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::ParseError &e) {
    return usage(e.what());
  }
  if (steps < 0)
    return usage("--steps needs a count >= 0");
  if (microbatches < 1)
    return usage("--microbatches needs a count >= 1");
  if (app.count("--print-every") && printEvery < 1)
    return usage("--print-every needs a count >= 1");
  if (seed < 0)
    return usage("--seed needs a non-negative integer");
  if (app.count("--threads") && (threads < 1 || threads > 1024))
    return usage("--threads needs a count from 1 to 1024");
  if (!(hostMemoryFraction > 0 && hostMemoryFraction <= 1))
    return usage("--host-memory-fraction needs a number in (0, 1]");
  if (app.count("--device-ordinal") && (ordinal < 0 || ordinal > 1024))
    return usage("--device-ordinal needs a device number");
  if (planPath.empty())
    return usage("no plan file given");
  if (app.count("--eval-every") && evalEvery < 1)
    return usage("--eval-every needs a count >= 1");
  if (app.count("--eval-batches") && evalBatches < 1)
    return usage("--eval-batches needs a count >= 1");
  if (evalData.empty() &&
      (app.count("--eval-every") || app.count("--eval-batches")))
    return usage("--eval-every and --eval-batches need --eval-data");
  if (app.count("--checkpoint-every") && checkpointEvery < 1)
    return usage("--checkpoint-every needs a count >= 1");
  if (app.count("--keep") && keep < 1)
    return usage("--keep needs a count >= 1");
  if (onNonFinite != "stop" && onNonFinite != "skip-step")
    return usage("--on-nonfinite must be stop or skip-step");
  if (checkpointDir.empty())
    checkpointDir = resumeDir;
  if (checkpointDir.empty() &&
      (app.count("--checkpoint-every") || app.count("--keep")))
    return usage("--checkpoint-every and --keep need --checkpoint-dir (or "
                 "--resume)");
  if (!(collectiveTimeout > 0))
    return usage("--collective-timeout needs a number of seconds > 0");
  if (app.count("--global-batch") && globalBatch < 1)
    return usage("--global-batch needs a row count >= 1");
  // With checkpoints, a stop comes at a step boundary, with a checkpoint,
  // rather than losing the steps since the last one (asked for before the
  // first step: after it).
  if (!checkpointDir.empty()) {
    std::signal(SIGTERM, askToStop);
    std::signal(SIGINT, askToStop);
  }
  int rank = 0, world = 1;
  std::shared_ptr<Communicator> communicator;
#ifdef ZCC_HAVE_MPI
  if (MpiCommunicator::launchedByMpi()) {
    MpiCommunicator::Options mpiOptions;
    mpiOptions.timeoutSeconds = collectiveTimeout;
    if (Status s = MpiCommunicator::create(mpiOptions, job); !s.isOk())
      return fail(s);
    communicator = job;
    rank = job->rank();
    world = job->size();
    // Rank 0 speaks for the job; the others print only their errors.
    if (rank != 0 && !std::freopen("/dev/null", "w", stdout))
      return fail(makeError(StatusCode::ExecutionError, "cannot silence rank ",
                            rank, "'s output"));
  }
#endif
  if (app.count("--global-batch") && !communicator)
    return usage("--global-batch is for data-parallel jobs (mpirun -np N "
                 "zrun ...), and this zrun was not started by MPI" +
                 std::string(
#ifdef ZCC_HAVE_MPI
                     ""
#else
                     " (it is built without MPI)"
#endif
                     ));
  SessionOptions options;
  options.seed = static_cast<uint64_t>(seed);
  options.threads = static_cast<int>(threads);
  options.hostMemoryFraction = hostMemoryFraction;
  if (!parseExecutionMode(mode, options.mode))
    return usage("--mode must be planned, no-reuse or poison");
  if (!parsePrecision(precision, options.precision))
    return usage("--precision must be f32 or f64");
  options.deviceOrdinal = static_cast<int>(ordinal);
  options.communicator = communicator;
  if (!parseDeviceKind(device, options.device))
    return usage("--device must be cpu, cuda or emulator");
  if (!parseLaunchMode(launch, options.launch))
    return usage("--launch must be graph or eager");
  if (launch == "eager" && device != "cuda")
    return usage("--launch eager needs --device cuda");

  auto plan = std::make_shared<Plan>();
  if (Status s = loadPlanFile(planPath, *plan); !s.isOk())
    return fail(s);
  if (report)
    std::fputs(formatPlanReport(*plan).c_str(), stdout);
  using Writer = std::string (*)(const Plan &);
  for (auto [path, write] :
       {std::pair<std::string, Writer>{memoryJson, memoryTimelineJson},
        {memoryHtml, memoryTimelineHtml},
        {memoryTorch, memoryTorchSnapshot}})
    if (!path.empty() && rank == 0 && !writeFile(path, write(*plan)))
      return 1;
  std::unique_ptr<Session> session;
  if (Status s = Session::create(plan, options, session); !s.isOk()) {
    if (options.device == DeviceKind::Cuda)
      std::fprintf(stderr, "zrun: --device cuda failed at load; nothing ran\n");
    return fail(s);
  }
  if (!loadCheckpoint.empty())
    if (Status s = session->loadCheckpoint(loadCheckpoint); !s.isOk())
      return fail(s);

  std::unique_ptr<Trainer> trainer;
  if (Status s = Trainer::create(*session, microbatches, trainer); !s.isOk())
    return microbatches != 1 ? usage(s.message()) : fail(s);
  int entry = trainer->entry();
  const Entry &e = plan->entries[entry];

  // Resume: the session's state and the trainer's data position from the
  // newest valid checkpoint of this run.
  std::unique_ptr<RunCheckpoints> checkpoints;
  int64_t firstStep = 1;
  if (!resumeDir.empty()) {
    std::unique_ptr<RunCheckpoints> from;
    if (Status s = RunCheckpoints::open(resumeDir, keep, from); !s.isOk())
      return fail(s);
    int64_t done = 0;
    std::vector<std::string> notes;
    std::string path;
    Status s = from->resumeRun(*trainer, data, done, notes, &path);
    for (const std::string &note : notes)
      std::fprintf(stderr, "zrun: warning: %s\n", note.c_str());
    if (!s.isOk())
      return fail(s);
    firstStep = done + 1;
    if (!path.empty())
      std::printf("resumed from %s: %" PRId64 " steps done, next batch %" PRId64
                  "\n",
                  path.c_str(), done, trainer->nextBatchNumber());
    else
      std::printf("resume: no checkpoint in %s yet; starting at step 1\n",
                  resumeDir.c_str());
  }
  if (!checkpointDir.empty())
    if (Status s = RunCheckpoints::open(checkpointDir, keep, checkpoints);
        !s.isOk())
      return fail(s);

  if (globalBatch > 0) {
    int64_t rows = planBatchRows(e);
    if (globalBatch % world != 0)
      return fail(makeError(StatusCode::InvalidArgument, "the global batch of ",
                            globalBatch, " rows does not divide among ", world,
                            " ranks"));
    if (rows != globalBatch / world)
      return fail(makeError(
          StatusCode::InvalidArgument, "the global batch of ", globalBatch,
          " rows over ", world, " ranks is ", globalBatch / world,
          " rows per rank, and the plan's batch is ", rows,
          " rows: compile the model at batch ", globalBatch / world,
          " (each rank runs the plan on its own share)"));
  }
  std::unique_ptr<DataSource> source;
  if (Status s = makeDataSource(*session, entry, data, seed, source); !s.isOk())
    return fail(s);
  source = shardDataSource(std::move(source), rank, world);
  std::printf("plan %s: entry '%s', %zu launches, arena %" PRIu64
              " bytes; mode %s, precision %s, seed %" PRId64 "\n",
              planPath.c_str(), e.name.c_str(), e.launches.size(),
              plan->arenaSize, executionModeName(options.mode),
              precision.c_str(), seed);
  if (communicator)
    std::printf("data parallel: %s\n", communicator->describe().c_str());
  if (options.device != DeviceKind::Cpu)
    std::printf("device: %s%s\n", session->stats().deviceName.c_str(),
                options.device == DeviceKind::Cuda
                    ? (options.launch == LaunchMode::Graph
                           ? ", one CUDA graph launch per entry run"
                           : ", eager kernel launches")
                    : "");
  std::printf("data: %s\n", source->describe().c_str());
  // What a step does, for the progress line and the metrics file: its
  // tokens (or examples) over the job, its model FLOPs on this rank, the
  // device's peak for MFU.
  const StepWork work = stepWork(session->plan(), trainer->entry(),
                                 trainer->applyEntry(), microbatches);
  if (peakTflops <= 0 && options.device == DeviceKind::Cuda)
    peakTflops = devicePeakTflops(session->stats().deviceName,
                                  session->plan(), trainer->entry());
  const int64_t jobItems = work.items * world;
  const char *itemWord = work.tokens ? "tok" : "examples";
  std::FILE *metricsFile = nullptr;
  if (!metricsJsonl.empty() && rank == 0) {
    // A resumed run keeps the lines of the steps before its checkpoint's
    // (a killed run may have written later ones, which it runs again).
    std::string kept;
    if (firstStep > 1)
      if (std::FILE *old = std::fopen(metricsJsonl.c_str(), "r")) {
        char buffer[4096];
        while (std::fgets(buffer, sizeof buffer, old)) {
          long long step = 0;
          if (std::sscanf(buffer, "{\"step\": %lld", &step) == 1 &&
              step < firstStep)
            kept += buffer;
        }
        std::fclose(old);
      }
    metricsFile = std::fopen(metricsJsonl.c_str(), "w");
    if (metricsFile)
      std::fputs(kept.c_str(), metricsFile);
    if (!metricsFile)
      return fail(makeError(StatusCode::IoError, "cannot open --metrics-jsonl ",
                            metricsJsonl, ": ", std::strerror(errno)));
  }
  // Lines are printed every `every` steps; with a metrics file every step
  // is reported to the loop's callback, and written.
  const int64_t every =
      printEvery > 0 ? printEvery : defaultReportEvery(steps);
  LoopOptions loop;
  loop.steps = steps;
  loop.reportEvery = metricsJsonl.empty() ? printEvery : 1;
  loop.trace = trace;
  loop.firstStep = firstStep;
  if (checkpoints) {
    loop.checkpointEvery = checkpointEvery;
    loop.checkpoint = [&](int64_t) {
      return checkpoints->saveRun(*trainer, data);
    };
    loop.stopRequested = &stopSignal;
  }
  // A non-finite step is replayed from the last good state: the newest
  // checkpoint at or before it, or the start.
  loop.onNonFinite = onNonFinite == "stop" ? OnNonFinite::Stop
                                           : OnNonFinite::SkipStep;
  loop.restore = [&](int64_t atMost, int64_t &at) -> Status {
    at = 0;
    std::vector<std::string> notes;
    if (checkpoints)
      ZRT_RETURN_IF_ERROR(
          checkpoints->resumeRun(*trainer, data, at, notes, nullptr, atMost));
    if (at == 0) {
      session->initialize(static_cast<uint64_t>(seed));
      if (!loadCheckpoint.empty())
        ZRT_RETURN_IF_ERROR(session->loadCheckpoint(loadCheckpoint));
      trainer->setNextBatchNumber(0);
    }
    if (rank == 0)
      std::fprintf(stderr,
                   "zrun: replaying from step %" PRId64 " (%s) to check "
                   "step %" PRId64 "\n",
                   at, at ? "its checkpoint" : "the start", atMost + 1);
    return Status::ok();
  };
  // Said by the rank whose op wrote the value.
  loop.skipped = [&](int64_t, const std::string &text) {
    std::fprintf(stderr, "zrun: warning: %s\n", text.c_str());
  };
  std::unique_ptr<Evaluator> evaluator;
  std::unique_ptr<DataSource> evalSource;
  if (!evalData.empty()) {
    if (Status s = Evaluator::create(*session, evaluator); !s.isOk())
      return fail(s);
    if (Status s = makeDataSource(*session, evaluator->entry(), evalData,
                                  seed, evalSource);
        !s.isOk())
      return fail(s);
    evalSource = shardDataSource(std::move(evalSource), rank, world);
    if (!evalBatches)
      evalBatches = std::max<int64_t>(1, evalSource->batches());
    std::printf("eval data: %s; %" PRId64 " batches per evaluation\n",
                evalSource->describe().c_str(), evalBatches);
    loop.evalEvery = evalEvery ? evalEvery : std::max<int64_t>(steps, 1);
    loop.evaluate = [&](int64_t step) {
      double loss = 0;
      ZRT_RETURN_IF_ERROR(evaluator->evaluate(*evalSource, evalBatches,
                                              communicator.get(), loss));
      std::printf("eval after step %" PRId64 " loss %.6f\n", step, loss);
      return Status::ok();
    };
  }
  // One line per reported step: a bit-exact trace, the loss (and metrics)
  // of every step, or a progress line on long runs.
  double lastSeconds = 0;
  auto print = [&](const StepReport &r) {
    const double stepSeconds = r.seconds - lastSeconds;
    lastSeconds = r.seconds;
    const double rate = (r.step - firstStep + 1) / std::max(r.seconds, 1e-9);
    const double mfu =
        peakTflops > 0 ? work.flops * rate / (peakTflops * 1e12) : 0;
    if (metricsFile) {
      std::string line = "{\"step\": " + std::to_string(r.step);
      char number[64];
      auto field = [&](const char *name, double value) {
        std::snprintf(number, sizeof number, ", \"%s\": %.9g", name, value);
        line += number;
      };
      field("loss", r.loss);
      for (const auto &[name, value] : r.metrics)
        field(name.c_str(), value);
      field("seconds", r.seconds);
      field("step_seconds", stepSeconds);
      field(work.tokens ? "tokens_per_second" : "examples_per_second",
            static_cast<double>(jobItems) * rate);
      if (peakTflops > 0)
        field("mfu", mfu);
      line += "}\n";
      std::fputs(line.c_str(), metricsFile);
      std::fflush(metricsFile);
    }
    if (!trace && r.step % every != 0 && r.step != r.steps)
      return;
    std::string metrics;
    for (const auto &[name, value] : r.metrics) {
      char text[64];
      std::snprintf(text, sizeof text,
                    name == "grad_norm" ? " %s %.6f" : " %s %.6g",
                    name.c_str(), value);
      metrics += text;
    }
    if (trace) {
      float f = static_cast<float>(r.loss);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      std::printf("step %" PRId64 " loss %.9g bits 0x%08x params 0x%016" PRIx64
                  "\n",
                  r.step, r.loss, bits, r.persistentHash);
    } else if (every == 1) {
      std::printf("step %" PRId64 " loss %.6f%s\n", r.step, r.loss,
                  metrics.c_str());
    } else {
      // A progress line: the rate so far, what the job reads, MFU, ETA.
      std::string extra;
      char text[96];
      if (jobItems > 0) {
        std::snprintf(text, sizeof text, ", %.0f %s/s",
                      static_cast<double>(jobItems) * rate, itemWord);
        extra += text;
      }
      if (peakTflops > 0) {
        std::snprintf(text, sizeof text, ", MFU %.1f%%", 100 * mfu);
        extra += text;
      }
      if (r.step < r.steps)
        extra += ", ETA " + formatDuration((r.steps - r.step) / rate);
      std::printf("step %" PRId64 "/%" PRId64 " loss %.6f%s  (%.1f steps/s%s)\n",
                  r.step, r.steps, r.loss, metrics.c_str(), rate,
                  extra.c_str());
    }
  };
  LoopResult ran;
  Status looped = runTrainingLoop(*session, *trainer, *source,
                                  communicator.get(), loop, print, ran);
  if (metricsFile && std::fclose(metricsFile) != 0 && looped.isOk())
    looped = makeError(StatusCode::IoError, "cannot write --metrics-jsonl ",
                       metricsJsonl, ": ", std::strerror(errno));
  if (!looped.isOk())
    return fail(looped);
  // With no steps, the evaluation is of what was loaded.
  if (steps == 0 && loop.evaluate)
    if (Status s = loop.evaluate(0); !s.isOk())
      return fail(s);
  const double seconds = ran.seconds;
  const double firstLoss = ran.firstLoss, lastLoss = ran.lastLoss;
  const int64_t stepsRun = std::max<int64_t>(0, ran.stepsRun - firstStep + 1);
  // Every rank takes part (ZeRO-1's sharded state is gathered); rank 0
  // writes the file.
  if (!saveCheckpoint.empty())
    if (Status s = session->saveCheckpoint(saveCheckpoint); !s.isOk())
      return fail(s);

  SessionStats s = session->stats();
  if (stepsRun > 0)
    std::printf("loss %.6f -> %.6f over %" PRId64 " steps (%.1f%% lower)\n",
                firstLoss, lastLoss, stepsRun,
                100.0 * (1.0 - lastLoss / firstLoss));
  else if (firstStep > steps && steps > 0)
    std::printf("the run had done its %" PRId64 " steps: nothing to run\n",
                steps);
  std::printf("stats:\n");
  std::printf("  arena capacity          %" PRIu64 " bytes\n", s.arenaCapacity);
  std::printf("  arena (plan)            %" PRIu64 " bytes\n", s.arenaSize);
  std::printf("  lower bound             %" PRIu64 " bytes\n", s.lowerBound);
  std::printf("  no-reuse size           %" PRIu64 " bytes\n", s.noReuseSize);
  std::printf("  persistent region       %" PRIu64 " bytes\n",
              s.persistentSize);
  std::printf("  input / output regions  %" PRIu64 " / %" PRIu64 " bytes\n",
              s.inputSize, s.outputSize);
  std::printf("  constant region         %" PRIu64 " bytes\n", s.constantSize);
  std::printf("  steps run               %" PRIu64 " (%" PRIu64
              " launches, %.2f ms per step)\n",
              s.stepsRun, s.launchesRun,
              s.stepsRun ? 1000.0 * seconds / s.stepsRun : 0.0);
  std::printf("  allocations at load     %" PRIu64 " (%" PRIu64 " bytes)\n",
              s.allocationsAtLoad, s.bytesAllocated);
  if (options.device != DeviceKind::Cpu)
    std::printf("  device memory           %" PRIu64 " bytes\n", s.deviceBytes);
  std::printf("  allocations after load  %" PRIu64 "\n",
              s.allocationsAfterLoad);
  std::string runs;
  for (const EntryRuns &r : s.entryRuns)
    runs += (runs.empty() ? "" : ", ") + r.name + " " + std::to_string(r.runs);
  std::printf("  entries run             %s\n", runs.c_str());
  uint64_t shardBytes = 0;
  for (const ShardedState &state : plan->sharded)
    shardBytes +=
        plan->persistent[plan->findPersistent(state.name)].type.bytes();
  if (!plan->sharded.empty())
    std::printf("  sharded state           %" PRIu64
                " bytes of the persistent region on each of %u ranks "
                "(ZeRO-1)\n",
                shardBytes, plan->worldSize());
  if (communicator) {
    std::printf(
        "  ranks                   %d, %" PRIu64 " collectives on each (%s)\n",
        world, communicator->collectives(), communicator->describe().c_str());
    // What the kernels did not hide: rank 0's time waiting for the others.
    double blocked = communicator->secondsBlocked();
    std::printf("  blocked in collectives  %.2f ms per step (%.1f%% of the "
                "step time, rank 0)\n",
                s.stepsRun ? 1000.0 * blocked / s.stepsRun : 0.0,
                seconds > 0 ? 100.0 * blocked / seconds : 0.0);
  }
  if (!statsJson.empty() && rank == 0 &&
      !writeFile(statsJson, sessionStatsJson(s)))
    return 1;
  if (ran.stoppedBy) {
    int signal = ran.stoppedBy > 0 ? ran.stoppedBy : SIGTERM;
    std::printf("stopped by %s after step %" PRId64
                "; its checkpoint is in %s (--resume %s continues)\n",
                ran.stoppedBy > 0 ? (signal == SIGINT ? "SIGINT" : "SIGTERM")
                                  : "another rank's signal",
                ran.stepsRun, checkpointDir.c_str(), checkpointDir.c_str());
    std::fflush(stdout);
    return 128 + signal;
  }
  return 0;
}
