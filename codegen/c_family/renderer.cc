// The shared C-family GPU renderer: maps each kernel's iteration space onto threads and writes
// it in the requested dialect.
//
// Strategies:
//   elementwise     one thread per element, grid-stride loop over the flattened space
//   row reduction   one workgroup per outer index when the reduced axis is contiguous in memory:
//                   threads stride over the row, partial results meet in a shared-memory tree,
//                   every thread sees each finished reduction (softmax/layer_norm in one kernel)
//   per-output      one thread per outer index looping over the reduce axes, with the thread
//                   index running along the outer axis that is contiguous (coalesced columns)
//   contraction     64x64 output tiles per workgroup, 16-deep k slices staged in shared memory,
//                   4x4 outputs per thread, the elementwise epilogue applied per output
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "codegen/c_family/dialect.h"
#include "codegen/c_family/kernel_writer.h"
#include "codegen/c_family/renderer.h"

namespace kiln::codegen::gpu {

std::unique_ptr<DialectOps> make_cuda_dialect(bool hip);
std::unique_ptr<DialectOps> make_glsl_dialect();

std::unique_ptr<DialectOps> make_dialect(Dialect d) {
  switch (d) {
    case Dialect::kCuda: return make_cuda_dialect(false);
    case Dialect::kHip: return make_cuda_dialect(true);
    case Dialect::kGlsl: return make_glsl_dialect();
    case Dialect::kMsl: return nullptr;
  }
  return nullptr;
}

using render_detail::Renderer;

absl::StatusOr<RenderedProgram> render(const ir::Program& p, Dialect d, const ir::TargetInfo& t) {
  std::unique_ptr<DialectOps> ops = make_dialect(d);
  if (!ops) return absl::UnimplementedError("render: this dialect has no renderer yet");
  RenderedProgram out;
  Features all;
  std::vector<std::string> bodies;
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    const ir::Kernel& k = p.kernels[i];
    Renderer r(p, k, *ops, t);
    std::string name = absl::StrCat("kiln_", k.name);
    auto ks = r.run(name);
    if (!ks.ok()) return ks.status();
    Features f = r.features();
    all.f64 = all.f64 || f.f64;
    all.i64 = all.i64 || f.i64;
    all.i8 = all.i8 || f.i8;
    all.f16_storage = all.f16_storage || f.f16_storage;
    all.storage.insert(f.storage.begin(), f.storage.end());
    if (d == Dialect::kGlsl || d == Dialect::kMsl) ks->source = ops->preamble(f) + ks->source;
    out.kernels.push_back(*std::move(ks));
  }
  if (d == Dialect::kCuda || d == Dialect::kHip) {
    out.module_source = ops->preamble(all);
    for (KernelSource& k : out.kernels) {
      out.module_source += "\n" + k.source;
      k.source.clear();
    }
  }
  return out;
}

}  // namespace kiln::codegen::gpu
