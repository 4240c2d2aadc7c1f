//===- RunCheckpoints.cpp - a run's periodic checkpoints, and resume ------===//

#include "zcc/Runtime/Training/RunCheckpoints.h"

#include <nlohmann/json.hpp>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fcntl.h>
#include <unistd.h>

using namespace zcc::runtime;
namespace fs = std::filesystem;

namespace {

constexpr const char *kManifest = "manifest.json";
constexpr const char *kFormat = "zcc.checkpoints/v1";

struct Listed {
  int64_t step = 0;
  std::string file;
  uint64_t bytes = 0;
  uint32_t crc = 0;
  bool verified = true; // listed in a manifest (else found by its name)
};

std::string checkpointName(int64_t step) {
  char name[64];
  std::snprintf(name, sizeof name, "step-%09" PRId64 ".safetensors", step);
  return name;
}

/// The step a checkpoint's file name states, or -1.
int64_t stepOfName(const std::string &name) {
  int64_t step = -1;
  int used = 0;
  if (std::sscanf(name.c_str(), "step-%" SCNd64 ".safetensors%n", &step,
                  &used) == 1 &&
      static_cast<size_t>(used) == name.size() && step >= 0)
    return step;
  return -1;
}

/// The file's size and CRC-32, read in pieces.
Status checksumFile(const std::string &path, uint64_t &bytes, uint32_t &crc) {
  std::FILE *in = std::fopen(path.c_str(), "rb");
  if (!in)
    return makeError(StatusCode::IoError, "cannot open '", path,
                     "': ", std::strerror(errno));
  std::vector<unsigned char> piece(1 << 22);
  uLong sum = crc32(0L, Z_NULL, 0);
  bytes = 0;
  size_t got;
  while ((got = std::fread(piece.data(), 1, piece.size(), in)) > 0) {
    sum = crc32(sum, piece.data(), static_cast<uInt>(got));
    bytes += got;
  }
  bool failed = std::ferror(in);
  std::fclose(in);
  if (failed)
    return makeError(StatusCode::IoError, "cannot read '", path, "'");
  crc = static_cast<uint32_t>(sum);
  return Status::ok();
}

/// `text` to `path` by a temporary file, flushed and renamed, then the
/// directory flushed: after a crash the name holds the old bytes or the
/// new, whole.
Status writeAtomically(const std::string &dir, const std::string &path,
                       const std::string &text) {
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0)
    return makeError(StatusCode::IoError, "cannot create '", tmp,
                     "': ", std::strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      int err = errno;
      ::close(fd);
      std::remove(tmp.c_str());
      return makeError(StatusCode::IoError, "cannot write '", tmp,
                       "': ", std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    return makeError(StatusCode::IoError, "cannot write '", tmp,
                     "': ", std::strerror(err));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    return makeError(StatusCode::IoError, "cannot rename '", tmp, "' to '",
                     path, "': ", std::strerror(err));
  }
  int dirFd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dirFd >= 0) {
    ::fsync(dirFd);
    ::close(dirFd);
  }
  return Status::ok();
}

