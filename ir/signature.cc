// The signature block of an exported graph (signature.h): printing, parsing, checking.
#include "ir/signature.h"

#include <cctype>
#include <set>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace kiln::ir {
namespace {

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha((unsigned char)s[0]) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum((unsigned char)c) || c == '_' || c == '.' || c == '-')) return false;
  return true;
}

absl::Status error_at(int line, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(line, ":1: ", what));
}

// Splits a signature line into words separated by blanks.
std::vector<std::string> words_of(absl::string_view line) {
  std::vector<std::string> w;
  for (absl::string_view p : absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty())) w.emplace_back(p);
  return w;
}

}  // namespace

std::vector<int> ExportedGraph::input_positions() const {
  std::vector<int> r;
  int next = 0;
  for (const TensorSpec& t : signature.inputs) r.push_back(t.used ? next++ : -1);
  return r;
}

std::vector<int> ExportedGraph::constant_positions() const {
  int used = 0;
  for (const TensorSpec& t : signature.inputs) used += t.used;
  std::vector<int> r;
  for (size_t k = 0; k < constants.size(); ++k) r.push_back(used + int(k));
  return r;
}

std::string type_str(DType dtype, const Shape& shape) { return absl::StrCat(dtype_name(dtype), shape_str(shape)); }

std::string print_signature(const Signature& s) {
  std::string r;
  for (const TensorSpec& t : s.inputs)
    absl::StrAppend(&r, "input ", t.name, " : ", type_str(t.dtype, t.shape), t.used ? "" : " unused", "\n");
  for (const TensorSpec& t : s.outputs) absl::StrAppend(&r, "output ", t.name, " : ", type_str(t.dtype, t.shape), "\n");
  return r;
}

std::string print(const ExportedGraph& e, bool with_data) {
  std::string r = "signature {\n";
  for (size_t s = 0; s < e.symbols.names.size(); ++s) absl::StrAppend(&r, "  symbol ", e.symbols.names[s], " = ", e.symbols.base[s], "\n");
  for (size_t i = 0; i < e.signature.inputs.size(); ++i) {
    const TensorSpec& t = e.signature.inputs[i];
    absl::StrAppend(&r, "  input ", t.name, " : ", sym_type_str(e, true, int(i)), t.used ? "" : " unused", "\n");
  }
  for (const ConstantData& c : e.constants) {
    absl::StrAppend(&r, "  constant : ", type_str(c.dtype, c.shape));
    if (with_data) absl::StrAppend(&r, " base64=", absl::Base64Escape(c.bytes));
    r += "\n";
  }
  for (size_t i = 0; i < e.signature.outputs.size(); ++i)
    absl::StrAppend(&r, "  output ", e.signature.outputs[i].name, " : ", sym_type_str(e, false, int(i)), "\n");
  return r + print_symbol_lines(e) + "}\n" + print(e.graph);
}

