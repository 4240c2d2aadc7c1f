//===- CApi.cpp - the C API over Session and the loader -------------------===//

#include "zcc/Runtime/zrt.h"

#include "zcc/Runtime/Plan/PlanFile.h"
#include "zcc/Runtime/Communicator.h"
#include "zcc/Runtime/Session/Session.h"
#include "zcc/Runtime/Training/Evaluator.h"
#include "zcc/Runtime/Training/RunCheckpoints.h"
#include "zcc/Runtime/Training/Trainer.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <vector>

using namespace zcc::runtime;

struct zrt_status_s {
  zrt_status_code code;
  std::string message;
};
struct zrt_plan_s {
  std::shared_ptr<const Plan> plan;
};
struct zrt_session_s {
  std::unique_ptr<Session> session;
};
struct zrt_trainer_s {
  std::unique_ptr<Trainer> trainer;
  zrt_session *session;
};

namespace {

zrt_status wrap(const Status &status) {
  if (status.isOk())
    return nullptr;
  return new (std::nothrow) zrt_status_s{
      static_cast<zrt_status_code>(status.code()), status.toString()};
}

zrt_status invalidArgument(const std::string &message) {
  return wrap(Status(StatusCode::InvalidArgument, message));
}

Status entryIndex(const Session &session, const char *entry, int &out) {
  return session.findEntry(entry ? entry : "", out);
}

/// An f32 tensor of `entry` by name, for the *_f32 calls named `call`.
Status findF32(const Session &session, const char *entry, const char *name,
               const char *call, TensorInfo &out) {
  int index = 0;
  ZRT_RETURN_IF_ERROR(entryIndex(session, entry, index));
  ZRT_RETURN_IF_ERROR(session.findTensor(index, name, out));
  if (out.desc->type.dtype != DType::F32)
    return makeError(StatusCode::InvalidArgument, call, ": tensor '", name,
                     "' is ", dtypeName(out.desc->type.dtype), ", not f32");
  return Status::ok();
}

/// A C feed callback behind Trainer::FeedFn; its status becomes a Status.
struct Feed {
  zrt_feed_fn fn;
  void *user;
  zrt_session *session;
  const char *entry;

  static Status call(Session &, int64_t batch, void *self) {
    const Feed &feed = *static_cast<const Feed *>(self);
    zrt_status status = feed.fn(feed.session, feed.entry, batch, feed.user);
    if (!status)
      return Status::ok();
    // A status whose code says ok is still a failure: it was returned.
    StatusCode code = status->code == ZRT_OK
                          ? StatusCode::ExecutionError
                          : static_cast<StatusCode>(status->code);
    Status out(code,
               "the feed function failed on batch " + std::to_string(batch) +
                   ": " + status->message);
    zrt_status_free(status);
    return out;
  }
};

} // namespace

namespace {

/// zrt_communicator's callbacks as a Communicator.
class CallbackCommunicator final : public Communicator {
public:
  explicit CallbackCommunicator(const zrt_communicator &c) : c(c) {}
  int rank() const override { return c.rank; }
  int size() const override { return c.size; }
  uint64_t start(const CollectiveCall &call) override {
    static_assert(static_cast<int>(CollectiveCall::Kind::ReduceScatter) ==
                          ZRT_COLLECTIVE_REDUCE_SCATTER &&
                      static_cast<int>(CollectiveCall::Kind::AllGather) ==
                          ZRT_COLLECTIVE_ALL_GATHER,
                  "zrt_collective_kind follows CollectiveCall::Kind");
    ++started;
    uint64_t ticket = 0;
    check(c.start(c.user_data, static_cast<zrt_collective_kind>(call.kind),
                  call.source, call.data, call.count,
                  call.type == CollectiveType::F64, &ticket),
          "start");
    inFlight.push_back({ticket, call});
    return ticket;
  }
  void finish(uint64_t ticket) override {
    check(c.finish(c.user_data, ticket), "finish");
    auto it = std::find_if(inFlight.begin(), inFlight.end(),
                           [&](const auto &f) { return f.first == ticket; });
    if (it == inFlight.end())
      fail("finish", "a ticket start did not give");
    CollectiveCall call = it->second;
    inFlight.erase(it);
    divideForMean(call);
  }
  void progress() override {
    if (c.progress)
      c.progress(c.user_data);
  }
  void broadcast(void *data, uint64_t bytes) override {
    check(c.broadcast(c.user_data, data, bytes), "broadcast");
  }
  uint64_t collectives() const override { return started; }
  double secondsBlocked() const override { return 0; }
  std::string describe() const override {
    return "the caller's communicator, " + std::to_string(c.size) + " ranks";
  }

private:
  void check(int result, const char *what) const {
    if (result != 0)
      fail(what, "returned " + std::to_string(result));
  }
  [[noreturn]] void fail(const char *what, const std::string &why) const {
    std::fflush(stdout);
    std::fprintf(stderr,
                 "zrt: error: rank %d of %d: the communicator's %s %s; a "
                 "failed collective ends the job\n",
                 c.rank, c.size, what, why.c_str());
    std::fflush(stderr);
    std::_Exit(1);
  }

