// Ragged work: a segment_reduce's segments differ in length (CSR rows, bags of embeddings,
// variable-length sequences), so a fixed thread mapping either leaves threads idle on short
// segments or serializes long ones. Three strategies, one per regime:
//
//   thread  each output element walks its segment alone (the elementwise strategy; KernelWriter
//           emits the loop): wide rows (>= 32 columns), where neighbouring threads read
//           neighbouring columns of the same row.
//   block   a workgroup per segment (grid-stride over segments), threads striding over the
//           segment's rows and meeting in the block reduction (narrow rows: thread t takes
//           column t % R, so the workgroup reads whole rows, and partials meet per column): the
//           classic one-block-per-item launch; any dialect.
//   queue   a persistent kernel (CUDA): as many warps as fit on the GPU take batches of 32
//           segments, the first by their place in the grid and the rest from an atomic counter
//           (one atomic per batch, by lane 0); each lane folds one segment of the batch of at
//           most 32 rows alone, then the whole warp reduces the batch's longer ones in turn
//           (lanes over rows and columns, xor shuffles). A warp held up by a long segment does
//           not hold up the others, and a short segment costs one lane. The counters live in a
//           module global of the kernel's own, zero at module load; the last block to finish
//           resets them for the next launch (KernelSource::own_state).
//
// KILN_GPU_SEGMENTS or the kernel's config ("segments=block") forces one. By default (the
// lengths are run-time data, their mean rows / segments is known): rows of 32 columns or more a
// thread per output; segments of 256 rows or more on average (32 off CUDA) a workgroup each;
// shorter ones the queue on CUDA, a thread per output elsewhere (bench/results/h100-2026-11-26-segments).
#include "codegen/c_family/renderer.h"

