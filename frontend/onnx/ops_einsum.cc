// Einsum without repeated letters within an operand (diagonals) or ellipses: every operand is
// permuted and reshaped onto one axis per letter, the operands are multiplied with broadcasting
// and the letters missing from the output are summed, which kiln fuses into one reduction
// kernel. Two-operand contractions therefore do not reach the matmul kernels yet.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "frontend/onnx/ops.h"

namespace kiln::onnx {
namespace {

void einsum_op(NodeContext& c) {
  std::string eq = c.attr_string("equation", "");
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  if (eq.find("...") != std::string::npos) c.unsupported("ellipses ('...') in the equation");
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms = absl::StrSplit(lhs, ',');
  if (terms.size() != c.num_inputs()) c.invalid(absl::StrCat("the equation has ", terms.size(), " operands, the node ", c.num_inputs(), " inputs"));
  std::string letters;  // every letter, in order of first appearance
  std::map<char, int> count;
  for (size_t i = 0; i < terms.size(); ++i) {
    if (int64_t(terms[i].size()) != c.rank(i))
      c.invalid(absl::StrCat("operand ", i, " ('", terms[i], "') has rank ", c.rank(i)));
    for (char ch : terms[i]) {
      if (!std::isalpha(static_cast<unsigned char>(ch))) c.invalid(absl::StrCat("unexpected character '", std::string(1, ch), "'"));
      if (std::count(terms[i].begin(), terms[i].end(), ch) > 1) c.unsupported(absl::StrCat("a letter repeated in one operand ('", terms[i], "': diagonals)"));
      if (!count[ch]++) letters += ch;
    }
  }
  std::string out;
  if (arrow == std::string::npos) {
    for (const auto& [ch, n] : count)
      if (n == 1) out += ch;  // implicit output: the letters used once, alphabetically
  } else {
    out = eq.substr(arrow + 2);
    for (char ch : out)
      if (!count.count(ch) || std::count(out.begin(), out.end(), ch) > 1) c.invalid(absl::StrCat("output letter '", std::string(1, ch), "'"));
  }
  Tensor product;
  for (size_t i = 0; i < terms.size(); ++i) {
    Tensor x = c.in(i);
    std::vector<int64_t> perm;
    Shape s;
    for (char ch : letters) {
      size_t at = terms[i].find(ch);
      if (at != std::string::npos) perm.push_back(int64_t(at));
    }
    x = permute(x, perm);
    size_t k = 0;
    for (char ch : letters) s.push_back(terms[i].find(ch) != std::string::npos ? x.shape()[k++] : 1);
    x = reshape(x, s);
    product = product.defined() ? product * x : x;
  }
  std::vector<int64_t> summed;
  std::string kept;
  for (size_t d = 0; d < letters.size(); ++d) {
    if (out.find(letters[d]) == std::string::npos) summed.push_back(int64_t(d));
    else kept += letters[d];
  }
  Tensor r = summed.empty() ? product : sum(product, summed);
  r = cast(r, c.dtype(0));
  std::vector<int64_t> perm;
  for (char ch : out) perm.push_back(int64_t(kept.find(ch)));
  c.set(0, permute(r, perm));
}

}  // namespace

void register_einsum_ops(OpTable& t) { t["Einsum"] = {einsum_op, {"equation"}, {}}; }

}  // namespace kiln::onnx
