//===- MpiCommunicator.cpp - a data-parallel job over MPI -----------------===//

#include "zcc/Runtime/Distributed/MpiCommunicator.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <thread>

using namespace zcc::runtime;

/// A started collective: its MPI requests (one per chunk) and the call.
struct Flight {
  std::vector<MPI_Request> requests;
  CollectiveCall call;
  uint64_t number = 0; // the collective number of its first request
  bool busy = false;
};

struct MpiCommunicator::Handles {
  MPI_Comm data = MPI_COMM_NULL;    // the collectives
  MPI_Comm control = MPI_COMM_NULL; // "where are you" after a timeout
  /// Tickets index it; slots are reused, so a step allocates nothing once
  /// the first has run.
  std::vector<Flight> flights;
};

namespace {

using Clock = std::chrono::steady_clock;

/// Control messages: {collective number, 1 for a question / 0 an answer,
/// step (-1 outside one)}.
constexpr int kControlTag = 7;

/// MPI counts are ints: larger buffers go in chunks of this many elements,
/// the same chunks on every rank and every step.
constexpr uint64_t kChunk = uint64_t{1} << 30;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

} // namespace

bool MpiCommunicator::launchedByMpi() {
  for (const char *name :
       {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"})
    if (std::getenv(name))
      return true;
  return false;
}

Status MpiCommunicator::create(const Options &options,
                               std::shared_ptr<MpiCommunicator> &out) {
  std::shared_ptr<MpiCommunicator> comm(new MpiCommunicator());
  comm->options = options;
  comm->handles = std::make_unique<Handles>();
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    // Only the main thread calls MPI; the kernels' threads never do.
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) !=
        MPI_SUCCESS)
      return makeError(StatusCode::ExecutionError,
                       "MPI_Init_thread failed: cannot join the MPI job");
    comm->initializedHere = true;
  }
  MPI_Comm_dup(MPI_COMM_WORLD, &comm->handles->data);
  MPI_Comm_dup(MPI_COMM_WORLD, &comm->handles->control);
  MPI_Comm_rank(comm->handles->data, &comm->rank_);
  MPI_Comm_size(comm->handles->data, &comm->size_);
  comm->heard.assign(comm->size_, {});
  // The ranks that share this host's memory share its GPUs.
  MPI_Comm host = MPI_COMM_NULL;
  MPI_Comm_split_type(comm->handles->data, MPI_COMM_TYPE_SHARED, comm->rank_,
                      MPI_INFO_NULL, &host);
  MPI_Comm_rank(host, &comm->localRank_);
  MPI_Comm_size(host, &comm->localSize_);
  MPI_Comm_free(&host);
  out = std::move(comm);
  return Status::ok();
}

MpiCommunicator::~MpiCommunicator() {
  if (!handles)
    return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized)
    return;
  MPI_Comm_free(&handles->control);
  MPI_Comm_free(&handles->data);
  if (initializedHere)
    MPI_Finalize();
}

std::string MpiCommunicator::describe() const {
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(version, &length);
  std::string name(version, static_cast<size_t>(std::max(length, 0)));
  name = name.substr(0, name.find_first_of(",\n"));
  return "MPI (" + name + "), " + std::to_string(size_) + " ranks, " +
         std::to_string(localSize_) + " on this host";
}

static const char *collectiveName(CollectiveCall::Kind kind) {
  switch (kind) {
  case CollectiveCall::Kind::AllReduce:
    return "all_reduce";
  case CollectiveCall::Kind::ReduceScatter:
    return "reduce_scatter";
  case CollectiveCall::Kind::AllGather:
    return "all_gather";
  }
  return "collective";
}

uint64_t MpiCommunicator::start(const CollectiveCall &call) {
  std::vector<Flight> &flights = handles->flights;
  size_t ticket = 0;
  while (ticket < flights.size() && flights[ticket].busy)
    ++ticket;
  if (ticket == flights.size())
    flights.emplace_back();
  Flight &f = flights[ticket];
  f.busy = true;
  f.call = call;
  f.number = sequence + 1;
  f.requests.clear();
  bool wide = call.type == CollectiveType::F64;
  MPI_Datatype datatype = wide ? MPI_DOUBLE : MPI_FLOAT;
  size_t element = wide ? 8 : 4;
  auto issue = [&]() -> MPI_Request * {
    ++sequence;
    f.requests.push_back(MPI_REQUEST_NULL);
    return &f.requests.back();
  };
  switch (call.kind) {
  case CollectiveCall::Kind::AllReduce:
    if (size_ > 1)
      for (uint64_t at = 0; at < call.count; at += kChunk)
        MPI_Iallreduce(MPI_IN_PLACE,
                       static_cast<char *>(call.data) + at * element,
                       static_cast<int>(std::min(kChunk, call.count - at)),
                       datatype, MPI_SUM, handles->data, issue());
    break;
  case CollectiveCall::Kind::ReduceScatter:
    MPI_Ireduce_scatter_block(call.source, call.data,
                              shardCount(call.count, "reduce_scatter"),
                              datatype, MPI_SUM, handles->data, issue());
    break;
  case CollectiveCall::Kind::AllGather: {
    int n = shardCount(call.count, "all_gather");
    MPI_Iallgather(call.source, n, datatype, call.data, n, datatype,
                   handles->data, issue());
    break;
  }
  }
  return ticket;
}

