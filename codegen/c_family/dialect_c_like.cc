// The arithmetic of the C-like dialects (CUDA, HIP, MSL: dialect.h's c_like_op): integer ops wrap
// through unsigned arithmetic (no signed-overflow UB), integer division takes op.h's defined
// cases through the kiln_*div helpers every C-like preamble defines, and only the names of the
// math functions differ between dialects (math()).
#include "absl/strings/str_cat.h"
#include "codegen/c_family/dialect.h"

namespace kiln::codegen::gpu {

std::string DialectOps::c_like_op(ir::Op o, DType t, const std::vector<std::string>& a) const {
  const bool f = is_float(t);
  auto u = [&](const std::string& x) { return convert(u32(), x); };
  auto wu = [&](const std::string& x) { return convert(wide_unsigned(), x); };
  auto call = [&](ir::Op m) {
    return a.size() > 1 && (m == ir::Op::kPow || m == ir::Op::kMax || m == ir::Op::kMin)
               ? absl::StrCat(math(m, t), "(", a[0], ", ", a[1], ")")
               : absl::StrCat(math(m, t), "(", a[0], ")");
  };
  auto wrap = [&](const char* sym) {
    if (t == DType::kInt64) return convert(type(t), absl::StrCat(wu(a[0]), " ", sym, " ", wu(a[1])));
    if (t == DType::kInt32 || dtype_size(t) <= 2)  // (16-bit operands would promote to int, whose product may overflow)
      return convert(type(t), absl::StrCat(u(a[0]), " ", sym, " ", u(a[1])));
    return convert(type(t), absl::StrCat(a[0], " ", sym, " ", a[1]));
  };
  auto bin = [&](const char* sym) { return absl::StrCat("(", a[0], " ", sym, " ", a[1], ")"); };
  const std::string one = literal(t, Scalar::from_double(1.0).cast_to(t));
  switch (o) {
    case ir::Op::kNeg:
      if (f) return absl::StrCat("(-", a[0], ")");
      if (t == DType::kInt64) return convert(type(t), absl::StrCat(wu("0"), " - ", wu(a[0])));
      return convert(type(t), absl::StrCat("0u - ", u(a[0])));
    case ir::Op::kExp:
    case ir::Op::kLog:
    case ir::Op::kSqrt:
    case ir::Op::kRsqrt:
    case ir::Op::kSin:
    case ir::Op::kCos:
    case ir::Op::kTanh:
    case ir::Op::kErf:
    case ir::Op::kFloor:
    case ir::Op::kCeil: return call(o);
    case ir::Op::kAbs:
      if (f) return call(o);
      if (!is_signed(t)) return a[0];
      return absl::StrCat("(", a[0], " < ", literal(t, Scalar::from_int(0).cast_to(t)), " ? ", c_like_op(ir::Op::kNeg, t, a), " : ",
                          a[0], ")");
    case ir::Op::kSigmoid: return absl::StrCat("(", one, " / (", one, " + ", math(ir::Op::kExp, t), "(-", a[0], ")))");
    case ir::Op::kRecip: return absl::StrCat("(", one, " / ", a[0], ")");
    case ir::Op::kNot: return absl::StrCat("(!", a[0], ")");
    case ir::Op::kAdd: return f ? bin("+") : wrap("+");
    case ir::Op::kSub: return f ? bin("-") : wrap("-");
    case ir::Op::kMul: return f ? bin("*") : wrap("*");
    case ir::Op::kDiv: return bin("/");
    case ir::Op::kPow: return call(o);
    case ir::Op::kMax:
    case ir::Op::kMin: {
      const bool max = o == ir::Op::kMax;
      if (f) return call(o);
      if (t == DType::kBool) return bin(max ? "||" : "&&");
      return absl::StrCat("(", a[0], max ? " > " : " < ", a[1], " ? ", a[0], " : ", a[1], ")");
    }
    case ir::Op::kLt: return bin("<");
    case ir::Op::kLe: return bin("<=");
    case ir::Op::kEq: return bin("==");
    case ir::Op::kNe: return bin("!=");
    case ir::Op::kAnd: return bin("&&");
    case ir::Op::kOr: return bin("||");
    // (op.h's defined cases; 8- and 16-bit operands divide as int and wrap back)
    case ir::Op::kIntDiv:
    case ir::Op::kIntRem: {
      const bool div = o == ir::Op::kIntDiv;
      if (t == DType::kInt64) return absl::StrCat(div ? "kiln_ldiv(" : "kiln_lrem(", a[0], ", ", a[1], ")");
      if (t == DType::kUInt32) return absl::StrCat(div ? "kiln_udiv(" : "kiln_urem(", a[0], ", ", a[1], ")");
      if (t == DType::kInt32) return absl::StrCat(div ? "kiln_idiv(" : "kiln_irem(", a[0], ", ", a[1], ")");
      const std::string i = type(DType::kInt32);
      return convert(type(t), absl::StrCat(div ? "kiln_idiv(" : "kiln_irem(", convert(i, a[0]), ", ", convert(i, a[1]), ")"));
    }
    default: return "/*unsupported op*/0";
  }
}

}  // namespace kiln::codegen::gpu
