#include "codegen/llvm/math.h"

#include <cmath>

#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/Module.h"

namespace kiln::codegen::cpu {
namespace {

using llvm::Value;

Value* cf(llvm::IRBuilder<>&, Value* like, double v) { return llvm::ConstantFP::get(like->getType(), v); }

Value* call1(llvm::IRBuilder<>& b, llvm::Intrinsic::ID id, Value* x) {
  return b.CreateUnaryIntrinsic(id, x);
}

bool is_f32(Value* x) { return x->getType()->isFloatTy(); }

// A call to the C library's double function `name` (tanh, erf, ...).
Value* libm(llvm::IRBuilder<>& b, const char* name, Value* x) {
  llvm::Module* m = b.GetInsertBlock()->getModule();
  llvm::FunctionCallee f = m->getOrInsertFunction(name, x->getType(), x->getType());
  return b.CreateCall(f, {x});
}

// Horner evaluation of c[0] + c[1] x + c[2] x^2 + ...
Value* poly(llvm::IRBuilder<>& b, Value* x, std::initializer_list<double> c) {
  std::vector<double> v(c);
  Value* r = cf(b, x, v.back());
  for (size_t i = v.size() - 1; i-- > 0;) r = b.CreateFAdd(b.CreateFMul(r, x), cf(b, x, v[i]));
  return r;
}

// p * 2^n for an integer-valued float n in [-252, 254], scaling by two exact power-of-two
// factors in turn so that neither factor overflows.
Value* scale_pow2(llvm::IRBuilder<>& b, Value* p, Value* n_f) {
  llvm::Type* i32 = b.getInt32Ty();
  Value* n = b.CreateFPToSI(n_f, i32);
  Value* h = b.CreateAShr(n, 1);
  Value* l = b.CreateSub(n, h);
  auto scale = [&](Value* e) {
    return b.CreateBitCast(b.CreateShl(b.CreateAdd(e, b.getInt32(127)), 23), b.getFloatTy());
  };
  return b.CreateFMul(b.CreateFMul(p, scale(h)), scale(l));
}

}  // namespace

Value* emit_exp(llvm::IRBuilder<>& b, Value* x) {
  if (!is_f32(x)) return call1(b, llvm::Intrinsic::exp, x);
  // exp(x) = 2^n * e^r, n = rint(x / ln2), |r| <= ln2/2; degree-7 polynomial for e^r.
  Value* n = call1(b, llvm::Intrinsic::rint, b.CreateFMul(x, cf(b, x, 1.4426950408889634)));
  n = b.CreateMinNum(b.CreateMaxNum(n, cf(b, x, -252.0)), cf(b, x, 254.0));
  Value* r = b.CreateFSub(x, b.CreateFMul(n, cf(b, x, 0.693359375)));
  r = b.CreateFSub(r, b.CreateFMul(n, cf(b, x, -2.12194440e-4)));
  Value* p = poly(b, r, {1.0, 1.0, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040});
  Value* v = scale_pow2(b, p, n);
  v = b.CreateSelect(b.CreateFCmpOGT(x, cf(b, x, 88.72283905206835)), cf(b, x, INFINITY), v);
  v = b.CreateSelect(b.CreateFCmpOLT(x, cf(b, x, -103.97207708)), cf(b, x, 0.0), v);
  return v;  // NaN propagates through the polynomial
}

Value* emit_log(llvm::IRBuilder<>& b, Value* x) {
  if (!is_f32(x)) return call1(b, llvm::Intrinsic::log, x);
  llvm::Type* i32 = b.getInt32Ty();
  // Scale subnormals into the normal range.
  Value* tiny = b.CreateFCmpOLT(x, cf(b, x, 1.17549435e-38));
  Value* xs = b.CreateSelect(tiny, b.CreateFMul(x, cf(b, x, 8388608.0)), x);
  Value* eadj = b.CreateSelect(tiny, cf(b, x, -23.0), cf(b, x, 0.0));
  Value* bits = b.CreateBitCast(xs, i32);
  Value* e = b.CreateSIToFP(b.CreateSub(b.CreateAnd(b.CreateLShr(bits, 23), b.getInt32(0xff)), b.getInt32(126)),
                            x->getType());
  Value* m = b.CreateBitCast(b.CreateOr(b.CreateAnd(bits, b.getInt32(0x7fffff)), b.getInt32(0x3f000000)), x->getType());
  // m in [0.5, 1): fold to [sqrt(1/2), sqrt(2)) - 1.
  Value* small = b.CreateFCmpOLT(m, cf(b, x, 0.707106781186547524));
  e = b.CreateFAdd(b.CreateSelect(small, b.CreateFSub(e, cf(b, x, 1.0)), e), eadj);
  Value* f = b.CreateSelect(small, b.CreateFSub(b.CreateFAdd(m, m), cf(b, x, 1.0)), b.CreateFSub(m, cf(b, x, 1.0)));
  Value* z = b.CreateFMul(f, f);
  Value* y = poly(b, f, {3.3333331174E-1, -2.4999993993E-1, 2.0000714765E-1, -1.6668057665E-1, 1.4249322787E-1,
                         -1.2420140846E-1, 1.1676998740E-1, -1.1514610310E-1, 7.0376836292E-2});
  y = b.CreateFMul(b.CreateFMul(y, f), z);
  y = b.CreateFAdd(y, b.CreateFMul(e, cf(b, x, -2.12194440e-4)));
  y = b.CreateFSub(y, b.CreateFMul(z, cf(b, x, 0.5)));
  Value* r = b.CreateFAdd(b.CreateFAdd(f, y), b.CreateFMul(e, cf(b, x, 0.693359375)));
  // Special values: log(0) = -inf, log(x<0) = NaN, log(inf) = inf, NaN stays NaN.
  r = b.CreateSelect(b.CreateFCmpOEQ(x, cf(b, x, 0.0)), cf(b, x, -INFINITY), r);
  r = b.CreateSelect(b.CreateFCmpOLT(x, cf(b, x, 0.0)), cf(b, x, NAN), r);
  r = b.CreateSelect(b.CreateFCmpOEQ(x, cf(b, x, INFINITY)), x, r);
  r = b.CreateSelect(b.CreateFCmpUNO(x, x), x, r);
  return r;
}

Value* emit_tanh(llvm::IRBuilder<>& b, Value* x) {
  if (!is_f32(x)) return libm(b, "tanh", x);
  Value* ax = call1(b, llvm::Intrinsic::fabs, x);
  // |x| >= 0.125: 1 - 2 / (e^{2|x|} + 1); small |x|: odd Taylor polynomial.
  Value* e = emit_exp(b, b.CreateFMul(ax, cf(b, x, 2.0)));
  Value* big = b.CreateFSub(cf(b, x, 1.0), b.CreateFDiv(cf(b, x, 2.0), b.CreateFAdd(e, cf(b, x, 1.0))));
  Value* x2 = b.CreateFMul(x, x);
  Value* smallv = b.CreateFMul(x, poly(b, x2, {1.0, -1.0 / 3, 2.0 / 15, -17.0 / 315, 62.0 / 2835}));
  Value* signed_big = b.CreateCopySign(big, x);
  Value* r = b.CreateSelect(b.CreateFCmpOLT(ax, cf(b, x, 0.125)), smallv, signed_big);
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, r);
}