void MpiCommunicator::finish(uint64_t ticket) {
  Flight &f = handles->flights.at(static_cast<size_t>(ticket));
  if (!f.busy)
    abortJob("finish() of a collective not started (ticket " +
             std::to_string(ticket) + ")");
  Clock::time_point start = Clock::now();
  if (!f.requests.empty())
    wait(f.requests.data(), static_cast<int>(f.requests.size()),
         collectiveName(f.call.kind), f.number);
  blocked += secondsSince(start);
  divideForMean(f.call);
  f.busy = false;
}

void MpiCommunicator::progress() {
  // A rank that timed out may be asking where this one is.
  serviceControl();
  for (Flight &f : handles->flights)
    if (f.busy && !f.requests.empty()) {
      int done = 0;
      MPI_Testall(static_cast<int>(f.requests.size()), f.requests.data(), &done,
                  MPI_STATUSES_IGNORE);
    }
}

int MpiCommunicator::shardCount(uint64_t count, const char *what) {
  if (count > static_cast<uint64_t>(INT_MAX))
    abortJob(std::string("a ") + what + " shard of " + std::to_string(count) +
             " elements is more than MPI's int count holds");
  return static_cast<int>(count);
}

void MpiCommunicator::broadcast(void *data, uint64_t bytes) {
  if (size_ == 1)
    return;
  for (uint64_t at = 0; at < bytes; at += kChunk) {
    ++sequence;
    MPI_Request request;
    MPI_Ibcast(static_cast<char *>(data) + at,
               static_cast<int>(std::min(kChunk, bytes - at)), MPI_BYTE, 0,
               handles->data, &request);
    wait(&request, 1, "broadcast", sequence);
  }
}

void MpiCommunicator::wait(void *requests, int count, const char *what,
                           uint64_t number) {
  auto *req = static_cast<MPI_Request *>(requests);
  // A collective of a small bucket is quick: spin about as long as it takes.
  poll(
      [&] {
        int done = 0;
        MPI_Testall(count, req, &done, MPI_STATUSES_IGNORE);
        return done != 0;
      },
      100e-6, what, number);
}

void MpiCommunicator::await(const std::function<bool()> &done,
                            const char *what) {
  // A device step takes milliseconds; its end is met sooner spinning.
  poll(done, 1e-3, what, 0);
}

void MpiCommunicator::poll(const std::function<bool()> &done, double spin,
                           const char *what, uint64_t number) {
  Clock::time_point start = Clock::now();
  while (!done()) {
    serviceControl();
    double waited = secondsSince(start);
    if (waited > options.timeoutSeconds)
      timedOut(what, number);
    if (waited > spin)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

void MpiCommunicator::serviceControl() {
  for (;;) {
    int pending = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, kControlTag, handles->control, &pending,
               &status);
    if (!pending)
      return;
    long long message[3] = {0, 0, 0};
    MPI_Recv(message, 3, MPI_LONG_LONG, status.MPI_SOURCE, kControlTag,
             handles->control, MPI_STATUS_IGNORE);
    heard[status.MPI_SOURCE] = {message[0], message[2]};
    if (message[1] == 1) {
      // Answer where this rank is; a three-number message goes out eagerly.
      long long answer[3] = {static_cast<long long>(sequence), 0, step};
      MPI_Send(answer, 3, MPI_LONG_LONG, status.MPI_SOURCE, kControlTag,
               handles->control);
    }
  }
}

void MpiCommunicator::timedOut(const char *what, uint64_t number) {
  long long question[3] = {static_cast<long long>(sequence), 1, step};
  for (int r = 0; r < size_; ++r)
    if (r != rank_)
      MPI_Send(question, 3, MPI_LONG_LONG, r, kControlTag, handles->control);
  Clock::time_point start = Clock::now();
  while (secondsSince(start) < options.graceSeconds) {
    serviceControl();
    bool all = true;
    for (int r = 0; r < size_; ++r)
      all &= r == rank_ || heard[r].collective >= 0;
    if (all)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::ostringstream os;
  std::string where = number ? "collective #" + std::to_string(number) : "";
  if (step >= 0)
    where += (where.empty() ? "step " : ", step ") + std::to_string(step);
  os << what << (where.empty() ? "" : " (" + where + ")")
     << " did not complete within " << options.timeoutSeconds
     << " s (--collective-timeout):";
  bool any = false;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_)
      continue;
    if (heard[r].collective < 0) {
      os << " rank " << r << " did not answer within " << options.graceSeconds
         << " s (it died or hangs);";
      any = true;
    } else if (static_cast<uint64_t>(heard[r].collective) != sequence) {
      os << " rank " << r << " is at collective #" << heard[r].collective
         << ";";
      any = true;
    } else if (heard[r].step != step) {
      os << " rank " << r << " is at "
         << (heard[r].step < 0 ? "no step"
                               : "step " + std::to_string(heard[r].step))
         << ";";
      any = true;
    }
  }
  if (!any)
    os << " every rank is waiting in it (an MPI or network failure?);";
  os << " ending the job";
  abortJob(os.str());
}

void MpiCommunicator::abortJob(const std::string &message, int code) {
  std::fflush(stdout);
  std::fprintf(stderr, "zrun: error: rank %d of %d: %s\n", rank_, size_,
               message.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}
