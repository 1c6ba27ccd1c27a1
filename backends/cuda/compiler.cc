// The CUDA Compiler (compiler.h): render, compile the module through the disk cache, and fill in
// the CompiledProgram's launch information.
#include "backends/cuda/compiler.h"
#include "backends/cuda/control_gates.h"

#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/cuda/target.h"
#include "codegen/c_family/gpu_program.h"
#include "support/options.h"

namespace kiln::runtime::cuda {
namespace {

// Blob layout in the cache: u64 cubin size, the cubin, then the PTX (kept so that a later dump
// can show it).
std::string pack(const CudaBinary& b) {
  uint64_t n = b.cubin.size();
  std::string blob(reinterpret_cast<const char*>(&n), sizeof(n));
  blob += b.cubin;
  blob += b.ptx;
  return blob;
}

// False for a blob of another layout (written by another kiln version).
bool unpack(std::string_view blob, bool keep_ptx, CudaBinary* b) {
  uint64_t n = 0;
  if (blob.size() < sizeof(n)) return false;
  std::memcpy(&n, blob.data(), sizeof(n));
  if (n == 0 || n > blob.size() - sizeof(n)) return false;
  if (b) {
    b->cubin = std::string(blob.substr(sizeof(n), size_t(n)));
    if (keep_ptx) b->ptx = std::string(blob.substr(sizeof(n) + size_t(n)));
  }
  return true;
}

}  // namespace

std::string binary_cache_key(const std::string& source, int cc, bool arch_specific) {
  return absl::StrCat("kiln cuda module v1\nnvrtc ", nvrtc_version(), "\nsm_", cc, arch_specific ? "a" : "", "\n",
                      absl::StrJoin(nvrtc_options(cc, arch_specific), " "), "\n", source);
}

absl::StatusOr<CudaBinary> compile_module(const std::string& source, int cc, int num_kernels, bool keep_ptx,
                                          const CompileCache& cache, bool arch_specific) {
  auto blob = cache.get_or_compile(
      binary_cache_key(source, cc, arch_specific), num_kernels,
      [&]() -> absl::StatusOr<std::string> {
        auto b = nvrtc_compile(source, cc, /*keep_ptx=*/true, arch_specific);
        if (!b.ok()) return b.status();
        return pack(*b);
      },
      [](std::string_view b) { return unpack(b, false, nullptr); },
      absl::StrCat("kiln cuda module v1\nsm_", cc, arch_specific ? "a" : "", "\n", source));
  if (!blob.ok()) return blob.status();
  CudaBinary out;
  unpack(*blob, keep_ptx, &out);
  return out;
}

std::string CudaCompiler::target_key() const { return cuda::target_key(target_); }

std::vector<std::string> CudaCompiler::tuning_candidates(const ir::Program& p, int k, std::string* shape_class) const {
  std::string cls;
  std::vector<std::string> out = codegen::gpu::tuning_candidates(p, k, codegen::gpu::Dialect::kCuda, target_, &cls);
  if (!out.empty()) *shape_class = absl::StrCat("sm_", target_.compute_capability, " ", cls);
  return out;
}

absl::StatusOr<CompiledProgram> CudaCompiler::compile(const ir::Program& p) const {
  const int cc = target_.compute_capability;
  auto rendered = codegen::gpu::render(p, codegen::gpu::Dialect::kCuda, target_);
  if (!rendered.ok()) return rendered.status();
  CompiledProgram c = plan_of(p);
  c.backend = "cuda";
  // A module with sm_90a code runs only on exactly that compute capability: its own key.
  c.target_key = rendered->arch_specific ? target_key() + "a" : target_key();
  const bool keep = support::options().keep_sources();
  // Loops and branches steer their conditional graph nodes with two kernels of the module.
  if (p.has_control()) absl::StrAppend(&rendered->module_source, kControlGatesSource);
  if (!rendered->kernels.empty()) {
    auto bin = compile_module(rendered->module_source, cc, int(rendered->kernels.size()), /*keep_ptx=*/true,
                              CompileCache::for_backend("cuda"), rendered->arch_specific);
    if (!bin.ok()) return bin.status();
    c.module = std::move(bin->cubin);
    if (keep) {
      c.module_source = rendered->module_source;
      if (!bin->ptx.empty()) absl::StrAppend(&c.module_source, "\n// ---- PTX ----\n", bin->ptx);
    }
    // PTX of arch-specific code (sm_90a) does not run on any other architecture.
    if (!rendered->arch_specific) c.portable_module = std::move(bin->ptx);
  }
  if (absl::Status s = codegen::gpu::take_kernels("cuda", &*rendered, &c.kernels); !s.ok()) return s;
  // Tensor maps and strided tiles are CUDA's own (TMA, persistent kernels).
  for (size_t i = 0; i < c.kernels.size(); ++i) {
    const codegen::gpu::KernelSource& k = rendered->kernels[i];
    CompiledKernel& out = c.kernels[i];
    for (const codegen::gpu::TensorMapSpec& m : k.tensor_maps)
      out.tensor_maps.push_back({m.buffer, m.elem_bytes == 4 ? TensorMapDesc::kFloat32 : m.bf16 ? TensorMapDesc::kBFloat16 : TensorMapDesc::kFloat16,
                                 m.offset, m.dims, m.strides, m.box, m.swizzle});
    out.tiles = k.strided_tiles;
  }
  return c;
}

absl::StatusOr<std::unique_ptr<Compiler>> CudaCompiler::create(const ir::TargetInfo& target) {
  if (target.compute_capability <= 0)
    return absl::InvalidArgumentError(absl::StrCat("cuda: a compiler needs a CUDA target (target '", target.name,
                                                   "' has no compute capability)"));
  return std::make_unique<CudaCompiler>(target);
}

}  // namespace kiln::runtime::cuda
