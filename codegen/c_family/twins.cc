// canonical_text (gpu_program.h): a kernel's text as it would read were it named @KERNEL and
// given buffers @B0.. and params @P0.. in its argument order ('@' appears in no C source, so a
// replacement never meets the kernel's own text).
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "codegen/c_family/dialect.h"
#include "codegen/c_family/gpu_program.h"

namespace kiln::codegen::gpu {
namespace {

bool ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

}  // namespace

std::string canonical_text(const std::string& text, const KernelSource& k) {
  // Every identifier `<prefix><digits>` naming a buffer (DialectOps::buffer_name) or a param
  // (DialectOps::param_name) becomes its position among the kernel's arguments; an id that is
  // not an argument keeps a distinct spelling, so different texts never become equal.
  const std::string buffer = DialectOps::buffer_name(0), param = DialectOps::param_name(0);
  const std::string bp = buffer.substr(0, buffer.size() - 1), pp = param.substr(0, param.size() - 1);
  const std::string named = absl::StrReplaceAll(text, {{k.name, "@KERNEL"}});
  std::string out;
  out.reserve(named.size());
  for (size_t i = 0; i < named.size();) {
    if (i == 0 || !ident(named[i - 1])) {
      bool matched = false;
      for (const auto& [prefix, ids, tag] : {std::tuple{&bp, &k.buffers, "@B"}, std::tuple{&pp, &k.params, "@P"}}) {
        const size_t n = prefix->size();
        if (named.compare(i, n, *prefix) != 0 || i + n >= named.size() || !digit(named[i + n])) continue;
        size_t j = i + n;
        while (j < named.size() && digit(named[j])) ++j;
        // GLSL's vec4 view of a buffer is the buffer's name with a `v` (DialectOps::vec4_view).
        const bool vec4 = j + 1 < named.size() && named[j] == 'v' && !ident(named[j + 1]);
        if (j < named.size() && ident(named[j]) && !vec4) continue;
        const int id = std::atoi(named.c_str() + i + n);
        const auto at = std::find(ids->begin(), ids->end(), id);
        absl::StrAppend(&out, tag, at == ids->end() ? absl::StrCat("x", id) : absl::StrCat(at - ids->begin()));
        i = j;
        matched = true;
        break;
      }
      if (matched) continue;
    }
    out += named[i++];
  }
  return out;
}

}  // namespace kiln::codegen::gpu
