// safetensors files: named tensors and string metadata, read and written without Python.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "ember/state_dict.h"

namespace ember::io {

/** String key/value pairs stored under "__metadata__" in a safetensors header. */
using Metadata = std::map<std::string, std::string>;

/** Writes `tensors` (any device, any strides) to `path`: a file atomically (the old one survives
 *  a failure), a symlink's target keeping the link, a FIFO or device written through; a directory
 *  or socket is refused. */
void save(const std::string& path, const StateDict& tensors, const Metadata& metadata = {});
/** Reads every tensor of a safetensors file onto the CPU, validating the whole header first; a
 *  torch.save file, recognised by its first bytes, is read by load_torch instead. */
StateDict load(const std::string& path);
/** Reads only the "__metadata__" of a safetensors file (the header is validated as by load). */
Metadata load_metadata(const std::string& path);

/** Writes `bytes` to what `path` names, as save() writes its file: a regular file atomically (a
 *  temporary renamed over it), a symlink's target, a FIFO or device through itself. */
void write_bytes(const std::string& path, std::string_view bytes);

namespace testing {
/** Test hook: save() fails with ENOSPC after writing `bytes` bytes of its file (nullopt: off). */
void fail_writes_after(std::optional<int64_t> bytes);
}  // namespace testing

}  // namespace ember::io
