//===- DataSource.h - what feeds a plan's inputs each step ------*- C++ -*-===//

#ifndef ZCC_RUNTIME_DATASOURCE_H
#define ZCC_RUNTIME_DATASOURCE_H

#include "zcc/Runtime/Session/Session.h"

#include <memory>
#include <string>

namespace zcc::runtime {

class DataSource {
public:
  virtual ~DataSource() = default;
  /// Writes batch `batch` into the entry's inputs. Never allocates.
  virtual void fill(Session &session, int64_t batch) const = 0;
  /// Why the last fill wrote nothing, for sources that can fail (a
  /// caller's function); the step then ends with it, its entry not run.
  virtual Status fillStatus() const { return Status::ok(); }
  /// One line: where the data comes from.
  virtual std::string describe() const = 0;
  /// The whole batches the data holds (a file's examples / the batch's
  /// rows, at least 1); 0 when it has no end (synthetic data).
  virtual int64_t batches() const = 0;
};

/// `spec` is "synthetic" (SyntheticData.h; an eval entry's batches are
/// the task's from 2^40 on, held out from training's) or a .npz file holding one array
/// per input, named like the input, with the input's shape or a leading
/// dimension of N examples (N >= the batch's rows); batch b takes rows
/// [b * B, b * B + B) modulo N. Labels may be i32 or i64 in the file.
/// "tokens:FILE[:uint16|uint32]" is a token file (TokenData.h).
Status makeDataSource(const Session &session, int entry,
                      const std::string &spec, uint64_t seed,
                      std::unique_ptr<DataSource> &out);

/// The share of rank `rank` of a data-parallel job of `size` ranks: its
/// batch b is `inner`'s batch b * size + rank (docs/distributed.md).
std::unique_ptr<DataSource> shardDataSource(std::unique_ptr<DataSource> inner,
                                            int rank, int size);

} // namespace zcc::runtime

#endif // ZCC_RUNTIME_DATASOURCE_H
