//===- CudaNccl.cpp - collectives on NCCL ---------------------------------===//

#include "Executors/CUDA/CudaNccl.h"

using namespace zcc::runtime;
using namespace zcc::runtime::device;

void CudaNccl::close() {
#ifdef ZCC_HAVE_NCCL
  if (comm)
    api->commDestroy(comm);
  comm = nullptr;
#endif
}

Status CudaNccl::open(Communicator *job) {
#ifdef ZCC_HAVE_NCCL
  int rank = job ? job->rank() : 0, ranks = job ? job->size() : 1;
  Status loaded = loadNccl(api);
  // Every rank takes part in the broadcast below, loaded or not.
  ncclUniqueId id{};
  if (rank == 0 && loaded.isOk()) {
    ncclResult_t r = api->getUniqueId(&id);
    if (r != ncclSuccess)
      return makeError(StatusCode::ExecutionError, "ncclGetUniqueId: ",
                       api->getErrorString(r));
  }
  if (job)
    job->broadcast(&id, sizeof(id));
  if (!loaded.isOk()) {
    // One rank needs no communication: the collectives run as copies.
    api = nullptr;
    return ranks == 1 ? Status::ok() : loaded;
  }
  ncclResult_t r = api->commInitRank(&comm, ranks, id, rank);
  if (r != ncclSuccess)
    return makeError(StatusCode::ExecutionError, "ncclCommInitRank (rank ",
                     rank, " of ", ranks, "): ", api->getErrorString(r));
  int version = 0;
  api->getVersion(&version);
  described = ", NCCL " + std::to_string(version / 10000) + "." +
              std::to_string(version / 100 % 100) + "." +
              std::to_string(version % 100) + " over " +
              std::to_string(ranks) + (ranks == 1 ? " rank" : " ranks");
  return Status::ok();
#else
  // One rank needs no communication; several need NCCL.
  if (!job || job->size() == 1)
    return Status::ok();
  return makeError(StatusCode::Unsupported,
                   "this plan reduces gradients over the ", job->size(),
                   " ranks of a data-parallel job, and this runtime's CUDA "
                   "executor was built without NCCL (configure where "
                   "nccl.h and libnccl are found, or -DNCCL_ROOT=)");
#endif
}

std::string CudaNccl::issue(const Collective &collective,
                            cudaStream_t stream) const {
  using Kind = CollectiveCall::Kind;
  const CollectiveCall &c = collective.call;
#ifdef ZCC_HAVE_NCCL
  if (comm) {
    ncclDataType_t type = collective.wide() ? ncclDouble : ncclFloat;
    // ncclAvg: the sum over the ranks divided by their number.
    ncclRedOp_t op = c.mean ? ncclAvg : ncclSum;
    ncclResult_t r = ncclSuccess;
    switch (c.kind) {
    case Kind::AllReduce:
      r = api->allReduce(c.data, c.data, c.count, type, op, comm, stream);
      break;
    case Kind::ReduceScatter:
      r = api->reduceScatter(c.source, c.data, c.count, type, op, comm,
                             stream);
      break;
    case Kind::AllGather:
      r = api->allGather(c.source, c.data, c.count, type, comm, stream);
      break;
    }
    if (r != ncclSuccess)
      return std::string("NCCL collective: ") + api->getErrorString(r);
    return {};
  }
#endif
  // No communicator: one rank, whose sum and mean are its own values and
  // whose shard is the whole. Several ranks without NCCL fail at load.
  Communicator *ranks = collective.communicator;
  if (ranks && ranks->size() > 1)
    return "a collective over " + std::to_string(ranks->size()) +
           " ranks without an NCCL communicator";
  if (c.kind != Kind::AllReduce && c.count) {
    cudaError_t status =
        cudaMemcpyAsync(c.data, c.source, collective.bytes(),
                        cudaMemcpyDeviceToDevice, stream);
    if (status != cudaSuccess)
      return std::string("cudaMemcpyAsync (one rank's shard): ") +
             cudaGetErrorName(status);
  }
  return {};
}
