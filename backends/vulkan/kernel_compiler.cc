#include "backends/vulkan/kernel_compiler.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "runtime/stats.h"

namespace kiln::runtime::vk {

KernelCompiler::KernelCompiler(DiskCache cache, std::string device_key, SpirvOptions options)
    : cache_(std::move(cache)), options_(options) {
  key_prefix_ = absl::StrCat("kiln vulkan spirv v1\n", spirv_compiler_id(options), "\n", device_key, "\n");
}

std::string KernelCompiler::cache_path(const std::string& glsl) const {
  return cache_.enabled() ? cache_.path_for(key(glsl)) : "";
}

absl::StatusOr<std::vector<uint32_t>> KernelCompiler::spirv(const std::string& name, const std::string& glsl) const {
  const std::string k = key(glsl);
  // DiskCache checks the checksum and the whole key; a corrupt file reads as absent (with a
  // warning) and is rewritten below.
  if (std::optional<std::string> blob = cache_.get(k); blob && !blob->empty() && blob->size() % 4 == 0) {
    std::vector<uint32_t> words(blob->size() / 4);
    std::memcpy(words.data(), blob->data(), blob->size());
    if (words[0] == 0x07230203u) {  // the SPIR-V magic number
      counters().kernel_disk_cache_hits++;
      return words;
    }
  }
  auto spirv = compile_glsl(name, glsl, options_);
  if (!spirv.ok()) return spirv.status();
  counters().kernels_compiled++;
  cache_.put(k, std::string_view(reinterpret_cast<const char*>(spirv->data()), spirv->size() * 4));
  return spirv;
}

}  // namespace kiln::runtime::vk
