// symbolic_graph.h: deriving a graph template from traces, writing it at sizes, its text.
#include "ir/symbolic_graph.h"

#include <cctype>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <tuple>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "ir/signature.h"

namespace kiln::ir {
namespace {

int64_t monomial(int mask, const std::vector<int64_t>& values) {
  int64_t p = 1;
  for (size_t s = 0; s < values.size(); ++s)
    if (mask >> s & 1) p *= values[s];
  return p;
}

// The multilinear polynomial through the corner values (corner c: symbol s at hi[s] where bit s
// of c is set, else lo[s]), with integer coefficients; false when there is none.
bool fit(const std::vector<long double>& at, const std::vector<int64_t>& lo, const std::vector<int64_t>& hi, SymExpr* out) {
  const size_t n = at.size(), S = lo.size();
  // Gaussian elimination on the 2^S x 2^S system (S <= kMaxSymbols); rounded, then checked exactly.
  std::vector<std::vector<long double>> m(n, std::vector<long double>(n + 1));
  for (size_t c = 0; c < n; ++c) {
    std::vector<int64_t> v(S);
    for (size_t s = 0; s < S; ++s) v[s] = (c >> s & 1) ? hi[s] : lo[s];
    for (size_t k = 0; k < n; ++k) m[c][k] = (long double)monomial(int(k), v);
    m[c][n] = at[c];
  }
  for (size_t col = 0; col < n; ++col) {
    size_t piv = col;
    for (size_t r = col + 1; r < n; ++r)
      if (std::fabs(m[r][col]) > std::fabs(m[piv][col])) piv = r;
    if (m[piv][col] == 0) return false;
    std::swap(m[piv], m[col]);
    for (size_t r = 0; r < n; ++r) {
      if (r == col || m[r][col] == 0) continue;
      const long double f = m[r][col] / m[col][col];
      for (size_t k = col; k <= n; ++k) m[r][k] -= f * m[col][k];
    }
  }
  out->coef.assign(n, 0);
  for (size_t k = 0; k < n; ++k) {
    const long double c = m[k][n] / m[k][k];
    if (!std::isfinite(c) || std::fabs(c) > 1e15L) return false;
    out->coef[k] = int64_t(std::llround(c));
  }
  return true;
}

std::vector<int64_t> corner_values(size_t c, const std::vector<int64_t>& lo, const std::vector<int64_t>& hi) {
  std::vector<int64_t> v(lo.size());
  for (size_t s = 0; s < lo.size(); ++s) v[s] = (c >> s & 1) ? hi[s] : lo[s];
  return v;
}

Scalar scalar_of(const SymExpr& e, const std::vector<int64_t>& values, DType dtype, bool is_int) {
  const int64_t p = e.poly(values);
  if (e.reciprocal) return Scalar::from_double(p ? 1.0 / double(p) : NAN).cast_to(dtype);
  return (is_int ? Scalar::from_int(p) : Scalar::from_double(double(p))).cast_to(dtype);
}

struct Deriver {
  const std::vector<ExportedGraph>& corners;
  const std::vector<int64_t>& lo;
  const std::vector<int64_t>& hi;
  const ExportedGraph& check;
  const std::vector<int64_t>& check_values;
  std::vector<std::vector<int64_t>> points;  // the sizes of each corner, then of the check
  SymbolicDims out;

  const ExportedGraph& at(size_t i) const { return i < corners.size() ? corners[i] : check; }

  // An integer field read from every trace: fixed, or a polynomial that holds at every trace.
  absl::Status integer(SymField::Kind kind, int index, int slot, const std::string& where,
                       const std::function<int64_t(const ExportedGraph&)>& read) {
    std::vector<int64_t> v;
    for (size_t i = 0; i <= corners.size(); ++i) v.push_back(read(at(i)));
    bool same = true;
    for (int64_t x : v) same = same && x == v[0];
    if (same) return absl::OkStatus();
    SymField f{kind, index, slot, {}};
    std::vector<long double> c(v.begin(), v.end() - 1);
    bool ok = fit(c, lo, hi, &f.expr);
    for (size_t i = 0; ok && i < points.size(); ++i) ok = f.expr.poly(points[i]) == v[i];
    if (!ok) return not_polynomial(where, v);
    out.fields.push_back(std::move(f));
    return absl::OkStatus();
  }