namespace kiln::codegen::gpu::render_detail {

KNodeId Renderer::segment_node() const {
  KNodeId found = -1;
  for (size_t i = 0; i < k_.nodes.size(); ++i) {
    if (k_.nodes[i].op != Op::kSegmentReduce) continue;
    if (found >= 0) return -1;
    found = KNodeId(i);
  }
  return found;
}

// Whether the kernel iterates the segment_reduce's own result: axis 0 the segments, the other
// axes its columns (the value's load addresses the result through the identity), with nothing
// else that needs a thread mapping of its own.
bool Renderer::segment_cooperative(int64_t* segments, int64_t* width) const {
  const KNodeId seg = segment_node();
  if (seg < 0 || !reduce_axes_.empty() || k_.serial || k_.contraction.reduce >= 0 || attention_node() >= 0) return false;
  const ir::KNode& v = k_.nodes[size_t(k_.nodes[size_t(seg)].inputs[2])];
  if (!ir::is_indexed_load(v) || v.ints.size() != 3 || v.ints[1] != 0) return false;
  const size_t split = size_t(v.ints[0]);
  if (v.map.views.size() != split + 1 || k_.shape.empty() || k_.shape[0] != v.ints[2]) return false;
  const ir::View& m = v.map.views[split];
  const ir::View id = ir::View::contiguous(k_.shape);
  if (m.shape != id.shape || m.strides != id.strides || m.offset != 0 || m.has_mask()) return false;
  *segments = k_.shape[0];
  *width = *segments > 0 ? shape_numel(k_.shape) / *segments : 0;
  return *segments > 0;
}

std::string Renderer::segment_strategy() const {
  const KNodeId seg = segment_node();
  if (seg < 0) return "";
  int64_t S = 0, R = 0;
  if (!segment_cooperative(&S, &R)) return "thread";
  const DType at = w_.acc_type(seg);
  const bool queue_ok = d_.kind() == Dialect::kCuda && d_.warp_size(t_) == 32 && d_.can_shuffle(at);
  std::string forced = support::options().gpu_segments;
  if (forced.empty()) forced = config_value(k_.config, "segments");
  if (forced == "queue" && !queue_ok) return "block";
  if (forced == "thread" || forced == "block" || forced == "queue") return forced;
  // Rows per segment on average (the lengths themselves are run-time data): long segments keep a
  // whole workgroup busy each; short ones are best walked by one lane each (the queue's lanes on
  // CUDA, with its warps for the few long ones; elsewhere a thread per output).
  const int64_t rows = k_.nodes[size_t(seg)].ints[1], mean = rows / std::max<int64_t>(S, 1);
  if (R >= 32) return "thread";
  if (mean >= (queue_ok ? 256 : 32)) return "block";
  return queue_ok ? "queue" : "thread";
}

// The segment's row range, evaluated once with the column axes at 0 (the offsets are read at
// (s, 0...): segment_cooperative's identity map gives them stride 0 along the columns).
KernelWriter::Segment Renderer::segment_range(KNodeId seg) {
  for (size_t a = 1; a < k_.shape.size(); ++a) w_.set_axis(int(a), w_.ilit(0));
  return w_.segment_bounds(seg);
}

// For each column of the current segment (axis 0 bound, range `b`): this thread folds rows
// b.lo + first, + step, ..., `reduce` combines the team's accumulators into a value the thread
// `lead` holds, and `lead` stores the outputs.
void Renderer::segment_columns(KNodeId seg, const KernelWriter::Segment& b, int64_t width, const std::string& lead,
                               const std::string& first, int64_t step,
                               const std::function<std::string(KernelWriter::Acc&)>& reduce) {
  std::vector<int> cols;
  for (size_t a = 1; a < k_.shape.size(); ++a) cols.push_back(int(a));
  const std::string col = w_.fresh("col"), i64 = d_.type(DType::kInt64);
  if (!cols.empty()) {
    w_.open(absl::StrCat("for (", w_.idx_t(), " ", col, " = ", w_.ilit(0), "; ", col, " < ", w_.ilit(width), "; ++", col, ")"));
    w_.unravel(col, cols);
  } else {
    w_.open("");
  }
  w_.push_scope();
  KernelWriter::Acc acc = w_.declare_acc(seg);
  const std::string row = w_.fresh("row");
  const std::string from = first == "0" ? b.lo : absl::StrCat(b.lo, " + ", d_.convert(i64, first));
  w_.open(absl::StrCat("for (", i64, " ", row, " = ", from, "; ", row, " < ", b.hi, "; ", row,
                       step == 1 ? " += 1" : absl::StrCat(" += ", d_.literal(DType::kInt64, Scalar::from_int(step))), ")"));
  w_.push_scope();
  w_.update_acc(seg, acc, w_.segment_row(seg, row), "");
  w_.pop_scope();
  w_.close();
  w_.bind(seg, reduce(acc));
  w_.open(absl::StrCat("if (", lead, ")"));
  for (const ir::Store& s : k_.stores) w_.store(s);
  w_.close();
  w_.pop_scope();
  w_.close();
}

// The current segment reduced by a whole warp: with a width that divides 32, lane l takes column
// l % width of rows lo + l / width, + 32 / width, ... (the warp reads whole rows at a time) and
// xor shuffles over the lanes of one column leave its result in lane `column`; other widths walk
// the columns in turn, every lane striding over rows.
void Renderer::segment_warp(KNodeId seg, const KernelWriter::Segment& b, int64_t width) {
  const int ws = 32;
  const DType at = w_.acc_type(seg);
  auto shuffle_down_to = [&](KernelWriter::Acc& acc, int64_t lowest) {
    for (int64_t m = ws / 2; m >= lowest; m /= 2) {
      const std::string other = w_.fresh("sh");
      w_.line(absl::StrCat(d_.type(at), " ", other, " = ", d_.shuffle_xor(at, acc.value, int(m)), ";"));
      w_.combine_into(seg, acc.value, acc.index, other, "");
    }
    return w_.acc_result(seg, acc);
  };
  if (width <= 1 || ws % width != 0 || k_.shape.size() < 2) {
    segment_columns(seg, b, width, "lane == 0u", "lane", ws, [&](KernelWriter::Acc& acc) { return shuffle_down_to(acc, 1); });
    return;
  }
  std::vector<int> cols;
  for (size_t a = 1; a < k_.shape.size(); ++a) cols.push_back(int(a));
  const std::string col = w_.fresh("col"), i64 = d_.type(DType::kInt64), row = w_.fresh("row");
  w_.open("");
  w_.line(absl::StrCat(w_.idx_t(), " ", col, " = (", w_.idx_t(), ")(lane % ", width, "u);"));
  w_.unravel(col, cols);
  w_.push_scope();
  KernelWriter::Acc acc = w_.declare_acc(seg);
  w_.open(absl::StrCat("for (", i64, " ", row, " = ", b.lo, " + (", i64, ")(lane / ", width, "u); ", row, " < ", b.hi, "; ",
                       row, " += ", ws / width, ")"));
  w_.push_scope();
  w_.update_acc(seg, acc, w_.segment_row(seg, row), "");
  w_.pop_scope();
  w_.close();
  w_.bind(seg, shuffle_down_to(acc, width));
  w_.open(absl::StrCat("if (lane < ", width, "u)"));
  for (const ir::Store& s : k_.stores) w_.store(s);
  w_.close();
  w_.pop_scope();
  w_.close();
}

// The current segment folded by this thread alone, its outputs stored. Up to 16 columns: one
// pass over the rows, each row's columns (contiguous) into an accumulator each; wider rows a
// pass per column.
void Renderer::segment_alone(KNodeId seg, const KernelWriter::Segment& b, int64_t width) {
  if (width > 16 || k_.shape.size() < 2) {
    segment_columns(seg, b, width, "true", "0", 1, [&](KernelWriter::Acc& acc) { return w_.acc_result(seg, acc); });
    return;
  }
  // Column c's coordinates over the kernel's axes 1.. (row-major), as literals.
  auto at_column = [&](int64_t c) {
    for (size_t a = k_.shape.size(); a-- > 1;) {
      w_.set_axis(int(a), w_.ilit(c % k_.shape[a]));
      c /= k_.shape[a];
    }
  };
  std::vector<KernelWriter::Acc> accs;
  for (int64_t c = 0; c < width; ++c) accs.push_back(w_.declare_acc(seg));
  const std::string row = w_.fresh("row"), i64 = d_.type(DType::kInt64);
  w_.open(absl::StrCat("for (", i64, " ", row, " = ", b.lo, "; ", row, " < ", b.hi, "; ", row, " += 1)"));
  for (int64_t c = 0; c < width; ++c) {
    at_column(c);
    w_.push_scope();
    w_.update_acc(seg, accs[size_t(c)], w_.segment_row(seg, row), "");
    w_.pop_scope();
  }
  w_.close();
  for (int64_t c = 0; c < width; ++c) {
    at_column(c);
    w_.push_scope();
    w_.bind(seg, w_.acc_result(seg, accs[size_t(c)]));
    for (const ir::Store& st : k_.stores) w_.store(st);
    w_.pop_scope();
  }
}

int Renderer::segment_block(KernelSource* out) {
  const int block = 256;
  const KNodeId seg = segment_node();
  int64_t S = 0, R = 0;
  segment_cooperative(&S, &R);
  const std::string lid = idx_cast(d_.local_id());
  grid_loop("sg", S, idx_cast(d_.group_id()), idx_cast(d_.num_groups()));
  w_.set_axis(0, "sg");
  w_.push_scope();
  const KernelWriter::Segment b = segment_range(seg);
  const int ws = d_.warp_size(t_);
  const DType at = w_.acc_type(seg);
  if (R > 1 && k_.shape.size() >= 2 && ws > 0 && ws % R == 0 && block % ws == 0 && d_.can_shuffle(at) &&
      support::options().gpu_shuffle) {
    // Thread t takes column t % R of rows lo + t / R, + block / R, ...: the block reads whole rows
    // at a time. Xor shuffles combine a warp's lanes of one column, one shared slot per warp and
    // column holds the warp's partial, and thread c < R folds those of column c and stores.
    std::vector<int> cols;
    for (size_t a = 1; a < k_.shape.size(); ++a) cols.push_back(int(a));
    const std::string col = w_.fresh("col"), i64 = d_.type(DType::kInt64), row = w_.fresh("row");
    const std::string lane = d_.lane_of(lid, ws), warp = d_.warp_of(lid, ws);
    const std::string partial = shared_array(at, (block / ws) * R);
    w_.line(absl::StrCat(w_.idx_t(), " ", col, " = ", lid, " % ", w_.ilit(R), ";"));
    w_.unravel(col, cols);
    KernelWriter::Acc acc = w_.declare_acc(seg);
    w_.open(absl::StrCat("for (", i64, " ", row, " = ", b.lo, " + ", d_.convert(i64, absl::StrCat(lid, " / ", w_.ilit(R))), "; ",
                         row, " < ", b.hi, "; ", row, " += ", d_.literal(DType::kInt64, Scalar::from_int(block / R)), ")"));
    w_.push_scope();
    w_.update_acc(seg, acc, w_.segment_row(seg, row), "");
    w_.pop_scope();
    w_.close();
    for (int64_t m = ws / 2; m >= R; m /= 2) {
      const std::string other = w_.fresh("sh");
      w_.line(absl::StrCat(d_.type(at), " ", other, " = ", d_.shuffle_xor(at, acc.value, int(m)), ";"));
      w_.combine_into(seg, acc.value, acc.index, other, "");
    }
    w_.open(absl::StrCat("if (", lane, " < ", w_.ilit(R), ")"));
    w_.line(absl::StrCat(partial, "[", warp, " * ", w_.ilit(R), " + ", lane, "] = ", acc.value, ";"));
    w_.close();
    w_.line(d_.barrier());
    w_.open(absl::StrCat("if (", lid, " < ", w_.ilit(R), ")"));
    KernelWriter::Acc total = w_.declare_acc(seg);
    for (int w = 0; w < block / ws; ++w)
      w_.combine_into(seg, total.value, total.index, absl::StrCat(partial, "[", w * R, " + ", lid, "]"), "");
    w_.bind(seg, w_.acc_result(seg, total));
    for (const ir::Store& st : k_.stores) w_.store(st);
    w_.close();
    w_.line(d_.barrier());  // the partials are written again for the next segment
  } else {
    segment_columns(seg, b, R, absl::StrCat(lid, " == ", w_.ilit(0)), lid, block,
                    [&](KernelWriter::Acc& acc) { return block_reduce(seg, acc, lid, block); });
  }
  w_.pop_scope();
  w_.close();
  const int64_t limit = d_.kind() == Dialect::kGlsl ? 65535 : int64_t(INT32_MAX);
  out->grid[0] = uint32_t(std::min<int64_t>(S, limit));
  out->strategy = absl::StrCat("segments: a workgroup per segment (", S, " segments of ", R, " columns)");
  return block;
}

// Batches of 32 segments: warp w takes batch w first (no atomic), then, where the grid's warps
// do not cover every segment that way, pulls the next batches from the queue (lane 0, one atomic
// per batch). In a batch, lane j folds segment base + j alone when it has at most 32 rows; the
// longer ones (a ballot) are then reduced by the whole warp in turn. Each block counts itself
// done once its warps are; the last block resets the queue for the next launch.
int Renderer::segment_queue(KernelSource* out) {
  const int block = 256, ws = 32;
  const KNodeId seg = segment_node();
  int64_t S = 0, R = 0;
  segment_cooperative(&S, &R);
  const std::string q = absl::StrCat(name_, "_queue");
  prologue_ = absl::StrCat("// The work queue of ", name_, ": [0] batches handed out past the first round, [1] blocks done.\n",
                           "__device__ unsigned long long ", q, "[2];\n");
  const std::string u64 = "unsigned long long", it = w_.idx_t(), seg_count = absl::StrCat(S, "ull");
  w_.line("const unsigned lane = threadIdx.x % 32u;");
  w_.line(absl::StrCat("const ", u64, " warps = (", u64, ")gridDim.x * (blockDim.x / 32u);"));
  w_.line(absl::StrCat("const bool pulls = warps * ", ws, "ull < ", seg_count, ";"));
  w_.line(absl::StrCat(u64, " base = ((", u64, ")blockIdx.x * (blockDim.x / 32u) + threadIdx.x / 32u) * ", ws, "ull;"));
  w_.open(absl::StrCat("while (base < ", seg_count, ")"));
  w_.line("bool is_long = false;");
  w_.open(absl::StrCat("if (base + lane < ", seg_count, ")"));
  w_.line(absl::StrCat(it, " mine = (", it, ")(base + lane);"));
  w_.set_axis(0, "mine");
  w_.push_scope();
  KernelWriter::Segment b = segment_range(seg);
  w_.line(absl::StrCat("is_long = ", b.hi, " - ", b.lo, " > ", ws, ";"));
  w_.open("if (!is_long)");
  segment_alone(seg, b, R);
  w_.close();
  w_.pop_scope();
  w_.close();
  w_.line("unsigned long_ones = __ballot_sync(0xffffffffu, is_long);");
  w_.open("while (long_ones != 0u)");
  w_.line("const unsigned j = (unsigned)(__ffs(long_ones) - 1);");
  w_.line("long_ones &= long_ones - 1u;");
  w_.line(absl::StrCat(it, " sg = (", it, ")(base + j);"));
  w_.set_axis(0, "sg");
  w_.push_scope();
  b = segment_range(seg);
  segment_warp(seg, b, R);
  w_.pop_scope();
  w_.close();
  w_.line("if (!pulls) break;");
  w_.line(absl::StrCat("if (lane == 0u) base = warps * ", ws, "ull + atomicAdd(&", q, "[0], ", ws, "ull);"));
  w_.line("base = __shfl_sync(0xffffffffu, base, 0);");
  w_.close();
  // Every pull of the block's warps happened before the block counts itself done; the last
  // block resets the queue.
  w_.open("if (pulls)");
  w_.line("__syncthreads();");
  w_.open("if (threadIdx.x == 0u)");
  w_.line("__threadfence();");
  w_.open(absl::StrCat("if (atomicAdd(&", q, "[1], 1ull) == (", u64, ")gridDim.x - 1ull)"));
  w_.line(absl::StrCat("atomicExch(&", q, "[0], 0ull);"));
  w_.line(absl::StrCat("atomicExch(&", q, "[1], 0ull);"));
  w_.close();
  w_.close();
  w_.close();
  int64_t grid = std::min<int64_t>(int64_t(t_.parallelism) * 8, ceil_div(S, block));
  if (const int cap = support::options().gpu_segments_grid; cap > 0) grid = std::min<int64_t>(grid, cap);
  out->grid[0] = uint32_t(std::max<int64_t>(1, grid));
  out->strategy = absl::StrCat("segments: persistent warps take batches of ", ws,
                               " from a work queue, a lane per short segment, the warp per long one (", S,
                               " segments of ", R, " columns)");
  return block;
}

}  // namespace kiln::codegen::gpu::render_detail
