#include "runtime/vulkan/kernel_compiler.h"

#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "runtime/stats.h"
#include "runtime/vulkan/cache_file.h"

namespace kiln::runtime::vk {
namespace {

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'S', 'P', 'V', '1'};

}  // namespace

KernelCompiler::KernelCompiler(const std::string& cache_dir, std::string device_key, SpirvOptions options)
    : options_(options) {
  key_prefix_ = absl::StrCat("kiln spirv cache v1\n", spirv_compiler_id(options), "\n", device_key, "\n");
  if (cache_dir.empty()) return;
  std::string dir = absl::StrCat(cache_dir, "/vulkan");
  if (make_dirs(dir)) {
    dir_ = dir;
  } else {
    std::fprintf(stderr, "kiln: warning: cannot create the kernel cache directory %s; Vulkan kernels will not be cached\n", dir.c_str());
  }
}

std::string KernelCompiler::cache_path(const std::string& glsl) const {
  if (dir_.empty()) return "";
  return absl::StrCat(dir_, "/", cache_key(key_prefix_ + glsl).hex(), ".spv");
}

absl::StatusOr<std::vector<uint32_t>> KernelCompiler::spirv(const std::string& name, const std::string& glsl) const {
  const CacheKey key = cache_key(key_prefix_ + glsl);
  const std::string path = cache_path(glsl);
  if (!path.empty()) {
    auto data = read_cache_file(path, kMagic, key);
    if (data.ok() && !data->empty() && data->size() % 4 == 0) {
      std::vector<uint32_t> words(data->size() / 4);
      std::memcpy(words.data(), data->data(), data->size());
      if (words[0] == 0x07230203u) {  // SPIR-V magic
        counters().kernel_disk_cache_hits++;
        return words;
      }
      data = absl::DataLossError("not SPIR-V");
    } else if (data.ok()) {
      data = absl::DataLossError("payload is not a whole number of SPIR-V words");
    }
    if (!absl::IsNotFound(data.status()))
      std::fprintf(stderr, "kiln: warning: corrupt kernel cache file %s (%s); recompiling kernel '%s'\n", path.c_str(),
                   std::string(data.status().message()).c_str(), name.c_str());
  }
  auto spirv = compile_glsl(name, glsl, options_);
  if (!spirv.ok()) return spirv.status();
  counters().kernels_compiled++;
  if (!path.empty()) {
    absl::Status s = write_cache_file(path, kMagic, key, spirv->data(), spirv->size() * 4);
    if (!s.ok()) std::fprintf(stderr, "kiln: warning: kernel cache: %s\n", std::string(s.message()).c_str());
  }
  return spirv;
}

}  // namespace kiln::runtime::vk