/// The manifest's checkpoints, oldest first; `problem` says why there are
/// none when the manifest is missing or unreadable.
std::vector<Listed> readManifest(const std::string &dir,
                                 std::string &problem) {
  std::string path = dir + "/" + kManifest;
  std::FILE *in = std::fopen(path.c_str(), "rb");
  if (!in) {
    problem = errno == ENOENT ? "missing" : std::strerror(errno);
    return {};
  }
  std::string text;
  char piece[4096];
  size_t got;
  while ((got = std::fread(piece, 1, sizeof piece, in)) > 0)
    text.append(piece, got);
  std::fclose(in);
  std::vector<Listed> listed;
  nlohmann::json json = nlohmann::json::parse(text, nullptr, false);
  if (json.is_discarded() || !json.is_object() ||
      json.value("format", "") != kFormat ||
      !json.contains("checkpoints") || !json["checkpoints"].is_array()) {
    problem = std::string("not a ") + kFormat + " manifest";
    return {};
  }
  for (const nlohmann::json &item : json["checkpoints"]) {
    if (!item.is_object() || !item.contains("step") ||
        !item["step"].is_number_integer() || !item.contains("bytes") ||
        !item["bytes"].is_number_unsigned() || !item.contains("crc32") ||
        !item["crc32"].is_string()) {
      problem = "an entry lacks its step, bytes or crc32";
      return {};
    }
    Listed l;
    l.step = item["step"].get<int64_t>();
    l.file = checkpointName(l.step);
    l.bytes = item["bytes"].get<uint64_t>();
    std::string crc = item["crc32"].get<std::string>();
    char *end = nullptr;
    unsigned long value = std::strtoul(crc.c_str(), &end, 16);
    if (crc.size() != 8 || *end || l.step < 0) {
      problem = "an entry's step or crc32 is malformed";
      return {};
    }
    l.crc = static_cast<uint32_t>(value);
    listed.push_back(std::move(l));
  }
  std::sort(listed.begin(), listed.end(),
            [](const Listed &a, const Listed &b) { return a.step < b.step; });
  return listed;
}

std::string manifestText(const std::vector<Listed> &listed) {
  nlohmann::ordered_json json;
  json["format"] = kFormat;
  json["checkpoints"] = nlohmann::ordered_json::array();
  for (const Listed &l : listed) {
    char crc[16];
    std::snprintf(crc, sizeof crc, "%08" PRIx32, l.crc);
    nlohmann::ordered_json item;
    item["step"] = l.step;
    item["file"] = l.file;
    item["bytes"] = l.bytes;
    item["crc32"] = crc;
    json["checkpoints"].push_back(std::move(item));
  }
  return json.dump(1) + "\n";
}

Session::Metadata positionMetadata(const RunPosition &p) {
  return {{"zcc.run.step", std::to_string(p.step)},
          {"zcc.run.next_batch", std::to_string(p.nextBatch)},
          {"zcc.run.microbatches", std::to_string(p.microbatches)},
          {"zcc.run.world", std::to_string(p.world)},
          {"zcc.run.seed", std::to_string(p.seed)},
          {"zcc.run.data", p.data}};
}

Status parsePosition(const Session::Metadata &metadata,
                     const std::string &path, RunPosition &out) {
  RunPosition p;
  int found = 0;
  for (const auto &[key, value] : metadata) {
    if (key == "zcc.run.data") {
      p.data = value;
      ++found;
      continue;
    }
    int64_t *field = key == "zcc.run.step"           ? &p.step
                     : key == "zcc.run.next_batch"   ? &p.nextBatch
                     : key == "zcc.run.microbatches" ? &p.microbatches
                     : key == "zcc.run.world"        ? &p.world
                                                     : nullptr;
    if (!field && key != "zcc.run.seed")
      continue;
    char *end = nullptr;
    errno = 0;
    unsigned long long number = std::strtoull(value.c_str(), &end, 10);
    if (value.empty() || *end || errno || value[0] == '-')
      return makeError(StatusCode::InvalidArgument, path, ": metadata '", key,
                       "' is '", value, "', not a count");
    if (field)
      *field = static_cast<int64_t>(number);
    else
      p.seed = number;
    ++found;
  }
  if (found != 6)
    return makeError(StatusCode::InvalidArgument, path,
                     ": not a run's checkpoint (its metadata lacks the "
                     "zcc.run.* position; a --save-checkpoint file loads with "
                     "--load-checkpoint)");
  out = std::move(p);
  return Status::ok();
}

} // namespace

