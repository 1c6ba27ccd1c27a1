// The graph IR text format.
//
//   graph {
//     %0 = input 0 : f32[2,3]
//     %1 = const 0.5 : f32[]
//     %2 = expand %1 : f32[2,3]
//     %3 = add %0, %2 : f32[2,3]
//     %4 = reduce_sum %3 axes=[1] : f32[2,1]
//     %5 = param slot=0 value=0.01 : f32[]      (a scalar passed at run time; ir/params.h)
//     output %3, %4
//   }
//
// A while or if node is followed by its regions, each a nested graph named by its role:
//
//     %3 = while %0, %1 carried=1 max_trips=0 : bool[]
//       cond graph {
//         ...
//       }
//       body graph {
//         ...
//       }
//     %4 = result %3 index=0 : f32[4]
//
// Node ids are printed densely from 0; the parser requires them in order so that
// print -> parse -> print is byte-identical.
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "ir/graph.h"

namespace kiln::ir {
namespace {

// Name of the `ints` attribute of each op, or nullptr when the op has none.
const char* ints_attr(Op op) {
  switch (op) {
    case Op::kInput: return "";  // positional
    case Op::kRand:
    case Op::kRandn: return "seed";
    case Op::kParam: return "slot";
    case Op::kReduceSum:
    case Op::kReduceMax:
    case Op::kReduceMin:
    case Op::kReduceProd:
    case Op::kArgMax:
    case Op::kArgMin: return "axes";
    case Op::kPermute: return "perm";
    case Op::kSlice: return "start_step";
    case Op::kPad: return "widths";
    case Op::kConcat:
    case Op::kGather: return "axis";
    case Op::kWindow: return "stride_dilation";
    case Op::kAttention: return "causal";
    case Op::kScatter: return "axis_mode";
    case Op::kSegmentReduce: return "mode";
    case Op::kCollective: return "kind_fold_root_world_group";
    case Op::kIf: return "results";
    case Op::kResult: return "index";
    default: return nullptr;
  }
}
bool ints_is_list(Op op) {
  return op != Op::kInput && op != Op::kRand && op != Op::kRandn && op != Op::kParam && op != Op::kConcat && op != Op::kGather &&
         op != Op::kSegmentReduce &&
         op != Op::kAttention && op != Op::kIf && op != Op::kResult;
}
bool has_scalar(Op op) { return op == Op::kConst || op == Op::kParam || op == Op::kPad || op == Op::kAttention; }

std::string format_scalar(const Scalar& s) {
  if (s.is_int) return std::to_string(s.i);
  if (std::isnan(s.f)) return std::signbit(s.f) ? "-nan" : "nan";
  if (std::isinf(s.f)) return s.f < 0 ? "-inf" : "inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", s.f);
  std::string r = buf;
  // Shortest form that round-trips exactly.
  for (int prec = 1; prec < 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, s.f);
    if (std::strtod(buf, nullptr) == s.f) {
      r = buf;
      break;
    }
  }
  return r;
}

std::string int_list(const std::vector<int64_t>& v) {
  std::string r = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) r += ",";
    r += std::to_string(v[i]);
  }
  return r + "]";
}

// The role of region k of a control node, as the text names it.
const char* region_name(Op op, size_t k) {
  if (op == Op::kWhile) return k == 0 ? "cond" : "body";
  return k == 0 ? "then" : "else";
}

std::string indented(const std::string& text, const std::string& pad) {
  std::string r;
  size_t b = 0;
  while (b < text.size()) {
    size_t e = text.find('\n', b);
    if (e == std::string::npos) e = text.size();
    absl::StrAppend(&r, pad, text.substr(b, e - b), "\n");
    b = e + 1;
  }
  return r;
}

}  // namespace