absl::StatusOr<ExportedGraph> parse_exported(const std::string& text, bool need_data) {
  ExportedGraph e;
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  size_t i = 0;
  auto blank = [](absl::string_view l) {
    size_t p = l.find_first_not_of(" \t\r");
    return p == absl::string_view::npos || l[p] == '#';
  };
  while (i < lines.size() && blank(lines[i])) ++i;
  std::string graph_text = text;
  bool has_signature = i < lines.size() && words_of(lines[i]).size() >= 1 && words_of(lines[i])[0] == "signature";
  if (has_signature) {
    std::vector<std::string> head = words_of(lines[i]);
    if (!(head.size() == 2 && head[1] == "{")) return error_at(int(i) + 1, "expected 'signature {'");
    size_t end = i + 1;
    for (; end < lines.size(); ++end) {
      if (blank(lines[end])) continue;
      std::string_view raw(lines[end].data(), lines[end].size());
      std::string line(raw.substr(0, raw.find('#')));
      std::vector<std::string> w = words_of(line);
      const int ln = int(end) + 1;
      if (w.size() == 1 && w[0] == "}") break;
      // symbol NAME = SIZE | at %N shape|ints K = EXPR | at %N scalar = EXPR (ir/symbolic_graph.h)
      if (w[0] == "symbol") {
        int64_t base = 0;
        if (w.size() != 4 || w[2] != "=" || !absl::SimpleAtoi(w[3], &base)) return error_at(ln, "expected 'symbol <name> = <size>'");
        e.symbols.names.push_back(w[1]);
        e.symbols.base.push_back(base);
        continue;
      }
      if (w[0] == "at") {
        SymField f;
        const bool scalar = w.size() == 5 && w[2] == "scalar";
        int node = 0;
        bool ok = (scalar || w.size() == 6) && w[1].size() > 1 && w[1][0] == '%' && absl::SimpleAtoi(w[1].substr(1), &node);
        if (ok && !scalar) ok = (w[2] == "shape" || w[2] == "ints") && absl::SimpleAtoi(w[3], &f.slot);
        ok = ok && w[w.size() - 2] == "=" && parse_sym_expr(w.back(), e.symbols.names, &f.expr);
        if (!ok) return error_at(ln, "expected 'at %<node> shape|ints <index> = <expr>' or 'at %<node> scalar = <expr>' over declared symbols");
        f.kind = scalar ? SymField::kScalar : w[2] == "shape" ? SymField::kShape : SymField::kInts;
        f.index = node;
        e.symbols.fields.push_back(std::move(f));
        continue;
      }
      // input NAME : TYPE [unused] | output NAME : TYPE | constant : TYPE [base64=...]
      bool constant = w[0] == "constant";
      size_t colon = constant ? 1 : 2;
      if (!(w[0] == "input" || w[0] == "output" || constant))
        return error_at(ln, absl::StrCat("expected 'input', 'output', 'constant' or '}', got '", w[0], "'"));
      if (w.size() <= colon + 1 || w[colon] != ":")
        return error_at(ln, constant ? "expected 'constant : <type>'" : absl::StrCat("expected '", w[0], " <name> : <type>'"));
      DType dt;
      Shape shape;
      std::vector<std::pair<int, SymExpr>> sym_dims;
      if (!parse_sym_type(w[colon + 1], e.symbols, &dt, &shape, &sym_dims) || (constant && !sym_dims.empty()))
        return error_at(ln, absl::StrCat("expected a type like f32[2,3]", e.symbols.empty() ? "" : " or f32[batch,3]", ", got '", w[colon + 1], "'"));
      for (auto& [dim, x] : sym_dims) {
        const bool in = w[0] == "input";
        e.symbols.fields.push_back({in ? SymField::kInputDim : SymField::kOutputDim,
                                    int(in ? e.signature.inputs.size() : e.signature.outputs.size()), dim, std::move(x)});
      }
      size_t extra = colon + 2;
      if (constant) {
        ConstantData c{dt, shape, {}};
        if (extra < w.size()) {
          if (w[extra].rfind("base64=", 0) != 0 || !absl::Base64Unescape(w[extra].substr(7), &c.bytes))
            return error_at(ln, "expected base64=<data> after the constant's type");
          ++extra;
        } else if (need_data) {
          return error_at(ln, "the constant has no data (base64=...)");
        }
        e.constants.push_back(std::move(c));
      } else {
        TensorSpec t{w[1], dt, shape, true};
        if (w[0] == "input" && extra < w.size() && w[extra] == "unused") t.used = false, ++extra;
        (w[0] == "input" ? e.signature.inputs : e.signature.outputs).push_back(std::move(t));
      }
      if (extra < w.size()) return error_at(ln, absl::StrCat("unexpected '", w[extra], "'"));
    }
    if (end == lines.size()) return error_at(int(end), "the signature block has no closing '}'");
    // Blank the signature block (keeping its line breaks) so graph errors keep their line numbers.
    size_t stop = size_t(lines[end].data() - text.data()) + lines[end].size();
    for (size_t k = 0; k < stop; ++k)
      if (graph_text[k] != '\n') graph_text[k] = ' ';
  }
  auto g = parse(graph_text);
  if (!g.ok()) return g.status();
  e.graph = *std::move(g);
  if (!has_signature) {
    for (NodeId n : e.graph.input_nodes())
      e.signature.inputs.push_back({absl::StrCat("input", e.signature.inputs.size()), e.graph.node(n).dtype, e.graph.node(n).shape, true});
    for (NodeId n : e.graph.outputs())
      e.signature.outputs.push_back({absl::StrCat("output", e.signature.outputs.size()), e.graph.node(n).dtype, e.graph.node(n).shape, true});
  }
  if (absl::Status s = check(e, need_data); !s.ok()) return s;
  return e;
}

