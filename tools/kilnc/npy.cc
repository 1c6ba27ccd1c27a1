// The .npy format (npy.h): magic "\x93NUMPY", major and minor version, a header length (u16 in
// 1.0, u32 in 2.0/3.0), a Python dict literal {'descr': '<f4', 'fortran_order': False,
// 'shape': (2, 3), } padded with spaces to a multiple of 64 bytes and ended by '\n', then data.
#include "tools/kilnc/npy.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace kiln::kilnc {
namespace {

struct Descr {
  const char* npy;
  DType dtype;
};
constexpr Descr kDescrs[] = {{"<f4", DType::kFloat32}, {"<f2", DType::kFloat16}, {"<f8", DType::kFloat64},
                             {"<i4", DType::kInt32},   {"<i8", DType::kInt64},   {"|i1", DType::kInt8},
                             {"|u1", DType::kUInt8},   {"|b1", DType::kBool},    {"<i2", DType::kInt16},
                             {"<u2", DType::kUInt16},  {"<u4", DType::kUInt32}};

// The value after 'key': in the header dict, up to the next top-level ',' (or '}' at the end).
bool dict_value(const std::string& h, const std::string& key, std::string* out) {
  size_t k = h.find("'" + key + "'");
  if (k == std::string::npos) return false;
  size_t colon = h.find(':', k);
  if (colon == std::string::npos) return false;
  size_t b = colon + 1, depth = 0, e = b;
  for (; e < h.size(); ++e) {
    if (h[e] == '(') ++depth;
    if (h[e] == ')') --depth;
    if (depth == 0 && (h[e] == ',' || h[e] == '}')) break;
  }
  *out = std::string(absl::StripAsciiWhitespace(h.substr(b, e - b)));
  return true;
}

}  // namespace

absl::StatusOr<NpyArray> parse_npy(const std::string& bytes, const std::string& name) {
  auto bad = [&](const std::string& m) { return absl::InvalidArgumentError(absl::StrCat(name, ": ", m)); };
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) return bad("not a .npy file (no \\x93NUMPY magic)");
  int major = uint8_t(bytes[6]);
  size_t header_len = 0, at = 0;
  if (major == 1) {
    header_len = uint8_t(bytes[8]) | size_t(uint8_t(bytes[9])) << 8;
    at = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return bad("truncated header");
    for (int i = 0; i < 4; ++i) header_len |= size_t(uint8_t(bytes[8 + i])) << (8 * i);
    at = 12;
  } else {
    return bad(absl::StrCat("format version ", major, ".", int(uint8_t(bytes[7])), " (kilnc reads 1.0 to 3.0)"));
  }
  if (header_len > bytes.size() - at) return bad("truncated header");
  std::string h = bytes.substr(at, header_len);
  at += header_len;
  std::string descr, fortran, shape;
  if (!dict_value(h, "descr", &descr) || !dict_value(h, "fortran_order", &fortran) || !dict_value(h, "shape", &shape))
    return bad(absl::StrCat("the header is not a dict with 'descr', 'fortran_order' and 'shape': ", h));
  NpyArray a;
  bool found = false;
  for (const Descr& d : kDescrs)
    if (descr == absl::StrCat("'", d.npy, "'")) a.dtype = d.dtype, found = true;
  if (!found) {
    if (descr.size() > 2 && descr[1] == '>') return bad(absl::StrCat("big-endian data (", descr, ") is not supported; save it little-endian"));
    return bad(absl::StrCat("dtype ", descr, " is not one kiln has (<f4 <f2 <f8 <i4 <i8 |i1 |u1 |b1)"));
  }
  if (fortran == "True") return bad("Fortran-order data is not supported; save it in C order (np.ascontiguousarray)");
  if (fortran != "False") return bad(absl::StrCat("fortran_order is '", fortran, "'"));
  if (shape.size() < 2 || shape.front() != '(' || shape.back() != ')') return bad(absl::StrCat("shape ", shape, " is not a tuple"));
  for (absl::string_view d : absl::StrSplit(shape.substr(1, shape.size() - 2), ',', absl::SkipWhitespace())) {
    std::string s(absl::StripAsciiWhitespace(d));
    if (s.empty() || s.size() > 15 || s.find_first_not_of("0123456789") != std::string::npos)
      return bad(absl::StrCat("shape ", shape, " has a dimension that is not a non-negative integer"));
    a.shape.push_back(std::stoll(s));
  }
  size_t want = size_t(shape_numel(a.shape) * dtype_size(a.dtype));
  if (bytes.size() - at != want)
    return bad(absl::StrCat("holds ", bytes.size() - at, " data bytes; ", dtype_name(a.dtype), shape_str(a.shape), " needs ", want));
  a.data = bytes.substr(at);
  return a;
}

std::string format_npy(const NpyArray& a) {
  const char* descr = "<f4";
  for (const Descr& d : kDescrs)
    if (d.dtype == a.dtype) descr = d.npy;
  // NumPy's spelling: (), (5,), (2, 3).
  std::string shape = absl::StrCat("(", absl::StrJoin(a.shape, ", "), a.shape.size() == 1 ? ",)" : ")");
  std::string dict = absl::StrCat("{'descr': '", descr, "', 'fortran_order': False, 'shape': ", shape, ", }");
  bool v2 = dict.size() + 12 > 65535;
  size_t prefix = v2 ? 12 : 10;
  size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict += '\n';
  std::string out = "\x93NUMPY";
  out += char(v2 ? 2 : 1);
  out += char(0);
  for (size_t i = 0; i < (v2 ? 4u : 2u); ++i) out += char((dict.size() >> (8 * i)) & 0xff);
  return out + dict + a.data;
}

absl::StatusOr<NpyArray> read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_npy(ss.str(), path);
}

absl::Status write_npy(const std::string& path, const NpyArray& a) {
  std::string bytes = format_npy(a);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f || !f.write(bytes.data(), std::streamsize(bytes.size())) || !f.flush())
    return absl::PermissionDeniedError(absl::StrCat(path, ": cannot write"));
  return absl::OkStatus();
}

}  // namespace kiln::kilnc
