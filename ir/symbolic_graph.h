// Symbolic dimensions of an exported graph: one graph text for every size of a dimension.
//
// kiln::Jit re-traces its function at each new size; an exported graph (kilnc's input, a .kiln
// artifact) has no function to trace, so it carries the sizes' graphs as one template instead:
// the graph at base sizes plus, for each integer of it that depends on the symbols (a shape's
// dim, a slice's count, a reshape's target, the 1/n of a mean), its polynomial in the symbols.
// kiln::export_graph and kilnc derive the template from traces at several sizes (derive_symbols)
// and check it against one more trace; instantiate() writes the graph at any sizes and verifies
// it (every op's shape rules), so a size at which the template does not hold is an error, never
// a wrong graph.
//
// A polynomial is multilinear with integer coefficients (2*batch+4, batch*seq); a scalar may
// also be its reciprocal (mean's 1/n, rounded to the node's dtype). At most kMaxSymbols symbols;
// the bodies of loops and branches may not depend on them. In the text, inside the signature:
//
//   symbol batch = 8
//   input x : f32[batch,784]
//   output probs : f32[batch,10]
//   at %3 shape 0 = batch
//   at %7 ints 1 = 2*batch+4
//   at %9 scalar = 1/(batch*seq)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace kiln::ir {

struct ExportedGraph;

inline constexpr int kMaxSymbols = 3;

struct SymExpr {
  // coef[m] multiplies the product of the symbols whose bits are set in m (coef[0]: the constant).
  std::vector<int64_t> coef;
  bool reciprocal = false;  // scalars only: 1 / the polynomial

  int64_t poly(const std::vector<int64_t>& values) const;
  // The single symbol this expression names with coefficient 1 and nothing else, or -1.
  int plain_symbol() const;
  std::string str(const std::vector<std::string>& names) const;
  bool operator==(const SymExpr& o) const { return coef == o.coef && reciprocal == o.reciprocal; }
};

// Where a symbolic integer sits.
struct SymField {
  enum Kind { kInputDim, kOutputDim, kShape, kInts, kScalar };
  Kind kind = kShape;
  int index = 0;  // signature input / output position, or node id
  int slot = 0;   // dim or ints position (0 for a scalar)
  SymExpr expr;
};

struct SymbolicDims {
  std::vector<std::string> names;
  std::vector<int64_t> base;  // the sizes the graph text is written at
  std::vector<SymField> fields;
  bool empty() const { return names.empty(); }
};

// The template from traces of one function: corners[c] traced with symbol s at hi[s] where bit s
// of c is set, else at lo[s] (2^S graphs, corners[0] the base), and `check` traced at check_values
// (each different from lo and hi). Symbol s must appear as a plain dim of some input. Errors say
// which node or input does not scale as a polynomial or differs in structure between sizes.
absl::StatusOr<SymbolicDims> derive_symbols(const std::vector<std::string>& names, const std::vector<ExportedGraph>& corners,
                                            const std::vector<int64_t>& lo, const std::vector<int64_t>& hi,
                                            const ExportedGraph& check, const std::vector<int64_t>& check_values);

// `e` (with symbols) written at `values`: symbols cleared, every field evaluated, the graph
// verified. InvalidArgument naming the sizes when a dim comes out negative or the graph does
// not hold at them.
absl::StatusOr<ExportedGraph> instantiate(const ExportedGraph& e, const std::vector<int64_t>& values);

// The size of each symbol from the shapes of the signature's inputs (by position); InvalidArgument
// naming the input and dim for a wrong rank, a fixed dim of another size, a symbol bound to two
// sizes, or a dim that disagrees with its expression.
absl::StatusOr<std::vector<int64_t>> bind_symbols(const ExportedGraph& e, const std::vector<Shape>& shapes);

// Text (the lines inside the signature block, see the top of this file).
std::string print_symbol_lines(const ExportedGraph& e);
// "batch", "2*batch+4", "1/(batch*seq)" over `names`; false when malformed.
bool parse_sym_expr(const std::string& text, const std::vector<std::string>& names, SymExpr* out);
// A type's dim list with expressions: "f32[batch,784]" -> dtype, the shape at `base`, and one
// field per symbolic dim (kind and index set by the caller).
bool parse_sym_type(const std::string& text, const SymbolicDims& s, DType* dtype, Shape* shape, std::vector<std::pair<int, SymExpr>>* dims);
// "f32[batch,784]": the shape with each symbolic dim's expression.
std::string sym_type_str(const ExportedGraph& e, bool input, int index);
// A whole-graph check: every field names an existing place whose value at the base sizes is the
// expression's, every symbol is bound by a plain input dim.
absl::Status check_symbols(const ExportedGraph& e);

}  // namespace kiln::ir
