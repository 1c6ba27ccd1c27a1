// Kernel source -> SPIR-V through the on-disk kernel cache (runtime/cache/disk_cache.h): a hit
// loads the binary (counters().kernel_disk_cache_hits), a miss compiles it
// (counters().kernels_compiled) and stores it. A corrupt cache file is reported once on stderr
// and replaced.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/disk_cache.h"
#include "backends/vulkan/spirv_compiler.h"

namespace kiln::runtime::vk {

class KernelCompiler {
 public:
  // `device_key` names the device and driver; it is part of every cache key.
  KernelCompiler(DiskCache cache, std::string device_key, SpirvOptions options);
  absl::StatusOr<std::vector<uint32_t>> spirv(const std::string& name, const std::string& glsl) const;
  // The cache file a source would use ("" without a disk cache).
  std::string cache_path(const std::string& glsl) const;

 private:
  std::string key(const std::string& glsl) const { return key_prefix_ + glsl; }
  DiskCache cache_;
  std::string key_prefix_;
  SpirvOptions options_;
};

}  // namespace kiln::runtime::vk