absl::Status check(const ExportedGraph& e, bool need_data) {
  if (absl::Status s = check_symbols(e); !s.ok()) return s;
  auto bad = [](const std::string& m) { return absl::InvalidArgumentError(absl::StrCat("signature: ", m)); };
  for (const auto* list : {&e.signature.inputs, &e.signature.outputs}) {
    std::set<std::string> seen;
    for (const TensorSpec& t : *list) {
      if (!is_identifier(t.name)) return bad(absl::StrCat("'", t.name, "' is not a name (letters, digits, _ . -; not starting with a digit)"));
      if (!seen.insert(t.name).second) return bad(absl::StrCat("the name '", t.name, "' appears twice"));
    }
  }
  std::vector<NodeId> nodes = e.graph.input_nodes();
  std::vector<int> in_pos = e.input_positions(), const_pos = e.constant_positions();
  size_t needed = e.constants.size();
  for (const TensorSpec& t : e.signature.inputs) needed += t.used;
  if (needed != nodes.size())
    return bad(absl::StrCat(needed, " used inputs and constants, but the graph has ", nodes.size(), " inputs"));
  auto same = [&](int pos, DType dt, const Shape& shape, const std::string& what) -> absl::Status {
    const Node& n = e.graph.node(nodes[size_t(pos)]);
    if (n.dtype != dt || n.shape != shape)
      return bad(absl::StrCat(what, " is ", type_str(dt, shape), " but graph input ", pos, " is ", type_str(n.dtype, n.shape)));
    return absl::OkStatus();
  };
  for (size_t i = 0; i < e.signature.inputs.size(); ++i) {
    const TensorSpec& t = e.signature.inputs[i];
    if (in_pos[i] >= 0)
      if (absl::Status s = same(in_pos[i], t.dtype, t.shape, absl::StrCat("input ", t.name)); !s.ok()) return s;
  }
  for (size_t k = 0; k < e.constants.size(); ++k) {
    const ConstantData& c = e.constants[k];
    if (absl::Status s = same(const_pos[k], c.dtype, c.shape, absl::StrCat("constant ", k)); !s.ok()) return s;
    int64_t want = shape_numel(c.shape) * dtype_size(c.dtype);
    if ((need_data || !c.bytes.empty()) && int64_t(c.bytes.size()) != want)
      return bad(absl::StrCat("constant ", k, " (", type_str(c.dtype, c.shape), ") holds ", c.bytes.size(), " bytes, not ", want));
  }
  if (e.signature.outputs.size() != e.graph.outputs().size())
    return bad(absl::StrCat(e.signature.outputs.size(), " outputs named, the graph has ", e.graph.outputs().size()));
  for (size_t k = 0; k < e.signature.outputs.size(); ++k) {
    const TensorSpec& t = e.signature.outputs[k];
    const Node& n = e.graph.node(e.graph.outputs()[k]);
    if (n.dtype != t.dtype || n.shape != t.shape)
      return bad(absl::StrCat("output ", t.name, " is ", type_str(t.dtype, t.shape), " but graph output ", k, " is ", type_str(n.dtype, n.shape)));
  }
  return absl::OkStatus();
}

}  // namespace kiln::ir