  absl::Status scalar(int id, const std::string& where) {
    std::vector<Scalar> v;
    for (size_t i = 0; i <= corners.size(); ++i) v.push_back(at(i).graph.node(id).scalar);
    bool same = true;
    for (const Scalar& x : v) same = same && x == v[0];
    if (same) return absl::OkStatus();
    const Node& n = corners[0].graph.node(id);
    for (bool reciprocal : {false, true}) {
      SymField f{SymField::kScalar, id, 0, {}};
      f.expr.reciprocal = reciprocal;
      std::vector<long double> c;
      bool finite = true;
      for (size_t i = 0; i < corners.size(); ++i) {
        const double x = v[i].as_double(), r = reciprocal ? 1.0 / x : x;
        finite = finite && std::isfinite(r) && std::fabs(r) < 1e15;
        c.push_back(!finite ? 0.0L : reciprocal ? (long double)std::llround(r) : (long double)r);
      }
      bool ok = finite && fit(c, lo, hi, &f.expr);
      for (size_t i = 0; ok && i < points.size(); ++i) ok = scalar_of(f.expr, points[i], n.dtype, v[i].is_int) == v[i];
      if (ok) {
        out.fields.push_back(std::move(f));
        return absl::OkStatus();
      }
    }
    return absl::InvalidArgumentError(absl::StrCat(where, " (a scalar) changes with the symbolic sizes but is neither a polynomial in them "
                                                   "nor 1 over one; make it an input"));
  }