Value* emit_sigmoid(llvm::IRBuilder<>& b, Value* x) {
  Value* e = emit_exp(b, b.CreateFNeg(x));
  return b.CreateFDiv(cf(b, x, 1.0), b.CreateFAdd(cf(b, x, 1.0), e));
}

Value* emit_erf(llvm::IRBuilder<>& b, Value* x) {
  if (!is_f32(x)) return libm(b, "erf", x);
  Value* ax = call1(b, llvm::Intrinsic::fabs, x);
  // |x| < 1: Taylor series of erf (odd, converges fast there).
  Value* x2 = b.CreateFMul(x, x);
  const double k = 1.1283791670955126;  // 2/sqrt(pi)
  Value* s = b.CreateFMul(x, poly(b, x2, {k, -k / 3, k / 10, -k / 42, k / 216, -k / 1320, k / 9360, -k / 75600,
                                          k / 685440, -k / 6894720, k / 76204800}));
  // |x| >= 1: erfc by the Chebyshev-fitted form t * exp(-x^2 + P(t)), t = 1 / (1 + |x|/2).
  Value* t = b.CreateFDiv(cf(b, x, 1.0), b.CreateFAdd(cf(b, x, 1.0), b.CreateFMul(ax, cf(b, x, 0.5))));
  Value* p = poly(b, t, {-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807, -1.13520398,
                         1.48851587, -0.82215223, 0.17087277});
  Value* erfc = b.CreateFMul(t, emit_exp(b, b.CreateFAdd(b.CreateFNeg(b.CreateFMul(ax, ax)), p)));
  Value* l = b.CreateCopySign(b.CreateFSub(cf(b, x, 1.0), erfc), x);
  Value* r = b.CreateSelect(b.CreateFCmpOLT(ax, cf(b, x, 1.0)), s, l);
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, r);
}

}  // namespace kiln::codegen::cpu