  zrt_communicator c;
  /// Tickets and their calls: a few at a time, kept in a vector whose
  /// capacity the first step sets, so later steps allocate nothing.
  std::vector<std::pair<uint64_t, CollectiveCall>> inFlight;
  uint64_t started = 0;
};

zrt_status sessionOptions(const char *caller,
                          const zrt_session_options *options,
                          SessionOptions &o) {
  if (!options)
    return nullptr;
  if (options->mode < ZRT_MODE_PLANNED || options->mode > ZRT_MODE_POISON)
    return invalidArgument(std::string(caller) + ": unknown mode");
  if (options->precision != ZRT_PRECISION_F32 &&
      options->precision != ZRT_PRECISION_F64)
    return invalidArgument(std::string(caller) + ": unknown precision");
  o.mode = static_cast<ExecutionMode>(options->mode);
  o.precision = static_cast<Precision>(options->precision);
  o.seed = options->seed;
  return nullptr;
}

} // namespace

extern "C" {

zrt_status zrt_status_create(zrt_status_code code, const char *message) {
  if (code == ZRT_OK || code < ZRT_OK || code > ZRT_EXECUTION_ERROR)
    code = ZRT_INVALID_ARGUMENT;
  return new (std::nothrow) zrt_status_s{code, message ? message : ""};
}

zrt_status_code zrt_status_get_code(zrt_status status) {
  return status ? status->code : ZRT_OK;
}

const char *zrt_status_message(zrt_status status) {
  return status ? status->message.c_str() : "ok";
}

void zrt_status_free(zrt_status status) { delete status; }

zrt_status zrt_plan_load_file(const char *path, zrt_plan **out_plan) {
  if (!path || !out_plan)
    return invalidArgument("zrt_plan_load_file: null argument");
  auto plan = std::make_shared<Plan>();
  if (zrt_status s = wrap(loadPlanFile(path, *plan)))
    return s;
  *out_plan = new zrt_plan_s{std::move(plan)};
  return nullptr;
}

zrt_status zrt_plan_load_bytes(const void *data, size_t size,
                               zrt_plan **out_plan) {
  if ((!data && size) || !out_plan)
    return invalidArgument("zrt_plan_load_bytes: null argument");
  auto plan = std::make_shared<Plan>();
  if (zrt_status s =
          wrap(parsePlan(static_cast<const uint8_t *>(data), size, *plan)))
    return s;
  *out_plan = new zrt_plan_s{std::move(plan)};
  return nullptr;
}

void zrt_plan_free(zrt_plan *plan) { delete plan; }

zrt_status zrt_plan_to_bytes(const zrt_plan *plan, void *data, size_t capacity,
                             size_t *out_size) {
  if (!plan || !out_size || (!data && capacity))
    return invalidArgument("zrt_plan_to_bytes: null argument");
  std::vector<uint8_t> bytes = serializePlan(*plan->plan);
  *out_size = bytes.size();
  if (!data)
    return nullptr; // asked the size
  if (capacity < bytes.size())
    return invalidArgument("zrt_plan_to_bytes: the plan takes " +
                           std::to_string(bytes.size()) + " bytes, " +
                           std::to_string(capacity) + " given");
  std::copy(bytes.begin(), bytes.end(), static_cast<uint8_t *>(data));
  return nullptr;
}

zrt_status zrt_plan_save_file(const zrt_plan *plan, const char *path) {
  if (!plan || !path)
    return invalidArgument("zrt_plan_save_file: null argument");
  return wrap(savePlanFile(path, *plan->plan));
}

void zrt_session_options_init(zrt_session_options *options) {
  if (!options)
    return;
  options->mode = ZRT_MODE_PLANNED;
  options->precision = ZRT_PRECISION_F32;
  options->seed = 0;
}

zrt_status zrt_session_create_distributed(const zrt_plan *plan,
                                          const zrt_session_options *options,
                                          const zrt_communicator *communicator,
                                          zrt_session **out_session) {
  const char *caller = "zrt_session_create_distributed";
  if (!plan || !communicator || !out_session)
    return invalidArgument(std::string(caller) + ": null argument");
  const zrt_communicator &c = *communicator;
  if (!c.start || !c.finish || !c.broadcast)
    return invalidArgument(std::string(caller) +
                           ": the communicator lacks start, finish or "
                           "broadcast");
  if (c.size < 1 || c.rank < 0 || c.rank >= c.size)
    return invalidArgument(std::string(caller) + ": rank " +
                           std::to_string(c.rank) + " of " +
                           std::to_string(c.size) + " ranks");
  SessionOptions o;
  if (zrt_status s = sessionOptions(caller, options, o))
    return s;
  o.communicator = std::make_shared<CallbackCommunicator>(c);
  std::unique_ptr<Session> session;
  if (zrt_status s = wrap(Session::create(plan->plan, o, session)))
    return s;
  *out_session = new zrt_session_s{std::move(session)};
  return nullptr;
}

zrt_status zrt_session_create(const zrt_plan *plan,
                              const zrt_session_options *options,
                              zrt_session **out_session) {
  if (!plan || !out_session)
    return invalidArgument("zrt_session_create: null argument");
  SessionOptions o;
  if (zrt_status s = sessionOptions("zrt_session_create", options, o))
    return s;
  std::unique_ptr<Session> session;
  if (zrt_status s = wrap(Session::create(plan->plan, o, session)))
    return s;
  *out_session = new zrt_session_s{std::move(session)};
  return nullptr;
}

void zrt_session_free(zrt_session *session) { delete session; }

zrt_status zrt_session_set_input(zrt_session *session, const char *entry,
                                 const char *name, const void *data,
                                 size_t size) {
  if (!session || !name || (!data && size))
    return invalidArgument("zrt_session_set_input: null argument");
  int index = 0;
  if (zrt_status s = wrap(entryIndex(*session->session, entry, index)))
    return s;
  return wrap(session->session->setInput(index, name, data, size));
}

zrt_status zrt_session_run(zrt_session *session, const char *entry) {
  if (!session)
    return invalidArgument("zrt_session_run: null session");
  int index = 0;
  if (zrt_status s = wrap(entryIndex(*session->session, entry, index)))
    return s;
  return wrap(session->session->run(index));
}

zrt_status zrt_session_read_f32(const zrt_session *session, const char *entry,
                                const char *name, float *out_values,
                                size_t count) {
  if (!session || !name || (!out_values && count))
    return invalidArgument("zrt_session_read_f32: null argument");
  const Session &s = *session->session;
  TensorInfo info;
  if (zrt_status st = wrap(findF32(s, entry, name, "zrt_session_read_f32", info)))
    return st;
  std::vector<double> values(count);
  if (zrt_status st = wrap(s.readValues(info, values.data(), count)))
    return st;
  for (size_t i = 0; i < count; ++i)
    out_values[i] = static_cast<float>(values[i]);
  return nullptr;
}

zrt_status zrt_session_write_f32(zrt_session *session, const char *entry,
                                 const char *name, const float *values,
                                 size_t count) {
  if (!session || !name || (!values && count))
    return invalidArgument("zrt_session_write_f32: null argument");
  Session &s = *session->session;
  TensorInfo info;
  if (zrt_status st =
          wrap(findF32(s, entry, name, "zrt_session_write_f32", info)))
    return st;
  if (info.region != Region::Persistent)
    return wrap(makeError(StatusCode::InvalidArgument,
                          "zrt_session_write_f32: '", name,
                          "' is not a persistent tensor (inputs go through "
                          "zrt_session_set_input)"));
  return wrap(s.writeValues(info, values, count));
}

zrt_status zrt_trainer_create(zrt_session *session, int64_t microbatches,
                              zrt_trainer **out_trainer) {
  if (!session || !out_trainer)
    return invalidArgument("zrt_trainer_create: null argument");
  std::unique_ptr<Trainer> trainer;
  if (zrt_status s =
          wrap(Trainer::create(*session->session, microbatches, trainer)))
    return s;
  *out_trainer = new zrt_trainer_s{std::move(trainer), session};
  return nullptr;
}

zrt_status zrt_trainer_step(zrt_trainer *trainer, zrt_feed_fn feed,
                            void *user_data, double *out_loss) {
  if (!trainer || !feed)
    return invalidArgument("zrt_trainer_step: null argument");
  const Session &session = *trainer->session->session;
  Feed bridge{feed, user_data, trainer->session,
              session.plan().entries[trainer->trainer->entry()].name.c_str()};
  double loss = 0;
  if (zrt_status s = wrap(trainer->trainer->step(Feed::call, &bridge, loss)))
    return s;
  if (out_loss)
    *out_loss = loss;
  return nullptr;
}

void zrt_trainer_free(zrt_trainer *trainer) { delete trainer; }

zrt_status zrt_session_evaluate(zrt_session *session, zrt_feed_fn feed,
                                void *user_data, int64_t batches,
                                double *out_loss) {
  if (!session || !feed)
    return invalidArgument("zrt_session_evaluate: null argument");
  std::unique_ptr<Evaluator> evaluator;
  if (zrt_status s = wrap(Evaluator::create(*session->session, evaluator)))
    return s;
  Feed bridge{
      feed, user_data, session,
      session->session->plan().entries[evaluator->entry()].name.c_str()};
  double loss = 0;
  if (zrt_status s =
          wrap(evaluator->evaluate(Feed::call, &bridge, batches, loss)))
    return s;
  if (out_loss)
    *out_loss = loss;
  return nullptr;
}

zrt_status zrt_session_save_checkpoint(const zrt_session *session,
                                       const char *path) {
  if (!session || !path)
    return invalidArgument("zrt_session_save_checkpoint: null argument");
  return wrap(session->session->saveCheckpoint(path));
}

zrt_status zrt_session_load_checkpoint(zrt_session *session, const char *path) {
  if (!session || !path)
    return invalidArgument("zrt_session_load_checkpoint: null argument");
  return wrap(session->session->loadCheckpoint(path));
}

zrt_status zrt_trainer_save_checkpoint(const zrt_trainer *trainer,
                                       const char *dir, int64_t keep) {
  if (!trainer || !dir)
    return invalidArgument("zrt_trainer_save_checkpoint: null argument");
  std::unique_ptr<RunCheckpoints> checkpoints;
  if (zrt_status s = wrap(RunCheckpoints::open(dir, keep, checkpoints)))
    return s;
  return wrap(checkpoints->saveRun(*trainer->trainer, kFedData));
}

zrt_status zrt_trainer_resume(zrt_trainer *trainer, const char *dir,
                              int64_t *out_steps_done) {
  if (!trainer || !dir || !out_steps_done)
    return invalidArgument("zrt_trainer_resume: null argument");
  std::unique_ptr<RunCheckpoints> checkpoints;
  if (zrt_status s = wrap(RunCheckpoints::open(dir, 1, checkpoints)))
    return s;
  std::vector<std::string> notes;
  int64_t done = 0;
  Status status =
      checkpoints->resumeRun(*trainer->trainer, kFedData, done, notes);
  for (const std::string &note : notes)
    std::fprintf(stderr, "zrt: warning: %s\n", note.c_str());
  if (zrt_status s = wrap(status))
    return s;
  *out_steps_done = done;
  return nullptr;
}

zrt_status zrt_session_get_stats(const zrt_session *session,
                                 zrt_stats *out_stats) {
  if (!session || !out_stats)
    return invalidArgument("zrt_session_get_stats: null argument");
  SessionStats s = session->session->stats();
  *out_stats = {s.arenaCapacity,
                s.arenaSize,
                s.lowerBound,
                s.noReuseSize,
                s.persistentSize,
                s.inputSize,
                s.outputSize,
                s.constantSize,
                s.stepsRun,
                s.launchesRun,
                s.allocationsAtLoad,
                s.allocationsAfterLoad,
                s.bytesAllocated,
                runsOf(s, EntryKind::TrainStep),
                runsOf(s, EntryKind::Microbatch),
                runsOf(s, EntryKind::Apply),
                s.microbatchesSinceApply,
                s.deviceBytes,
                runsOf(s, EntryKind::Eval),
                runsOf(s, EntryKind::Predict)};
  return nullptr;
}

} // extern "C"