Status zcc::runtime::checkSameRun(const RunPosition &saved,
                                  const RunPosition &now,
                                  const std::string &path) {
  auto differs = [&](const char *what, const std::string &was,
                     const std::string &is) {
    return makeError(StatusCode::InvalidArgument, path, ": the run was ",
                     what, " ", was, ", this one ", is,
                     "; resuming would not continue the same run (start from "
                     "its weights with --load-checkpoint instead)");
  };
  if (saved.data != now.data)
    return differs("on data", "'" + saved.data + "'", "'" + now.data + "'");
  if (saved.seed != now.seed)
    return differs("seeded", std::to_string(saved.seed),
                   std::to_string(now.seed));
  if (saved.microbatches != now.microbatches)
    return differs("of microbatches", std::to_string(saved.microbatches),
                   std::to_string(now.microbatches));
  if (saved.world != now.world)
    return differs("on ranks", std::to_string(saved.world),
                   std::to_string(now.world));
  return Status::ok();
}

Status RunCheckpoints::open(const std::string &dir, int64_t keep,
                            std::unique_ptr<RunCheckpoints> &out) {
  if (dir.empty())
    return makeError(StatusCode::InvalidArgument,
                     "no checkpoint directory given");
  if (keep < 1)
    return makeError(StatusCode::InvalidArgument,
                     "checkpoints to keep must be at least 1; got ", keep);
  std::error_code error;
  fs::create_directories(dir, error);
  if (error || !fs::is_directory(dir))
    return makeError(StatusCode::IoError, "cannot use '", dir,
                     "' as the checkpoint directory: ",
                     error ? error.message() : "not a directory");
  out.reset(new RunCheckpoints(dir, keep));
  return Status::ok();
}

Status RunCheckpoints::save(const Session &session,
                            const RunPosition &position, std::string *path) {
  std::string name = checkpointName(position.step);
  std::string file = dir + "/" + name;
  ZRT_RETURN_IF_ERROR(session.saveCheckpoint(file, positionMetadata(position)));
  if (path)
    *path = file;
  const Communicator *comm = session.options().communicator.get();
  if (comm && comm->rank() != 0)
    return Status::ok();
  Listed written;
  written.step = position.step;
  written.file = name;
  ZRT_RETURN_IF_ERROR(checksumFile(file, written.bytes, written.crc));
  // The listed checkpoints before this step (a resumed run may write a step
  // again), this one, the newest `keep`.
  std::string problem;
  std::vector<Listed> listed = readManifest(dir, problem);
  listed.erase(std::remove_if(listed.begin(), listed.end(),
                              [&](const Listed &l) {
                                return l.step >= position.step;
                              }),
               listed.end());
  listed.push_back(written);
  if (listed.size() > static_cast<size_t>(keep))
    listed.erase(listed.begin(),
                 listed.end() - static_cast<ptrdiff_t>(keep));
  ZRT_RETURN_IF_ERROR(
      writeAtomically(dir, dir + "/" + kManifest, manifestText(listed)));
  // What the manifest does not list: older checkpoints, and the temporary
  // files of writes a kill interrupted.
  std::error_code error;
  for (const fs::directory_entry &entry : fs::directory_iterator(dir, error)) {
    std::string n = entry.path().filename().string();
    bool tmp = n.size() > 4 && n.compare(n.size() - 4, 4, ".tmp") == 0 &&
               n.rfind("step-", 0) == 0;
    bool stale =
        stepOfName(n) >= 0 &&
        std::none_of(listed.begin(), listed.end(),
                     [&](const Listed &l) { return l.file == n; });
    if (tmp || stale)
      fs::remove(entry.path(), error);
  }
  return Status::ok();
}