std::string print(const Graph& g) {
  std::string out = "graph {\n";
  for (size_t i = 0; i < g.size(); ++i) {
    const Node& n = g.node(NodeId(i));
    absl::StrAppend(&out, "  %", i, " = ", op_name(n.op));
    for (size_t k = 0; k < n.inputs.size(); ++k) absl::StrAppend(&out, k ? ", %" : " %", n.inputs[k]);
    const char* ia = ints_attr(n.op);
    if (ia && *ia == 0) {
      absl::StrAppend(&out, " ", n.ints.empty() ? 0 : n.ints[0]);
    } else if (ia) {
      if (ints_is_list(n.op))
        absl::StrAppend(&out, " ", ia, "=", int_list(n.ints));
      else
        absl::StrAppend(&out, " ", ia, "=", n.ints.empty() ? 0 : n.ints[0]);
    }
    if (n.op == Op::kConst) absl::StrAppend(&out, " ", format_scalar(n.scalar));
    if (n.op == Op::kPad || n.op == Op::kParam) absl::StrAppend(&out, " value=", format_scalar(n.scalar));
    if (n.op == Op::kAttention) absl::StrAppend(&out, " scale=", format_scalar(n.scalar));
    if (n.op == Op::kDot && !n.ints.empty() && n.ints[0] == 1) absl::StrAppend(&out, " precision=tf32");
    if (n.op == Op::kWhile)
      absl::StrAppend(&out, " carried=", n.ints.empty() ? 0 : n.ints[0], " max_trips=", n.ints.size() < 2 ? 0 : n.ints[1]);
    absl::StrAppend(&out, " : ", dtype_name(n.dtype), shape_str(n.shape), "\n");
    if (n.regions)
      for (size_t k = 0; k < n.regions->size(); ++k)
        absl::StrAppend(&out, "    ", region_name(n.op, k), " ", indented(print((*n.regions)[k]), "    ").substr(4));
  }
  out += "  output";
  for (size_t k = 0; k < g.outputs().size(); ++k) absl::StrAppend(&out, k ? ", %" : " %", g.outputs()[k]);
  out += "\n}\n";
  return out;
}

