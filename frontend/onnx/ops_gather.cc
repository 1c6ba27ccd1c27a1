// Gathers and scatters with indices read at run time: GatherElements, GatherND,
// ScatterElements, ScatterND and the old Scatter, each one kiln op (frontend/gather.cc,
// frontend/scatter.cc). Gather itself is in ops_shape.cc (constant indices become slices there).
// ONNX calls an index outside its axis an error; kiln cannot raise one from a kernel, so such an
// index reads 0 (gathers) or drops its update (scatters), as kiln's ops define.
#include "absl/strings/str_cat.h"
#include "frontend/onnx/ops.h"

namespace kiln::onnx {
namespace {

void require_indices(NodeContext& c, size_t i) { c.require_dtype(i, {DType::kInt32, DType::kInt64}); }

ScatterReduction reduction_of(NodeContext& c) {
  std::string r = c.attr_string("reduction", "none");
  if (r == "none") return ScatterReduction::kNone;
  if (r == "add") return ScatterReduction::kAdd;
  if (r == "mul") return ScatterReduction::kMul;
  if (r == "max") return ScatterReduction::kMax;
  if (r == "min") return ScatterReduction::kMin;
  c.invalid(absl::StrCat("unknown reduction '", r, "'"));
}

void gather_elements_op(NodeContext& c) {
  require_indices(c, 1);
  c.set(0, take_along_axis(c.in(0), c.in(1), c.axis(c.attr_int("axis", 0), c.rank(0))));
}

void gather_nd_op(NodeContext& c) {
  require_indices(c, 1);
  c.set(0, gather_nd(c.in(0), c.in(1), c.attr_int("batch_dims", 0)));
}

void scatter_elements_op(NodeContext& c) {
  require_indices(c, 1);
  c.set(0, scatter(c.in(0), c.axis(c.attr_int("axis", 0), c.rank(0)), c.in(1), c.in(2), reduction_of(c)));
}

void scatter_nd_op(NodeContext& c) {
  require_indices(c, 1);
  c.set(0, scatter_nd(c.in(0), c.in(1), c.in(2), reduction_of(c)));
}

}  // namespace

void register_gather_ops(OpTable& t) {
  t["GatherElements"] = {gather_elements_op, {"axis"}, {}};
  t["GatherND"] = {gather_nd_op, {"batch_dims"}, {}};
  t["ScatterElements"] = {scatter_elements_op, {"axis", "reduction"}, {}};
  t["Scatter"] = {scatter_elements_op, {"axis"}, {}};
  t["ScatterND"] = {scatter_nd_op, {"reduction"}, {}};
}

}  // namespace kiln::onnx