Status RunCheckpoints::resume(Session &session, RunPosition &position,
                              bool &found, std::vector<std::string> &notes,
                              std::string *path, int64_t atMost) {
  found = false;
  std::string problem;
  std::vector<Listed> candidates = readManifest(dir, problem);
  if (!problem.empty()) {
    // No manifest: the checkpoint files by their names, unverified.
    std::error_code error;
    for (const fs::directory_entry &entry :
         fs::directory_iterator(dir, error)) {
      std::string n = entry.path().filename().string();
      if (int64_t step = stepOfName(n); step >= 0) {
        Listed l;
        l.step = step;
        l.file = n;
        l.verified = false;
        candidates.push_back(l);
      }
    }
    std::sort(candidates.begin(), candidates.end(),
              [](const Listed &a, const Listed &b) { return a.step < b.step; });
  }
  // A replay's restore takes the newest at or before its step.
  candidates.erase(std::remove_if(candidates.begin(), candidates.end(),
                                  [&](const Listed &l) {
                                    return l.step > atMost;
                                  }),
                   candidates.end());
  if (candidates.empty())
    return Status::ok(); // nothing yet: the run starts at its beginning
  if (!problem.empty()) {
    notes.push_back(dir + "/" + kManifest + " is " + problem +
                    ": trying the checkpoint files by name, newest first, "
                    "without checksums");
  }
  std::string tried;
  for (auto it = candidates.rbegin(); it != candidates.rend(); ++it) {
    std::string file = dir + "/" + it->file;
    std::string why;
    if (it->verified) {
      uint64_t bytes = 0;
      uint32_t crc = 0;
      if (Status s = checksumFile(file, bytes, crc); !s.isOk())
        why = s.message();
      else if (bytes != it->bytes)
        why = "truncated or extended: " + std::to_string(bytes) +
              " bytes, the manifest says " + std::to_string(it->bytes);
      else if (crc != it->crc) {
        char text[96];
        std::snprintf(text, sizeof text,
                      "corrupt: CRC-32 %08" PRIx32 ", the manifest says "
                      "%08" PRIx32,
                      crc, it->crc);
        why = text;
      }
    }
    Session::Metadata metadata;
    if (why.empty()) {
      if (Status s = session.loadCheckpoint(file, &metadata); !s.isOk())
        why = s.message();
      else if (Status s = parsePosition(metadata, file, position); !s.isOk())
        why = s.message();
    }
    if (why.empty()) {
      if (position.step != it->step)
        why = "its metadata says step " + std::to_string(position.step);
    }
    if (why.empty()) {
      found = true;
      if (path)
        *path = file;
      return Status::ok();
    }
    notes.push_back("passing over " + file + " (" + why + ")");
    tried += "\n  " + notes.back();
  }
  return makeError(StatusCode::InvalidArgument, "no checkpoint in '", dir,
                   "' can be resumed:", tried);
}

namespace {
RunPosition positionOf(const Trainer &trainer, const std::string &data) {
  const SessionOptions &options = trainer.session().options();
  RunPosition p;
  p.nextBatch = trainer.nextBatchNumber();
  p.microbatches = trainer.microbatches();
  p.world = options.communicator ? options.communicator->size() : 1;
  p.seed = options.seed;
  p.data = data;
  return p;
}
} // namespace

Status RunCheckpoints::saveRun(const Trainer &trainer, const std::string &data,
                               std::string *path) {
  RunPosition position = positionOf(trainer, data);
  position.step = trainer.stepsDone();
  return save(trainer.session(), position, path);
}

Status RunCheckpoints::resumeRun(Trainer &trainer, const std::string &data,
                                 int64_t &stepsDone,
                                 std::vector<std::string> &notes,
                                 std::string *path, int64_t atMost) {
  RunPosition saved;
  bool found = false;
  std::string file;
  ZRT_RETURN_IF_ERROR(
      resume(trainer.session(), saved, found, notes, &file, atMost));
  stepsDone = 0;
  if (!found)
    return Status::ok();
  ZRT_RETURN_IF_ERROR(checkSameRun(saved, positionOf(trainer, data), file));
  trainer.setNextBatchNumber(saved.nextBatch);
  stepsDone = saved.step;
  if (path)
    *path = file;
  return Status::ok();
}
