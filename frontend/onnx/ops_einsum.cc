// Einsum: ellipses become fresh letters (an operand's "..." names its leading dims, aligned to the
// right across operands, broadcast as in NumPy), a letter repeated in one operand takes that
// operand's diagonal (a mask of equal indices, then a sum over the repeats), then every operand
// is permuted and reshaped onto one axis per letter, the operands are multiplied with
// broadcasting and the letters missing from the output are summed, which kiln fuses into one
// reduction kernel. Two-operand contractions therefore do not reach the matmul kernels yet.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "frontend/onnx/ops.h"

namespace kiln::onnx {
namespace {

// Operand `x` (letters `term`, possibly repeating) reduced to its diagonals: one axis per letter.
Tensor diagonals(Tensor x, std::string* term, NodeContext& c) {
  for (size_t a = 0; a < term->size(); ++a) {
    for (size_t b = term->size(); b-- > a + 1;) {
      if ((*term)[b] != (*term)[a]) continue;
      const int64_t n = x.shape()[a];
      if (x.shape()[b] != n)
        c.invalid(absl::StrCat("letter '", std::string(1, (*term)[a]), "' has sizes ", n, " and ", x.shape()[b], " in one operand"));
      Shape sa(x.shape().size(), 1), sb(x.shape().size(), 1);
      sa[a] = sb[b] = n;
      Tensor on_diagonal = equal(reshape(arange(n, DType::kInt64, c.device()), sa), reshape(arange(n, DType::kInt64, c.device()), sb));
      x = sum(where(on_diagonal, x, 0.0), {int64_t(b)});
      term->erase(b, 1);
    }
  }
  return x;
}

void einsum_op(NodeContext& c) {
  std::string eq = c.attr_string("equation", "");
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms = absl::StrSplit(lhs, ',');
  if (terms.size() != c.num_inputs()) c.invalid(absl::StrCat("the equation has ", terms.size(), " operands, the node ", c.num_inputs(), " inputs"));
  // Ellipses: fresh capital letters for the broadcast dims, the last `own` of them per operand.
  std::string fresh;
  for (char ch = 'A'; ch <= 'Z'; ++ch)
    if (eq.find(ch) == std::string::npos) fresh += ch;
  int64_t ellipsis_rank = 0;
  std::vector<int64_t> own(terms.size(), -1);
  for (size_t i = 0; i < terms.size(); ++i) {
    const size_t at = terms[i].find("...");
    if (at == std::string::npos) continue;
    own[i] = c.rank(i) - int64_t(terms[i].size() - 3);
    if (own[i] < 0) c.invalid(absl::StrCat("operand ", i, " ('", terms[i], "') has rank ", c.rank(i)));
    ellipsis_rank = std::max(ellipsis_rank, own[i]);
  }
  if (ellipsis_rank > int64_t(fresh.size())) c.unsupported("an ellipsis of more dims than free letters");
  const std::string ellipsis = fresh.substr(0, size_t(ellipsis_rank));
  for (size_t i = 0; i < terms.size(); ++i)
    if (own[i] >= 0) terms[i].replace(terms[i].find("..."), 3, ellipsis.substr(size_t(ellipsis_rank - own[i])));
  std::vector<Tensor> operands;
  std::string letters;  // every letter, in order of first appearance
  std::map<char, int> count;
  for (size_t i = 0; i < terms.size(); ++i) {
    if (int64_t(terms[i].size()) != c.rank(i))
      c.invalid(absl::StrCat("operand ", i, " ('", terms[i], "') has rank ", c.rank(i)));
    for (char ch : terms[i]) {
      if (!std::isalpha(static_cast<unsigned char>(ch))) c.invalid(absl::StrCat("unexpected character '", std::string(1, ch), "'"));
      count[ch]++;  // every occurrence: an implicit output keeps the letters written once
    }
    operands.push_back(diagonals(c.in(i), &terms[i], c));
    for (char ch : terms[i])
      if (letters.find(ch) == std::string::npos) letters += ch;
  }
  std::string out;
  if (arrow == std::string::npos) {
    out = ellipsis;  // implicit output: the ellipsis dims, then the letters used once, alphabetically
    for (const auto& [ch, n] : count)
      if (n == 1 && ellipsis.find(ch) == std::string::npos) out += ch;
  } else {
    out = eq.substr(arrow + 2);
    if (size_t at = out.find("..."); at != std::string::npos) out.replace(at, 3, ellipsis);
    for (char ch : out)
      if (!count.count(ch) || std::count(out.begin(), out.end(), ch) > 1) c.invalid(absl::StrCat("output letter '", std::string(1, ch), "'"));
  }
  Tensor product;
  for (size_t i = 0; i < terms.size(); ++i) {
    Tensor x = operands[i];
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
