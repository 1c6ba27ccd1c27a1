// Chained kernels (ir::Kernel::finish, passes/chain_reduce.h): a kernel storing P partial results
// per output also folds them, in the same launch. Each thread that stores a partial (of output f,
// at element f * P + p of the partials) then makes its stores visible device-wide and takes a
// ticket of f (an atomic add on a zeroed counter); the one that draws P - 1 knows that every
// partial of f is stored, reads them back past its multiprocessor's cache (coherent bindings),
// folds them in the order p = 0, 1, ... (or, for a workgroup, in the fixed tree of the row
// strategy), stores f's results and sets the ticket back to zero for the next launch. Which
// workgroup finishes an output varies between launches; the results do not.
//
// Two shapes: a workgroup per partial (the row strategy with a workgroup per row: W4a's 512
// partials of one sum) has thread 0 take the ticket and the whole workgroup fold; every other
// strategy (column tiles: W4b's partials, 4 per column) has the storing thread fold alone.
#include "codegen/c_family/renderer.h"

namespace kiln::codegen::gpu::render_detail {

const ir::Store& Renderer::partials_store() const {
  const ir::Kernel& f = k_.finish[0];
  for (const ir::KNode& n : f.nodes)
    if (n.op == Op::kLoad && n.inner)
      for (const ir::Store& s : k_.stores)
        if (s.buffer == n.buffer) return s;
  return k_.stores[0];  // (the Program verifier guarantees one of the above)
}

std::vector<BufferParam> Renderer::bindings() const {
  std::vector<BufferParam> bufs = w_.params();
  if (!fin_) return bufs;
  std::map<int, BufferParam> all;
  for (const BufferParam& b : bufs) all[b.id] = b;
  for (const BufferParam& b : fin_->w_.params()) {
    auto [it, fresh] = all.emplace(b.id, b);
    if (!fresh) it->second.written = it->second.written || b.written;
  }
  all[k_.tickets] = BufferParam{k_.tickets, DType::kUInt32, true};
  all[k_.tickets].coherent = true;
  all[partials_store().buffer].coherent = true;
  std::vector<BufferParam> r;
  for (auto& [id, b] : all) {
    b.aliased = false;
    r.push_back(b);
  }
  for (BufferParam& b : r)
    for (const BufferParam& o : r) b.aliased = b.aliased || ir::share_bytes(p_, b.id, o.id);
  return r;
}

std::string Renderer::finish_output_of_partial() {
  const std::string f = w_.fresh("fo");
  w_.line(absl::StrCat(w_.idx_t(), " ", f, " = ", w_.element_index(partials_store().map), " / ",
                       w_.ilit(k_.finish[0].shape.back()), ";"));
  return f;
}

std::string Renderer::ticket_reset(const std::string& f) const {
  return absl::StrCat(d_.element(DialectOps::buffer_name(k_.tickets), f), " = 0u;");
}

void Renderer::finish_after_store() {
  const int64_t P = k_.finish[0].shape.back();
  const std::string f = finish_output_of_partial();
  w_.line(d_.device_fence());
  w_.open(absl::StrCat("if (", d_.take_ticket(k_.tickets, f), " == ", P - 1, "u)"));
  w_.line(d_.device_fence());
  w_.raw(fin_->finish_output(f, w_.depth(), "", 1));
  w_.line(ticket_reset(f));
  w_.close();
}

void Renderer::finish_by_workgroup(const std::string& lid, int block) {
  const int64_t P = k_.finish[0].shape.back();
  const std::string flag = shared_array(DType::kInt32, 1);
  const std::string f = finish_output_of_partial();
  w_.open(absl::StrCat("if (", lid, " == 0)"));
  w_.line(d_.device_fence());
  w_.line(absl::StrCat(flag, "[0] = ", d_.take_ticket(k_.tickets, f), " == ", P - 1, "u ? 1 : 0;"));
  w_.close();
  w_.line(d_.barrier());
  // Every thread reads the flag before thread 0 can write it again: that is after the next
  // barrier (the next output's reduction, or the finish's own).
  w_.open(absl::StrCat("if (", flag, "[0] != 0)"));
  w_.line(d_.device_fence());
  w_.raw(fin_->finish_output(f, w_.depth(), lid, block));
  w_.open(absl::StrCat("if (", lid, " == 0)"));
  w_.line(ticket_reset(f));
  w_.close();
  w_.close();
}

std::string Renderer::finish_output(const std::string& f, int depth, const std::string& lid, int block) {
  const size_t from = w_.body().size();
  w_.set_depth(depth);
  w_.open("");
  w_.line(absl::StrCat(w_.idx_t(), " ", w_.prefix(), "o = ", idx_cast(f), ";"));
  w_.unravel(absl::StrCat(w_.prefix(), "o"), outer_axes_);
  const bool together = !lid.empty();
  for (KNodeId ph : phases_) {
    const ir::KNode& rn = k_.nodes[ph];
    KernelWriter::Acc acc = w_.declare_acc(ph);
    auto fold = [&](const std::string& rv) { w_.update_acc(ph, acc, w_.eval(rn.inputs[0]), rv); };
    std::string r;
    if (together) {
      strided_positions(idx_cast(lid), block, fold);
      r = block_reduce(ph, acc, lid, block);
    } else {
      reduce_loops(0, [&] { fold(flat_reduce_index()); });
      r = w_.fresh("red");
      w_.line(absl::StrCat(d_.type(rn.dtype), " ", r, " = ", w_.acc_result(ph, acc), ";"));
    }
    w_.bind(ph, r);
  }
  if (together) w_.open(absl::StrCat("if (", lid, " == 0)"));
  for (const ir::Store& s : k_.stores) w_.store(s);
  if (together) w_.close();
  w_.close();
  return w_.body().substr(from);
}

}  // namespace kiln::codegen::gpu::render_detail