namespace {

class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}

  absl::StatusOr<Graph> run() {
    Graph g;
    if (absl::Status st = graph_block(&g); !st.ok()) return st;
    skip_ws();
    if (!at_end()) return fail("expected end of input");
    absl::Status v = verify(g);
    if (!v.ok()) return absl::InvalidArgumentError(absl::StrCat("invalid graph: ", v.message()));
    return g;
  }

 private:
  // 'graph' '{' node lines 'output' ids '}' (a whole graph, or a region of a control node).
  absl::Status graph_block(Graph* out) {
    if (++depth_ > 64) return fail("regions nested too deeply");
    Graph& g = *out;
    skip_ws();
    if (!keyword("graph")) return fail("expected 'graph'");
    skip_ws();
    if (!consume('{')) return fail("expected '{'");
    for (;;) {
      skip_ws();
      if (keyword("output")) break;
      if (peek() == '%') {
        absl::Status st = node_line(&g);
        if (!st.ok()) return st;
        continue;
      }
      return fail(g.size() == 0 && at_end() ? "expected a node or 'output'" : "expected '%' or 'output'");
    }
    for (bool first = true;; first = false) {
      skip_blank();
      if (!first) {
        if (!consume(',')) break;
        skip_blank();
      }
      int64_t id;
      if (!consume('%')) return fail("expected '%' before an output id");
      if (!integer(&id)) return fail("expected an output id");
      if (id < 0 || size_t(id) >= g.size()) return fail_at(last_, absl::StrCat("output %", id, " is not defined"));
      g.add_output(NodeId(id));
    }
    skip_ws();
    if (!consume('}')) return fail("expected '}'");
    --depth_;
    return absl::OkStatus();
  }

  absl::Status node_line(Graph* g) {
    size_t line_start = pos_;
    consume('%');
    int64_t id;
    if (!integer(&id)) return fail("expected a node id after '%'");
    if (id != int64_t(g->size())) return fail_at(line_start, absl::StrCat("expected node id %", g->size()));
    skip_blank();
    if (!consume('=')) return fail("expected '='");
    skip_blank();
    std::string name = word();
    Node n;
    if (!op_from_name(name, &n.op) || op_class(n.op) == OpClass::kKernel)
      return fail_at(last_, absl::StrCat("expected an op name, got '", name, "'"));
    // Operands.
    skip_blank();
    if (peek() == '%') {
      for (;;) {
        consume('%');
        int64_t in;
        if (!integer(&in)) return fail("expected an operand id");
        if (in < 0 || in >= id) return fail_at(last_, absl::StrCat("operand %", in, " is not defined before %", id));
        n.inputs.push_back(NodeId(in));
        skip_blank();
        if (!consume(',')) break;
        skip_blank();
        if (peek() != '%') return fail("expected '%' after ','");
      }
    }
    // Attributes.
    std::string scalar_text;
    size_t scalar_pos = 0;
    const char* ia = ints_attr(n.op);
    skip_blank();
    if (ia && *ia == 0) {
      int64_t v;
      if (!integer(&v)) return fail("expected the input position");
      n.ints = {v};
    } else if (ia) {
      skip_blank();
      if (!keyword(ia) || !consume('=')) return fail(absl::StrCat("expected '", ia, "='"));
      if (ints_is_list(n.op)) {
        if (!list(&n.ints)) return fail("expected an integer list like [0,1]");
      } else {
        int64_t v;
        if (!integer(&v)) return fail("expected an integer");
        n.ints = {v};
      }
    }
    if (n.op == Op::kDot) {  // optional: exact unless it says tf32
      skip_blank();
      if (keyword("precision")) {
        if (!consume('=')) return fail("expected 'precision='");
        size_t at = pos_;
        std::string p = word();
        if (p == "tf32") n.ints = {1};
        else if (p != "exact") return fail_at(at, absl::StrCat("expected 'exact' or 'tf32', got '", p, "'"));
      }
    }
    if (n.op == Op::kWhile) {
      int64_t carried, trips;
      skip_blank();
      if (!keyword("carried") || !consume('=') || !integer(&carried)) return fail("expected 'carried='");
      skip_blank();
      if (!keyword("max_trips") || !consume('=') || !integer(&trips)) return fail("expected 'max_trips='");
      n.ints = {carried, trips};
    }
    if (has_scalar(n.op)) {
      skip_blank();
      if ((n.op == Op::kPad || n.op == Op::kParam) && !(keyword("value") && consume('='))) return fail("expected 'value='");
      if (n.op == Op::kAttention && !(keyword("scale") && consume('='))) return fail("expected 'scale='");
      scalar_pos = pos_;
      scalar_text = number_token();
      if (scalar_text.empty()) return fail("expected a number");
    }
    skip_blank();
    if (!consume(':')) return fail("expected ':' before the type");
    skip_blank();
    size_t type_pos = pos_;
    std::string dt = word();
    if (!dtype_from_name(dt, &n.dtype)) return fail_at(type_pos, absl::StrCat("expected a dtype, got '", dt, "'"));
    if (!list(&n.shape)) return fail("expected a shape like [2,3]");
    if (has_scalar(n.op)) {
      absl::Status st = parse_scalar(scalar_text, scalar_pos, n.dtype, &n.scalar);
      if (!st.ok()) return st;
    }
    skip_blank();
    if (!at_end() && peek() != '\n') return fail("expected end of line");
    if (is_control(n.op)) {
      auto regions = std::make_shared<Regions>(2);
      for (size_t k = 0; k < 2; ++k) {
        skip_ws();
        const char* role = k == 0 ? (n.op == Op::kWhile ? "cond" : "then") : (n.op == Op::kWhile ? "body" : "else");
        if (!keyword(role)) return fail(absl::StrCat("expected region '", role, "'"));
        skip_blank();
        if (absl::Status st = graph_block(&(*regions)[k]); !st.ok()) return st;
        if (absl::Status v = verify((*regions)[k]); !v.ok())
          return fail_at(line_start, absl::StrCat("region ", role, " of %", id, ": ", v.message()));
      }
      n.regions = std::move(regions);
    }
    absl::Status c = check_node(*g, n);
    if (!c.ok()) return fail_at(line_start, std::string(c.message()));
    NodeId got = g->add(n);
    if (got != NodeId(id)) return fail_at(line_start, absl::StrCat("node %", id, " duplicates %", got));
    return absl::OkStatus();
  }

  absl::Status parse_scalar(const std::string& t, size_t at, DType dt, Scalar* out) {
    if (is_float(dt)) {
      if (t == "nan") *out = Scalar::from_double(std::nan(""));
      else if (t == "-nan") *out = Scalar::from_double(-std::nan(""));
      else if (t == "inf") *out = Scalar::from_double(INFINITY);
      else if (t == "-inf") *out = Scalar::from_double(-INFINITY);
      else {
        char* end;
        double v = std::strtod(t.c_str(), &end);
        if (*end) return fail_at(at, "expected a floating-point number");
        *out = Scalar::from_double(v);
      }
      return absl::OkStatus();
    }
    char* end;
    errno = 0;
    long long v = std::strtoll(t.c_str(), &end, 10);
    if (*end || errno) return fail_at(at, "expected an integer value");
    *out = Scalar::from_int(v);
    return absl::OkStatus();
  }

  bool at_end() const { return pos_ >= s_.size(); }
  char peek() const { return at_end() ? '\0' : s_[pos_]; }
  bool consume(char c) {
    if (peek() != c) return false;
    last_ = pos_++;
    return true;
  }
  void skip_ws() {
    while (!at_end()) {
      if (std::isspace((unsigned char)peek())) ++pos_;
      else if (peek() == '#') while (!at_end() && peek() != '\n') ++pos_;
      else break;
    }
  }
  void skip_blank() {
    while (peek() == ' ' || peek() == '\t') ++pos_;
  }
  std::string word() {
    last_ = pos_;
    size_t b = pos_;
    while (!at_end() && (std::isalnum((unsigned char)peek()) || peek() == '_')) ++pos_;
    return s_.substr(b, pos_ - b);
  }
  bool keyword(const char* k) {
    size_t save = pos_;
    if (word() == k) return true;
    pos_ = save;
    return false;
  }
  std::string number_token() {
    size_t b = pos_;
    while (!at_end() && (std::isalnum((unsigned char)peek()) || peek() == '-' || peek() == '+' || peek() == '.'))
      ++pos_;
    return s_.substr(b, pos_ - b);
  }
  bool integer(int64_t* v) {
    last_ = pos_;
    size_t b = pos_;
    if (peek() == '-') ++pos_;
    if (!std::isdigit((unsigned char)peek())) {
      pos_ = b;
      return false;
    }
    while (std::isdigit((unsigned char)peek())) ++pos_;
    errno = 0;
    long long x = std::strtoll(s_.c_str() + b, nullptr, 10);
    if (errno) {
      pos_ = b;
      return false;
    }
    *v = x;
    return true;
  }
  bool list(std::vector<int64_t>* out) {
    out->clear();
    if (!consume('[')) return false;
    if (consume(']')) return true;
    for (;;) {
      int64_t v;
      if (!integer(&v)) return false;
      out->push_back(v);
      if (consume(']')) return true;
      if (!consume(',')) return false;
    }
  }
  absl::Status fail(const std::string& what) { return fail_at(pos_, what); }
  absl::Status fail_at(size_t at, const std::string& what) {
    int line = 1, col = 1;
    for (size_t i = 0; i < at && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return absl::InvalidArgumentError(absl::StrCat(line, ":", col, ": ", what));
  }

  const std::string& s_;
  int depth_ = 0;
  size_t pos_ = 0;
  size_t last_ = 0;
};

}  // namespace

absl::StatusOr<Graph> parse(const std::string& text) { return Parser(text).run(); }

}  // namespace kiln::ir