  absl::Status not_polynomial(const std::string& where, const std::vector<int64_t>& v) const {
    std::string seen;
    for (size_t i = 0; i < v.size(); ++i) {
      std::string sizes;
      for (size_t s = 0; s < out.names.size(); ++s) absl::StrAppend(&sizes, s ? "," : "", out.names[s], "=", points[i][s]);
      absl::StrAppend(&seen, i ? "; " : "", v[i], " at ", sizes);
    }
    return absl::InvalidArgumentError(absl::StrCat(where, " is not a polynomial with integer coefficients in the symbolic sizes (",
                                                   seen, ")"));
  }
};

bool same_structure(const Node& a, const Node& b) {
  if (a.op != b.op || a.dtype != b.dtype || a.inputs != b.inputs || a.shape.size() != b.shape.size() ||
      a.ints.size() != b.ints.size() || a.scalar.is_int != b.scalar.is_int || bool(a.regions) != bool(b.regions))
    return false;
  if (a.regions && a.regions != b.regions) {
    if (a.regions->size() != b.regions->size()) return false;
    for (size_t r = 0; r < a.regions->size(); ++r)
      if (!((*a.regions)[r] == (*b.regions)[r])) return false;
  }
  return true;
}

}  // namespace

int64_t SymExpr::poly(const std::vector<int64_t>& values) const {
  int64_t p = 0;
  for (size_t m = 0; m < coef.size(); ++m)
    if (coef[m]) p += coef[m] * monomial(int(m), values);
  return p;
}

int SymExpr::plain_symbol() const {
  if (reciprocal) return -1;
  int found = -1;
  for (size_t m = 0; m < coef.size(); ++m) {
    if (!coef[m]) continue;
    if (found >= 0 || coef[m] != 1 || m == 0 || (m & (m - 1))) return -1;
    found = __builtin_ctz(unsigned(m));
  }
  return found;
}

std::string SymExpr::str(const std::vector<std::string>& names) const {
  std::string p;
  auto term = [&](size_t m) {
    const int64_t c = coef[m];
    std::string t;
    if (m == 0) t = std::to_string(c < 0 ? -c : c);
    else if (c != 1 && c != -1) t = std::to_string(c < 0 ? -c : c);
    for (size_t s = 0; s < names.size(); ++s)
      if (m >> s & 1) absl::StrAppend(&t, t.empty() ? "" : "*", names[s]);
    absl::StrAppend(&p, c < 0 ? "-" : p.empty() ? "" : "+", t);
  };
  for (size_t m = 1; m < coef.size(); ++m)
    if (coef[m]) term(m);
  if (!coef.empty() && (coef[0] || p.empty())) term(0);
  return reciprocal ? absl::StrCat("1/(", p, ")") : p;
}

bool parse_sym_expr(const std::string& text, const std::vector<std::string>& names, SymExpr* out) {
  std::string t = text;
  out->reciprocal = false;
  if (t.rfind("1/(", 0) == 0) {
    if (t.back() != ')') return false;
    out->reciprocal = true;
    t = t.substr(3, t.size() - 4);
  }
  out->coef.assign(size_t(1) << names.size(), 0);
  if (t.empty()) return false;
  size_t i = 0;
  while (i < t.size()) {
    int sign = 1;
    if (t[i] == '+' || t[i] == '-') sign = t[i] == '-' ? -1 : 1, ++i;
    else if (i > 0) return false;
    size_t end = t.find_first_of("+-", i);
    if (end == std::string::npos) end = t.size();
    const std::string term = t.substr(i, end - i);
    if (term.empty()) return false;
    int64_t c = 1;
    int mask = 0;
    bool has_number = false;
    for (absl::string_view f : absl::StrSplit(term, '*')) {
      int64_t v = 0;
      if (!f.empty() && std::isdigit((unsigned char)f[0])) {
        if (has_number || !absl::SimpleAtoi(f, &v)) return false;
        c = v, has_number = true;
        continue;
      }
      size_t s = 0;
      while (s < names.size() && names[s] != f) ++s;
      if (s == names.size() || (mask >> s & 1)) return false;
      mask |= 1 << s;
    }
    out->coef[size_t(mask)] += sign * c;
    i = end;
  }
  return true;
}

absl::StatusOr<SymbolicDims> derive_symbols(const std::vector<std::string>& names, const std::vector<ExportedGraph>& corners,
                                            const std::vector<int64_t>& lo, const std::vector<int64_t>& hi,
                                            const ExportedGraph& check, const std::vector<int64_t>& check_values) {
  const size_t S = names.size();
  if (S == 0 || S > size_t(kMaxSymbols))
    return absl::InvalidArgumentError(absl::StrCat("between 1 and ", kMaxSymbols, " symbolic dimensions, not ", S));
  if (corners.size() != size_t(1) << S || lo.size() != S || hi.size() != S || check_values.size() != S)
    return absl::InvalidArgumentError("symbolic graph: one trace per corner of the sizes");
  for (size_t s = 0; s < S; ++s)
    if (lo[s] == hi[s] || check_values[s] == lo[s] || check_values[s] == hi[s])
      return absl::InvalidArgumentError("symbolic graph: traces at equal sizes");
  Deriver d{corners, lo, hi, check, check_values, {}, {}};
  for (size_t c = 0; c < corners.size(); ++c) d.points.push_back(corner_values(c, lo, hi));
  d.points.push_back(check_values);
  d.out.names = names;
  d.out.base = lo;
  const ExportedGraph& b = corners[0];
  auto sizes = [&](size_t i) {
    std::string r;
    for (size_t s = 0; s < S; ++s) absl::StrAppend(&r, s ? ", " : "", names[s], "=", d.points[i][s]);
    return r;
  };
  for (size_t i = 1; i <= corners.size(); ++i) {
    const ExportedGraph& o = d.at(i);
    auto differs = [&](const std::string& what) {
      return absl::InvalidArgumentError(absl::StrCat("the function records another graph at ", sizes(i), " than at ", sizes(0), ": ", what,
                                                     " (symbolic dimensions need one graph for every size)"));
    };
    if (o.graph.size() != b.graph.size()) return differs(absl::StrCat(o.graph.size(), " nodes instead of ", b.graph.size()));
    if (o.graph.outputs() != b.graph.outputs()) return differs("other outputs");
    for (size_t n = 0; n < b.graph.size(); ++n)
      if (!same_structure(b.graph.node(NodeId(n)), o.graph.node(NodeId(n))))
        return differs(absl::StrCat("node %", n, " (", op_name(b.graph.node(NodeId(n)).op), ") differs in more than its sizes",
                                    b.graph.node(NodeId(n)).regions ? ": a loop or branch body depends on them" : ""));
    if (o.signature.inputs.size() != b.signature.inputs.size() || o.signature.outputs.size() != b.signature.outputs.size())
      return differs("another signature");
    for (size_t k = 0; k < b.signature.inputs.size(); ++k)
      if (o.signature.inputs[k].shape.size() != b.signature.inputs[k].shape.size() || o.signature.inputs[k].used != b.signature.inputs[k].used)
        return differs(absl::StrCat("input ", b.signature.inputs[k].name));
    for (size_t k = 0; k < b.signature.outputs.size(); ++k)
      if (o.signature.outputs[k].shape.size() != b.signature.outputs[k].shape.size())
        return differs(absl::StrCat("output ", b.signature.outputs[k].name, " has another rank"));
    if (o.constants.size() != b.constants.size()) return differs("another number of captured tensors");
    for (size_t k = 0; k < b.constants.size(); ++k)
      if (o.constants[k].shape != b.constants[k].shape || o.constants[k].dtype != b.constants[k].dtype)
        return differs(absl::StrCat("captured tensor ", k, " has another shape (a captured tensor cannot depend on the sizes)"));
  }
  for (const bool in : {true, false}) {
    auto list = [in](const ExportedGraph& e) -> const std::vector<TensorSpec>& { return in ? e.signature.inputs : e.signature.outputs; };
    for (size_t k = 0; k < list(b).size(); ++k)
      for (size_t a = 0; a < list(b)[k].shape.size(); ++a)
        if (absl::Status s = d.integer(in ? SymField::kInputDim : SymField::kOutputDim, int(k), int(a),
                                       absl::StrCat("dim ", a, in ? " of input " : " of output ", list(b)[k].name),
                                       [&](const ExportedGraph& e) { return list(e)[k].shape[a]; });
            !s.ok())
          return s;
  }
  for (size_t n = 0; n < b.graph.size(); ++n) {
    const Node& node = b.graph.node(NodeId(n));
    const std::string where = absl::StrCat("node %", n, " (", op_name(node.op), ")");
    for (size_t a = 0; a < node.shape.size(); ++a)
      if (absl::Status s = d.integer(SymField::kShape, int(n), int(a), absl::StrCat("dim ", a, " of ", where),
                                     [&](const ExportedGraph& e) { return e.graph.node(NodeId(n)).shape[a]; });
          !s.ok())
        return s;
    for (size_t a = 0; a < node.ints.size(); ++a)
      if (absl::Status s = d.integer(SymField::kInts, int(n), int(a), absl::StrCat("attribute ", a, " of ", where),
                                     [&](const ExportedGraph& e) { return e.graph.node(NodeId(n)).ints[a]; });
          !s.ok())
        return s;
    if (absl::Status s = d.scalar(int(n), where); !s.ok()) return s;
  }
  ExportedGraph e = b;
  e.symbols = d.out;
  if (absl::Status s = check_symbols(e); !s.ok()) return s;
  return std::move(d.out);
}

absl::StatusOr<ExportedGraph> instantiate(const ExportedGraph& e, const std::vector<int64_t>& values) {
  const SymbolicDims& sym = e.symbols;
  std::string sizes;
  for (size_t s = 0; s < sym.names.size(); ++s) absl::StrAppend(&sizes, s ? ", " : "", sym.names[s], "=", s < values.size() ? values[s] : 0);
  if (values.size() != sym.names.size())
    return absl::InvalidArgumentError(absl::StrCat("the graph has ", sym.names.size(), " symbolic dimensions; ", values.size(), " sizes given"));
  for (size_t s = 0; s < values.size(); ++s)
    if (values[s] < 0) return absl::InvalidArgumentError(absl::StrCat("a negative size: ", sizes));
  ExportedGraph out;
  out.signature = e.signature;
  out.constants = e.constants;
  std::vector<Node> nodes = e.graph.nodes();
  for (const SymField& f : sym.fields) {
    const int64_t v = f.expr.poly(values);
    const bool dim = f.kind != SymField::kInts && f.kind != SymField::kScalar;
    if (dim && v < 0)
      return absl::InvalidArgumentError(absl::StrCat("at ", sizes, " a dim of the graph is ", f.expr.str(sym.names), " = ", v));
    switch (f.kind) {
      case SymField::kInputDim: out.signature.inputs[size_t(f.index)].shape[size_t(f.slot)] = v; break;
      case SymField::kOutputDim: out.signature.outputs[size_t(f.index)].shape[size_t(f.slot)] = v; break;
      case SymField::kShape: nodes[size_t(f.index)].shape[size_t(f.slot)] = v; break;
      case SymField::kInts: nodes[size_t(f.index)].ints[size_t(f.slot)] = v; break;
      case SymField::kScalar: {
        Node& n = nodes[size_t(f.index)];
        n.scalar = scalar_of(f.expr, values, n.dtype, n.scalar.is_int);
        break;
      }
    }
  }
  // Added afresh (hash-consing may merge nodes that coincide at these sizes).
  std::vector<NodeId> remap(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    Node n = std::move(nodes[i]);
    for (NodeId& in : n.inputs) in = remap[size_t(in)];
    remap[i] = out.graph.add(std::move(n));
  }
  for (NodeId o : e.graph.outputs()) out.graph.add_output(remap[size_t(o)]);
  absl::Status s = verify(out.graph);
  if (s.ok()) s = check(out, /*need_data=*/false);
  if (!s.ok())
    return absl::InvalidArgumentError(absl::StrCat("the graph does not hold at ", sizes, ": ", s.message()));
  return out;
}

absl::StatusOr<std::vector<int64_t>> bind_symbols(const ExportedGraph& e, const std::vector<Shape>& shapes) {
  const SymbolicDims& sym = e.symbols;
  const auto& ins = e.signature.inputs;
  if (shapes.size() != ins.size())
    return absl::InvalidArgumentError(absl::StrCat("the graph takes ", ins.size(), " inputs, got ", shapes.size()));
  std::map<std::pair<int, int>, const SymExpr*> exprs;
  for (const SymField& f : sym.fields)
    if (f.kind == SymField::kInputDim) exprs[{f.index, f.slot}] = &f.expr;
  std::vector<int64_t> values(sym.names.size(), -1);
  std::vector<std::string> from(sym.names.size());
  auto where = [&](size_t i, size_t a) { return absl::StrCat("input '", ins[i].name, "' dim ", a); };
  for (size_t i = 0; i < ins.size(); ++i) {
    if (shapes[i].size() != ins[i].shape.size())
      return absl::InvalidArgumentError(absl::StrCat("input '", ins[i].name, "' has rank ", shapes[i].size(), "; the graph takes ",
                                                     sym_type_str(e, true, int(i))));
    for (size_t a = 0; a < shapes[i].size(); ++a) {
      auto it = exprs.find({int(i), int(a)});
      if (it == exprs.end()) {
        if (shapes[i][a] != ins[i].shape[a])
          return absl::InvalidArgumentError(absl::StrCat(where(i, a), " is ", shapes[i][a], "; the graph takes ", sym_type_str(e, true, int(i))));
        continue;
      }
      const int s = it->second->plain_symbol();
      if (s < 0) continue;
      if (values[size_t(s)] >= 0 && values[size_t(s)] != shapes[i][a])
        return absl::InvalidArgumentError(absl::StrCat(where(i, a), " binds ", sym.names[size_t(s)], " to ", shapes[i][a], ", but ",
                                                       from[size_t(s)], " bound it to ", values[size_t(s)]));
      values[size_t(s)] = shapes[i][a];
      from[size_t(s)] = where(i, a);
    }
  }
  for (size_t s = 0; s < values.size(); ++s)
    if (values[s] < 0) return absl::InternalError(absl::StrCat("symbol ", sym.names[s], " is bound by no input"));
  for (const auto& [place, expr] : exprs) {
    const int64_t want = expr->poly(values);
    const int64_t got = shapes[size_t(place.first)][size_t(place.second)];
    if (want != got)
      return absl::InvalidArgumentError(absl::StrCat(where(size_t(place.first), size_t(place.second)), " is ", got, "; with these sizes it must be ",
                                                     expr->str(sym.names), " = ", want));
  }
  return values;
}

std::string sym_type_str(const ExportedGraph& e, bool input, int index) {
  const TensorSpec& t = input ? e.signature.inputs[size_t(index)] : e.signature.outputs[size_t(index)];
  std::vector<std::string> dims;
  for (int64_t d : t.shape) dims.push_back(std::to_string(d));
  const SymField::Kind kind = input ? SymField::kInputDim : SymField::kOutputDim;
  for (const SymField& f : e.symbols.fields)
    if (f.kind == kind && f.index == index) dims[size_t(f.slot)] = f.expr.str(e.symbols.names);
  std::string r = absl::StrCat(dtype_name(t.dtype), "[");
  for (size_t i = 0; i < dims.size(); ++i) absl::StrAppend(&r, i ? "," : "", dims[i]);
  return r + "]";
}

std::string print_symbol_lines(const ExportedGraph& e) {
  std::string r;
  const SymbolicDims& s = e.symbols;
  for (const SymField& f : s.fields) {
    const char* kind = f.kind == SymField::kShape ? "shape" : f.kind == SymField::kInts ? "ints" : f.kind == SymField::kScalar ? "scalar" : nullptr;
    if (!kind) continue;  // signature dims are written in the types
    absl::StrAppend(&r, "  at %", f.index, " ", kind, f.kind == SymField::kScalar ? "" : absl::StrCat(" ", f.slot), " = ", f.expr.str(s.names), "\n");
  }
  return r;
}

bool parse_sym_type(const std::string& text, const SymbolicDims& s, DType* dtype, Shape* shape, std::vector<std::pair<int, SymExpr>>* dims) {
  size_t b = text.find('[');
  if (b == std::string::npos || text.back() != ']' || !dtype_from_name(text.substr(0, b), dtype)) return false;
  shape->clear();
  dims->clear();
  std::string list = text.substr(b + 1, text.size() - b - 2);
  if (list.empty()) return true;
  for (absl::string_view d : absl::StrSplit(list, ',')) {
    std::string t(d);
    if (!t.empty() && t.size() <= 18 && t.find_first_not_of("0123456789") == std::string::npos) {
      shape->push_back(std::stoll(t));
      continue;
    }
    SymExpr x;
    if (s.empty() || !parse_sym_expr(t, s.names, &x) || x.reciprocal) return false;
    dims->push_back({int(shape->size()), x});
    shape->push_back(x.poly(s.base));
  }
  return true;
}

absl::Status check_symbols(const ExportedGraph& e) {
  const SymbolicDims& s = e.symbols;
  if (s.empty()) return s.fields.empty() ? absl::OkStatus() : absl::InvalidArgumentError("symbolic fields without symbols");
  auto bad = [](const std::string& m) { return absl::InvalidArgumentError(absl::StrCat("symbolic dimensions: ", m)); };
  if (s.names.size() > size_t(kMaxSymbols)) return bad(absl::StrCat("at most ", kMaxSymbols, " symbols"));
  if (s.base.size() != s.names.size()) return bad("a base size per symbol");
  std::set<std::string> seen;
  for (size_t i = 0; i < s.names.size(); ++i) {
    const std::string& n = s.names[i];
    bool ident = !n.empty() && (std::isalpha((unsigned char)n[0]) || n[0] == '_');
    for (char c : n) ident = ident && (std::isalnum((unsigned char)c) || c == '_');
    if (!ident) return bad(absl::StrCat("'", n, "' is not a name (letters, digits and _)"));
    if (!seen.insert(n).second) return bad(absl::StrCat("'", n, "' declared twice"));
    if (s.base[i] < 0) return bad(absl::StrCat(n, " has a negative size"));
  }
  std::vector<bool> bound(s.names.size());
  std::set<std::tuple<int, int, int>> places;
  for (const SymField& f : s.fields) {
    if (f.expr.coef.size() != size_t(1) << s.names.size()) return bad("an expression over other symbols");
    if (!places.insert({int(f.kind), f.index, f.slot}).second) return bad("a place with two expressions");
    const int64_t v = f.expr.poly(s.base);
    auto mismatch = [&](const std::string& where, int64_t have) {
      return bad(absl::StrCat(where, " is ", have, " but ", f.expr.str(s.names), " = ", v, " at the base sizes"));
    };
    switch (f.kind) {
      case SymField::kInputDim:
      case SymField::kOutputDim: {
        const bool in = f.kind == SymField::kInputDim;
        const auto& list = in ? e.signature.inputs : e.signature.outputs;
        if (f.index < 0 || size_t(f.index) >= list.size() || f.slot < 0 || size_t(f.slot) >= list[size_t(f.index)].shape.size())
          return bad("a dim of no signature tensor");
        if (list[size_t(f.index)].shape[size_t(f.slot)] != v) return mismatch(absl::StrCat("dim ", f.slot, " of ", list[size_t(f.index)].name), list[size_t(f.index)].shape[size_t(f.slot)]);
        if (in && f.expr.plain_symbol() >= 0) bound[size_t(f.expr.plain_symbol())] = true;
        break;
      }
      case SymField::kShape:
      case SymField::kInts:
      case SymField::kScalar: {
        if (f.index < 0 || size_t(f.index) >= e.graph.size()) return bad(absl::StrCat("%", f.index, " is no node"));
        const Node& n = e.graph.node(NodeId(f.index));
        if (f.kind == SymField::kScalar) {
          if (f.slot != 0) return bad("a scalar has no index");
          if (!(scalar_of(f.expr, s.base, n.dtype, n.scalar.is_int) == n.scalar))
            return bad(absl::StrCat("the scalar of %", f.index, " is not ", f.expr.str(s.names), " at the base sizes"));
          break;
        }
        if (f.expr.reciprocal) return bad("only scalars may be reciprocals");
        const auto& list = f.kind == SymField::kShape ? n.shape : n.ints;
        if (f.slot < 0 || size_t(f.slot) >= list.size()) return bad(absl::StrCat("%", f.index, " has no such ", f.kind == SymField::kShape ? "dim" : "attribute"));
        if (list[size_t(f.slot)] != v) return mismatch(absl::StrCat("%", f.index, (f.kind == SymField::kShape ? " dim " : " attribute "), f.slot), list[size_t(f.slot)]);
        break;
      }
    }
  }
  for (size_t i = 0; i < bound.size(); ++i)
    if (!bound[i]) return bad(absl::StrCat(s.names[i], " is not a whole dim of any input (the sizes are read from the inputs)"));
  return absl::OkStatus();
}

}  // namespace kiln::ir
