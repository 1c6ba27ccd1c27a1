// Column reductions: a reduction whose rows are strided in memory (the mean over axis 0 of a
// row-major matrix, W4b) while its outputs are contiguous. One thread per output walking its
// column (the per-output strategy) reads coalesced, but keeps the device busy only with hundreds
// of thousands of outputs. Here a workgroup takes a tile of 32 outputs, neighbouring along the
// thread-order axis (contiguous in memory), and splits the reduce axis among W groups of 32
// threads: group g folds positions g, g + W, g + 2W ... of its column, so that each group reads 32
// neighbouring elements of one row at a time; the W partials of each column meet in shared memory
// and every thread folds them in the same fixed order (group 0 first), so the result is
// deterministic and every thread of the column holds it for the next phase.
//
// Measured on an H100 (bench/results/h100-2026-11-27-columns): W4b (16384 x 4096) as one kernel
// of 128 such tiles with W = 32 reads at 97.6% of the copy ceiling on CUDA but 85.6% on Vulkan
// (W = 16: 82% and 62%); split into 4 chunks of rows (16384 partial outputs, 512 tiles) with
// W = 16 and a second kernel summing the partials, 97.7% on CUDA and 92.7% on Vulkan, where the
// split pair with a thread per output reached 92% and 89%. With the partials folded in the same
// launch (chain.cc), 8 chunks (1024 tiles) with W = 8 did best on an H200
// (bench/results/h100-2026-11-27-chain, call 5). So the split pass cuts a GPU column reduction
// into chunks until it has 128 outputs per multiprocessor (passes/pipeline.cc), larger ones run
// in one pass, and W is the fewest groups that give the kernel half a wave of threads.
#include "codegen/c_family/renderer.h"

namespace kiln::codegen::gpu::render_detail {

namespace {
constexpr int kTileOutputs = 32;
// Groups of 32 threads per tile: the fewest of 8, 16 and 32 that give the kernel half a wave of
// threads (1024 per multiprocessor), so that few tiles still fill the device and many keep small
// workgroups (KILN_GPU_COLUMN_GROUPS overrides it; at most the workgroup).
int column_groups(const ir::TargetInfo& t, int64_t outputs) {
  const int most = std::max(1, std::min(t.max_workgroup, 1024) / kTileOutputs);
  int want = support::options().gpu_column_groups;
  if (want <= 0) {
    const int64_t tiles = (outputs + kTileOutputs - 1) / kTileOutputs;
    want = 8;
    while (want < 32 && tiles * want * kTileOutputs < int64_t(t.parallelism) * 1024) want *= 2;
  }
  return std::max(1, std::min(most, want));
}
}  // namespace

bool Renderer::use_column_tiles() const {
  if (!support::options().gpu_column_tiles) return false;  // debugging knob (KILN_GPU_COLUMN_TILES=0)
  // Fewer outputs than a tile would leave most lanes idle: the row strategy's workgroup per output
  // keeps every thread busy there.
  if (k_.serial || phases_.empty() || k_.outer_count() < kTileOutputs || k_.any_symbolic() ||
      t_.max_workgroup < 2 * kTileOutputs)
    return false;
  for (KNodeId ph : phases_)
    if (k_.nodes[ph].op == Op::kSegmentReduce) return false;
  // Rows contiguous in memory (or not moving) are the row strategy's.
  const int64_t s = load_stride(reduce_axes_.back());
  if (s == 1 || s == 0) return false;
  // Each group folds at least 8 positions, and one thread per output would leave most of the
  // device idle (fewer outputs than a full wave of threads).
  return k_.reduce_count() >= 8 * int64_t(column_groups(t_, k_.outer_count())) && k_.outer_count() < int64_t(t_.parallelism) * 2048;
}

int Renderer::column_tiles(KernelSource* out) {
  const int W = column_groups(t_, k_.outer_count());
  const int block = W * kTileOutputs;
  const int64_t O = k_.outer_count();
  const int64_t tiles = ceil_div(O, kTileOutputs);
  std::string lid = w_.fresh("lid");
  w_.line(absl::StrCat("int ", lid, " = ", d_.local_id(), ";"));
  std::string lane = w_.fresh("lane"), grp = w_.fresh("grp");
  // Plain arithmetic, not the dialect's subgroup lane: the tile needs 32 neighbouring threads,
  // whatever the device's subgroup width.
  w_.line(absl::StrCat("int ", lane, " = ", lid, " % ", kTileOutputs, ";"));
  w_.line(absl::StrCat("int ", grp, " = ", lid, " / ", kTileOutputs, ";"));
  grid_loop("t", tiles, idx_cast(d_.group_id()), idx_cast(d_.num_groups()));
  // Outputs past the last one (a partial tile) read the last output's column and store nothing:
  // every thread reaches the workgroup barriers.
  w_.line(absl::StrCat(w_.idx_t(), " o = t * ", w_.ilit(kTileOutputs), " + ", idx_cast(lane), ";"));
  w_.line(absl::StrCat("bool live = o < ", w_.ilit(O), ";"));
  w_.line(absl::StrCat(w_.idx_t(), " oc = live ? o : ", w_.ilit(O - 1), ";"));
  w_.unravel("oc", thread_axis_order());
  const int64_t pitch = kTileOutputs + 1;  // one padding slot per group: no bank conflicts
  auto positions = [&](const std::function<void(const std::string&)>& body) { strided_positions(idx_cast(grp), W, body); };
  for (KNodeId ph : phases_) {
    const ir::KNode& rn = k_.nodes[ph];
    const DType at = w_.acc_type(ph);
    const bool arg = ir::is_arg_reduce(rn.op);
    KernelWriter::Acc acc = w_.declare_acc(ph);
    positions([&](const std::string& rv) { w_.update_acc(ph, acc, w_.eval(rn.inputs[0]), rv); });
    std::string sv = scratch(at, W * pitch), si = arg ? scratch(DType::kInt64, W * pitch, 1) : "";
    std::string slot = absl::StrCat(grp, " * ", pitch, " + ", lane);
    w_.line(absl::StrCat(sv, "[", slot, "] = ", acc.value, ";"));
    if (arg) w_.line(absl::StrCat(si, "[", slot, "] = ", acc.index, ";"));
    w_.line(d_.barrier());
    KernelWriter::Acc fin = w_.declare_acc(ph);
    w_.open(absl::StrCat("for (int k = 0; k < ", W, "; ++k)"));
    std::string at_k = absl::StrCat("k * ", pitch, " + ", lane);
    w_.combine_into(ph, fin.value, fin.index, absl::StrCat(sv, "[", at_k, "]"), arg ? absl::StrCat(si, "[", at_k, "]") : "");
    w_.close();
    std::string r = w_.fresh("red");
    w_.line(absl::StrCat(d_.type(rn.dtype), " ", r, " = ", w_.acc_result(ph, fin), ";"));
    w_.line(d_.barrier());  // the scratch slots may be reused by the next phase or tile
    w_.bind(ph, r);
  }
  write_stores(absl::StrCat("live && ", grp, " == 0"), [&](const std::function<void()>& at) {
    w_.open("if (live)");
    positions([&](const std::string&) { at(); });
    w_.close();
  });
  w_.close();
  out->grid[0] = uint32_t(std::min<int64_t>(tiles, max_groups_));
  out->strategy = absl::StrCat("column tiles: ", kTileOutputs, " outputs per workgroup, the reduction split ", W,
                               " ways, partials combined in shared memory");
  return block;
}

}  // namespace kiln::codegen::gpu::render_detail
