#include "codegen/llvm/emit_kernel.h"

#include <cmath>
#include <functional>
#include <map>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "codegen/llvm/math.h"
#include "ir/graph.h"
#include "ir/half.h"
#include "ir/kernel_twins.h"
#include "ir/random.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/MDBuilder.h"

namespace kiln::codegen::cpu {
namespace {

using ir::KNode;
using ir::KNodeId;
using ir::Op;
using llvm::Value;

constexpr int kContractMB = 4;
constexpr int kContractNB = 16;
constexpr int64_t kContractGroup = 16;        // m blocks sharing one packed rhs panel
constexpr int64_t kPanelBytes = int64_t(128) << 10;  // largest packed panel (a stack array)
constexpr size_t kVectorizeNodeLimit = 160;           // larger kernels' loops are not vectorized

class Emitter {
 public:
  Emitter(llvm::Module& m, const ir::Program& p, const ir::Kernel& k)
      : m_(m), ctx_(m.getContext()), b_(ctx_), p_(p), k_(k), idx_(k.shape.size(), nullptr) {}

  absl::StatusOr<KernelLaunch> run(const std::string& symbol) {
    llvm::Type* ptr = llvm::PointerType::get(ctx_, 0);
    llvm::Type* i64 = b_.getInt64Ty();
    auto* fty = llvm::FunctionType::get(b_.getVoidTy(), {ptr, ptr, i64, i64}, false);
    fn_ = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, symbol, m_);
    fn_->addFnAttr(llvm::Attribute::NoUnwind);
    auto* entry = llvm::BasicBlock::Create(ctx_, "entry", fn_);
    b_.SetInsertPoint(entry);
    entry_ = entry;
    // The kernel's own bindings (ir/kernel_twins.h): local buffer j is args[index[j]], local param
    // j the 64-bit pattern (ir::encode_param) in args[index[buffers + j]], so twins of this kernel
    // call the same function with their own index arrays.
    Value* args = fn_->getArg(0);
    Value* index = fn_->getArg(1);
    const std::vector<int> bufs = ir::kernel_buffers(k_), slots = ir::kernel_param_slots(k_);
    auto arg = [&](size_t position, const std::string& name) {
      Value* at = b_.CreateLoad(b_.getInt32Ty(), b_.CreateGEP(b_.getInt32Ty(), index, b_.getInt64(int64_t(position))));
      return b_.CreateLoad(ptr, b_.CreateGEP(ptr, args, b_.CreateSExt(at, i64)), name);
    };
    buf_.assign(p_.buffers.size(), nullptr);
    for (size_t j = 0; j < bufs.size(); ++j) buf_[size_t(bufs[j])] = arg(j, absl::StrCat("buf", bufs[j]));
    for (size_t j = 0; j < slots.size(); ++j)
      param_[slots[j]] = b_.CreatePtrToInt(arg(bufs.size() + j, ""), i64, absl::StrCat("param", slots[j]));
    // Buffers of one kernel do not overlap (plan_memory keeps live intermediates apart) except
    // an in-place pair (ir::share_bytes): one alias scope per buffer, each declared not to alias
    // the others but its in-place partner, lets LLVM vectorize without runtime overlap checks.
    llvm::MDBuilder mdb(ctx_);
    llvm::MDNode* domain = mdb.createAnonymousAliasScopeDomain("kiln");
    std::vector<llvm::Metadata*> scopes;
    for (size_t j = 0; j < bufs.size(); ++j) scopes.push_back(mdb.createAnonymousAliasScope(domain));
    scope_.assign(p_.buffers.size(), nullptr);
    noalias_.assign(p_.buffers.size(), nullptr);
    for (size_t i = 0; i < bufs.size(); ++i) {
      std::vector<llvm::Metadata*> others;
      for (size_t j = 0; j < bufs.size(); ++j)
        if (j != i && !ir::share_bytes(p_, bufs[i], bufs[j])) others.push_back(scopes[j]);
      scope_[size_t(bufs[i])] = llvm::MDNode::get(ctx_, {scopes[i]});
      noalias_[size_t(bufs[i])] = llvm::MDNode::get(ctx_, others);
    }
    scopes_.emplace_back();
    KernelLaunch launch;
    launch.symbol = symbol;
    int r = int(k_.shape.size());
    for (int d = 0; d < r; ++d)
      if (!k_.reduce[d]) outer_axes_.push_back(d);
      else reduce_axes_.push_back(d);
    for (size_t i = 0; i < k_.nodes.size(); ++i)
      if (ir::is_reduce(k_.nodes[i].op)) phases_.push_back(KNodeId(i));
    launch.work = std::max<int64_t>(shape_numel(k_.shape), 1) * std::max<size_t>(k_.nodes.size(), 1);
    if (k_.contraction.reduce >= 0) {
      launch.tiles = emit_contraction();
    } else {
      launch.tiles = emit_generic();
    }
    b_.CreateRetVoid();
    if (!error_.empty()) return absl::InternalError(error_);
    return launch;
  }

 private:
  // ---------------------------------------------------------------- types and constants
  llvm::Type* compute_type(DType t) {
    switch (t) {
      case DType::kBool: return b_.getInt1Ty();
      case DType::kUInt8:
      case DType::kInt8: return b_.getInt8Ty();
      case DType::kInt16:
      case DType::kUInt16: return b_.getInt16Ty();
      case DType::kInt32:
      case DType::kUInt32: return b_.getInt32Ty();
      case DType::kInt64: return b_.getInt64Ty();
      case DType::kFloat64: return b_.getDoubleTy();
      default: return b_.getFloatTy();
    }
  }
  llvm::Type* storage_type(DType t) {
    switch (t) {
      case DType::kBool: return b_.getInt8Ty();
      case DType::kFloat16:
      case DType::kBFloat16: return b_.getInt16Ty();
      default: return compute_type(t);
    }
  }
  Value* constant(DType t, const Scalar& s) {
    llvm::Type* ty = compute_type(t);
    if (is_float(t)) return llvm::ConstantFP::get(ty, s.as_double());
    if (t == DType::kBool) return b_.getInt1(s.as_int() != 0);
    return llvm::ConstantInt::get(ty, uint64_t(s.as_int()), true);
  }
  Value* zero(DType t) { return llvm::Constant::getNullValue(compute_type(t)); }
  // The extent of kernel axis d (i64): a constant, or for a symbolic axis (ir::SymExtent) its
  // param times its coefficient, so the code holds for every size.
  Value* extent(int d) {
    if (!k_.symbolic(d)) return b_.getInt64(k_.shape[size_t(d)]);
    const ir::SymExtent& e = k_.sym[size_t(d)];
    Value* v = param_.at(e.slot);
    return e.coef == 1 ? v : b_.CreateMul(v, b_.getInt64(e.coef), "", true, true);
  }
  // Sets idx_ of `axes` (row-major, the last fastest) from the flat index `flat`.
  void unravel(Value* flat, const std::vector<int>& axes) {
    Value* stride = b_.getInt64(1);
    for (size_t i = axes.size(); i-- > 0;) {
      int d = axes[i];
      auto* c = llvm::dyn_cast<llvm::ConstantInt>(stride);
      Value* q = c && c->isOne() ? flat : b_.CreateUDiv(flat, stride);
      idx_[d] = b_.CreateURem(q, extent(d));
      stride = b_.CreateMul(stride, extent(d));
    }
  }

  // ---------------------------------------------------------------- loops and scopes
  Value* lookup(KNodeId id) {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->find(id);
      if (f != it->end()) return f->second;
    }
    return nullptr;
  }

  // for (i = lo; i < hi; ++i) body(i); values computed in body stay inside.
  // interleave > 1 asks the loop vectorizer to run that many vectors side by side: a long
  // dependent chain per element (64 fused ops) is latency-bound otherwise.
  void loop(Value* lo, Value* hi, const std::function<void(Value*)>& body, const char* name = "i", int interleave = 0) {
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* header = llvm::BasicBlock::Create(ctx_, absl::StrCat(name, ".head"), fn_);
    auto* bodyb = llvm::BasicBlock::Create(ctx_, absl::StrCat(name, ".body"), fn_);
    auto* exit = llvm::BasicBlock::Create(ctx_, absl::StrCat(name, ".exit"), fn_);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode* i = b_.CreatePHI(lo->getType(), 2, name);
    i->addIncoming(lo, pre);
    b_.CreateCondBr(b_.CreateICmpSLT(i, hi), bodyb, exit);
    b_.SetInsertPoint(bodyb);
    scopes_.emplace_back();
    body(i);
    scopes_.pop_back();
    Value* next = b_.CreateAdd(i, llvm::ConstantInt::get(lo->getType(), 1), "", true, true);
    i->addIncoming(next, b_.GetInsertBlock());
    llvm::BranchInst* back = b_.CreateBr(header);
    // A kernel of very many expression nodes (an unrolled recurrent layer) is not vectorized:
    // LLVM 16's loop vectorizer takes time superlinear in the loop body there (sinkScalarOperands;
    // minutes for one ONNX model), and such kernels are latency-bound chains anyway.
    const bool vectorize = k_.nodes.size() <= kVectorizeNodeLimit;
    if (interleave > 1 || !vectorize) {
      llvm::Metadata* hint[] = {llvm::MDString::get(ctx_, vectorize ? "llvm.loop.interleave.count" : "llvm.loop.vectorize.enable"),
                                vectorize ? llvm::ConstantAsMetadata::get(b_.getInt32(interleave))
                                          : llvm::ConstantAsMetadata::get(b_.getFalse())};
      llvm::TempMDTuple self = llvm::MDNode::getTemporary(ctx_, {});
      llvm::MDNode* md = llvm::MDNode::get(ctx_, {self.get(), llvm::MDNode::get(ctx_, hint)});
      md->replaceOperandWith(0, md);
      back->setMetadata(llvm::LLVMContext::MD_loop, md);
    }
    b_.SetInsertPoint(exit);
  }

  // Rough per-element cost of the kernel's expression: transcendental ops count 16.
  int64_t element_cost() const {
    int64_t c = 0;
    for (const KNode& n : k_.nodes) {
      switch (n.op) {
        case Op::kExp: case Op::kLog: case Op::kTanh: case Op::kSin: case Op::kCos: case Op::kErf:
        case Op::kPow: case Op::kSigmoid: c += 16; break;
        default: c += 1;
      }
    }
    return c;
  }

  // Nested loops over `axes` (outermost first), setting idx_ for each.
  void loops(const std::vector<int>& axes, size_t level, const std::function<void()>& body) {
    if (level == axes.size()) {
      body();
      return;
    }
    int d = axes[level];
    loop(b_.getInt64(0), b_.getInt64(k_.shape[d]), [&](Value* i) {
      idx_[d] = i;
      loops(axes, level + 1, body);
    }, "r");
    idx_[d] = nullptr;
  }

  llvm::AllocaInst* entry_alloca(llvm::Type* t, int64_t n, const char* name) {
    llvm::IRBuilder<> eb(entry_, entry_->begin());
    return eb.CreateAlloca(t, eb.getInt64(n), name);
  }

  // ---------------------------------------------------------------- index maps
  struct Addr {
    Value* offset;
    Value* valid;  // nullptr = always valid
  };

  // A view's flat index as c0 + sum of coef * v, each v an index in [0, ext) wherever every mask
  // before it held (elsewhere the value is never used).
  struct Term {
    int64_t coef;
    Value* v;
    int64_t ext;
  };
  Value* sum_of(const std::vector<Term>& terms, int64_t c0) {
    Value* r = b_.getInt64(c0);
    for (const Term& t : terms) r = b_.CreateAdd(r, t.coef == 1 ? t.v : b_.CreateMul(t.v, b_.getInt64(t.coef)));
    return r;
  }

  // Unflattens c0 + sum(terms), which lies in [0, prod(s[lo..hi))) wherever it is used, into
  // (*out)[lo..hi) over shape s: split without dividing where ir::split_flat allows, else divided.
  void unflatten(const std::vector<Term>& terms, int64_t c0, const Shape& s, size_t lo, size_t hi,
                 std::vector<Value*>* out) {
    if (hi - lo == 1) {
      (*out)[lo] = sum_of(terms, c0);
      return;
    }
    ir::FlatSplit<Term> sp;
    if (ir::split_flat(terms, c0, s, lo, hi, &sp)) {
      unflatten(sp.high, sp.high_c0, s, lo, sp.boundary, out);
      unflatten(sp.low, sp.low_c0, s, sp.boundary, hi, out);
      return;
    }
    // No split: divide. A masked-out index may be negative; its value is never used, so signed
    // division is fine.
    Value* flat = sum_of(terms, c0);
    int64_t stride = 1;
    for (size_t d = hi; d-- > lo;) {
      Value* q = stride == 1 ? flat : b_.CreateSDiv(flat, b_.getInt64(stride));
      (*out)[d] = d == lo ? q : b_.CreateSRem(q, b_.getInt64(s[d]));
      stride *= s[d];
    }
  }

  // An indexed access (see ir::KNode) passes its index value and ints {split, axis, extent}.
  Addr address(const ir::IndexMap& m, KNodeId index = -1, const std::vector<int64_t>* at = nullptr) {
    std::vector<Value*> idx;
    for (size_t d = 0; d < k_.shape.size(); ++d) idx.push_back(idx_[d] ? idx_[d] : b_.getInt64(0));
    Value* valid = nullptr;
    Value* flat = nullptr;
    for (size_t j = m.views.size(); j-- > 0;) {
      const ir::View& v = m.views[j];
      std::vector<Term> terms;
      for (size_t d = 0; d < v.shape.size(); ++d) {
        if (v.has_mask() && (v.mask[d].first > 0 || v.mask[d].second < v.shape[d])) {
          Value* ok = b_.CreateAnd(b_.CreateICmpSGE(idx[d], b_.getInt64(v.mask[d].first)),
                                   b_.CreateICmpSLT(idx[d], b_.getInt64(v.mask[d].second)));
          valid = valid ? b_.CreateAnd(valid, ok) : ok;
        }
        if (v.strides[d] != 0 && v.shape[d] != 1) terms.push_back({v.strides[d], idx[d], v.shape[d]});
      }
      if (j == 0) {
        flat = sum_of(terms, v.offset);
        break;
      }
      // Unflatten into the previous view's shape. An indexed load unflattens over its result's
      // shape and takes one coordinate from its index.
      const bool split = index >= 0 && int64_t(j) == (*at)[0];
      const Shape s = split ? ir::indexed_space(m, *at) : m.views[j - 1].shape;
      idx.assign(s.size(), nullptr);
      if (s.empty()) continue;
      if (split) {
        // The index replaces one coordinate: the others are divided out as they always were.
        Value* f = sum_of(terms, v.offset);
        int64_t stride = 1;
        for (size_t d = s.size(); d-- > 0;) {
          Value* q = stride == 1 ? f : b_.CreateSDiv(f, b_.getInt64(stride));
          idx[d] = d == 0 ? q : b_.CreateSRem(q, b_.getInt64(s[d]));
          stride *= s[d];
        }
        idx[size_t((*at)[1])] = eval(index);
      } else {
        unflatten(terms, v.offset, s, 0, s.size(), &idx);
      }
    }
    return {flat, valid};
  }

  // ---------------------------------------------------------------- loads and stores
  Value* from_storage(DType t, Value* v) {
    switch (t) {
      case DType::kBool: return b_.CreateICmpNE(v, b_.getInt8(0));
      case DType::kFloat16: return b_.CreateFPExt(b_.CreateBitCast(v, b_.getHalfTy()), b_.getFloatTy());
      case DType::kBFloat16:
        return b_.CreateBitCast(b_.CreateShl(b_.CreateZExt(v, b_.getInt32Ty()), 16), b_.getFloatTy());
      default: return v;
    }
  }
  Value* bf16_bits(Value* f) {
    // Round to nearest even; NaN stays a quiet NaN.
    Value* bits = b_.CreateBitCast(f, b_.getInt32Ty());
    Value* lsb = b_.CreateAnd(b_.CreateLShr(bits, 16), b_.getInt32(1));
    Value* rounded = b_.CreateAdd(bits, b_.CreateAdd(b_.getInt32(0x7fff), lsb));
    Value* nan = b_.CreateFCmpUNO(f, f);
    Value* r = b_.CreateSelect(nan, b_.CreateOr(bits, b_.getInt32(0x400000)), rounded);
    return b_.CreateTrunc(b_.CreateLShr(r, 16), b_.getInt16Ty());
  }
  Value* to_storage(DType t, Value* v) {
    switch (t) {
      case DType::kBool: return b_.CreateZExt(v, b_.getInt8Ty());
      case DType::kFloat16: return b_.CreateBitCast(b_.CreateFPTrunc(v, b_.getHalfTy()), b_.getInt16Ty());
      case DType::kBFloat16: return bf16_bits(v);
      default: return v;
    }
  }

  Value* load(const KNode& n) {
    Addr a = ir::is_indexed_load(n) ? address(n.map, n.inputs[0], &n.ints) : address(n.map);
    llvm::Type* st = storage_type(n.dtype);
    Value* off = a.valid ? b_.CreateSelect(a.valid, a.offset, b_.getInt64(0)) : a.offset;
    llvm::LoadInst* ld = b_.CreateLoad(st, b_.CreateGEP(st, buf_[n.buffer], off));
    tag(ld, n.buffer);
    Value* v = from_storage(n.dtype, ld);
    if (a.valid) v = b_.CreateSelect(a.valid, v, zero(n.dtype));
    return v;
  }

  void store(const ir::Store& s) {
    const ir::BufferDesc& bd = p_.buffers[s.buffer];
    Value* v = eval(s.value);
    Addr a = s.indexed() ? address(s.map, s.index, &s.ints) : address(s.map);
    llvm::Type* st = storage_type(bd.dtype);
    tag(b_.CreateStore(to_storage(bd.dtype, v), b_.CreateGEP(st, buf_[s.buffer], a.offset)), s.buffer);
  }
  void tag(llvm::Instruction* i, int buffer) {
    i->setMetadata(llvm::LLVMContext::MD_alias_scope, scope_[buffer]);
    i->setMetadata(llvm::LLVMContext::MD_noalias, noalias_[buffer]);
  }

  // ---------------------------------------------------------------- expressions
  Value* cast(Value* v, DType from, DType to) {
    if (from == to) return v;
    llvm::Type* tt = compute_type(to);
    if (to == DType::kBool) {
      if (is_float(from)) return b_.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0.0));
      return b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
    }
    if (from == DType::kBool) {
      if (is_float(to)) return b_.CreateUIToFP(v, tt);
      return b_.CreateZExt(v, tt);
    }
    if (is_float(from) && is_float(to)) {
      Value* r = v;
      if (v->getType() != tt) r = tt->isDoubleTy() ? b_.CreateFPExt(v, tt) : b_.CreateFPTrunc(v, tt);
      // Values of half dtypes live in float registers; round them to their precision here.
      if (to == DType::kFloat16) r = b_.CreateFPExt(b_.CreateFPTrunc(r, b_.getHalfTy()), b_.getFloatTy());
      if (to == DType::kBFloat16)
        r = b_.CreateBitCast(b_.CreateShl(b_.CreateZExt(bf16_bits(r), b_.getInt32Ty()), 16), b_.getFloatTy());
      return r;
    }
    if (is_float(from)) {
      // Saturating conversion, NaN -> 0 (kiln's defined cast semantics).
      auto id = is_signed(to) ? llvm::Intrinsic::fptosi_sat : llvm::Intrinsic::fptoui_sat;
      return b_.CreateIntrinsic(id, {tt, v->getType()}, {v});
    }
    if (is_float(to)) return is_signed(from) ? b_.CreateSIToFP(v, tt) : b_.CreateUIToFP(v, tt);
    unsigned fb = v->getType()->getIntegerBitWidth(), tb = tt->getIntegerBitWidth();
    if (tb < fb) return b_.CreateTrunc(v, tt);
    if (tb > fb) return is_signed(from) ? b_.CreateSExt(v, tt) : b_.CreateZExt(v, tt);
    return v;
  }

  Value* rng_bits(Value* lin, const KNode& n, Value* counter) {
    ir::RngKey key = ir::rng_key(uint64_t(n.ints[0]));
    // The keys: baked from the seed, or the two halves of a seed param (ir::encode_param).
    Value* k0 = b_.getInt32(key.k0);
    Value* k1 = b_.getInt32(key.k1);
    if (!n.inputs.empty()) {
      Value* raw = param_.at(k_.nodes[size_t(n.inputs[0])].ints[0]);
      k0 = b_.CreateTrunc(raw, b_.getInt32Ty());
      k1 = b_.CreateTrunc(b_.CreateLShr(raw, 32), b_.getInt32Ty());
    }
    auto mix = [&](Value* x) {
      x = b_.CreateXor(x, b_.CreateLShr(x, 16));
      x = b_.CreateMul(x, b_.getInt32(0x7feb352d));
      x = b_.CreateXor(x, b_.CreateLShr(x, 15));
      x = b_.CreateMul(x, b_.getInt32(0x846ca68bU));
      x = b_.CreateXor(x, b_.CreateLShr(x, 16));
      return x;
    };
    Value* c = counter ? counter : lin;
    Value* lo = b_.CreateTrunc(c, b_.getInt32Ty());
    Value* hi = b_.CreateTrunc(b_.CreateLShr(c, 32), b_.getInt32Ty());
    return mix(b_.CreateAdd(mix(b_.CreateXor(lo, k0)), b_.CreateXor(hi, k1)));
  }
  Value* uniform(Value* bits, llvm::Type* t) {
    Value* u = b_.CreateUIToFP(b_.CreateLShr(bits, 8), t);
    return b_.CreateFMul(u, llvm::ConstantFP::get(t, 1.0 / 16777216.0));
  }

  Value* unary(Op op, DType t, Value* x) {
    bool f = is_float(t);
    switch (op) {
      case Op::kNeg: return f ? b_.CreateFNeg(x) : b_.CreateNeg(x);
      case Op::kExp: return emit_exp(b_, x);
      case Op::kLog: return emit_log(b_, x);
      case Op::kSqrt: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
      case Op::kRsqrt:
        return b_.CreateFDiv(llvm::ConstantFP::get(x->getType(), 1.0), b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x));
      case Op::kAbs:
        if (f) return b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
        if (!is_signed(t)) return x;
        return b_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, x, b_.getFalse());
      case Op::kSin: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::sin, x);
      case Op::kCos: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::cos, x);
      case Op::kTanh: return emit_tanh(b_, x);
      case Op::kSigmoid: return emit_sigmoid(b_, x);
      case Op::kErf: return emit_erf(b_, x);
      case Op::kFloor: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::floor, x);
      case Op::kCeil: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::ceil, x);
      case Op::kRecip: return b_.CreateFDiv(llvm::ConstantFP::get(x->getType(), 1.0), x);
      case Op::kNot: return b_.CreateNot(x);
      default: break;
    }
    error_ = absl::StrCat("cpu codegen: unary op ", ir::op_name(op));
    return x;
  }

  Value* minmax(bool is_max, DType t, Value* x, Value* y) {
    if (is_float(t)) {
      // NaN-propagating, as PyTorch's maximum/minimum.
      Value* m = is_max ? b_.CreateMaxNum(x, y) : b_.CreateMinNum(x, y);
      Value* nan = b_.CreateFCmpUNO(x, y);
      return b_.CreateSelect(nan, b_.CreateFAdd(x, y), m);
    }
    if (t == DType::kBool) return is_max ? b_.CreateOr(x, y) : b_.CreateAnd(x, y);
    llvm::Intrinsic::ID id = !is_signed(t) ? (is_max ? llvm::Intrinsic::umax : llvm::Intrinsic::umin)
                                                : (is_max ? llvm::Intrinsic::smax : llvm::Intrinsic::smin);
    return b_.CreateBinaryIntrinsic(id, x, y);
  }

  // int_div / int_rem (ir/op.h): the divisor is made 1 where it is 0 (and -1 for signed types,
  // whose MIN / -1 traps on x86), and those lanes take their defined results instead.
  Value* int_div_rem(bool div, bool uns, Value* x, Value* y) {
    Value* zero = llvm::ConstantInt::get(y->getType(), 0);
    Value* one = llvm::ConstantInt::get(y->getType(), 1);
    Value* by_zero = b_.CreateICmpEQ(y, zero);
    Value* by_minus_one = uns ? b_.getFalse() : b_.CreateICmpEQ(y, llvm::ConstantInt::getSigned(y->getType(), -1));
    Value* safe = b_.CreateSelect(b_.CreateOr(by_zero, by_minus_one), one, y);
    Value* r = div ? (uns ? b_.CreateUDiv(x, safe) : b_.CreateSDiv(x, safe)) : (uns ? b_.CreateURem(x, safe) : b_.CreateSRem(x, safe));
    if (!uns) r = b_.CreateSelect(by_minus_one, div ? b_.CreateNeg(x) : zero, r);  // (neg wraps: MIN stays MIN)
    return b_.CreateSelect(by_zero, zero, r);
  }

  Value* binary(Op op, DType t, Value* x, Value* y) {
    bool f = is_float(t);
    llvm::FastMathFlags fm;
    fm.setAllowContract(true);
    b_.setFastMathFlags(fm);
    Value* r = nullptr;
    bool uns = !is_signed(t);  // unsigned dtypes and bool
    switch (op) {
      case Op::kAdd: r = f ? b_.CreateFAdd(x, y) : b_.CreateAdd(x, y); break;
      case Op::kSub: r = f ? b_.CreateFSub(x, y) : b_.CreateSub(x, y); break;
      case Op::kMul: r = f ? b_.CreateFMul(x, y) : b_.CreateMul(x, y); break;
      case Op::kDiv: r = b_.CreateFDiv(x, y); break;
      case Op::kPow: r = b_.CreateBinaryIntrinsic(llvm::Intrinsic::pow, x, y); break;
      case Op::kMax: r = minmax(true, t, x, y); break;
      case Op::kMin: r = minmax(false, t, x, y); break;
      case Op::kLt: r = f ? b_.CreateFCmpOLT(x, y) : uns ? b_.CreateICmpULT(x, y) : b_.CreateICmpSLT(x, y); break;
      case Op::kLe: r = f ? b_.CreateFCmpOLE(x, y) : uns ? b_.CreateICmpULE(x, y) : b_.CreateICmpSLE(x, y); break;
      case Op::kEq: r = f ? b_.CreateFCmpOEQ(x, y) : b_.CreateICmpEQ(x, y); break;
      case Op::kNe: r = f ? b_.CreateFCmpUNE(x, y) : b_.CreateICmpNE(x, y); break;
      case Op::kAnd: r = b_.CreateAnd(x, y); break;
      case Op::kOr: r = b_.CreateOr(x, y); break;
      case Op::kIntDiv:
      case Op::kIntRem: r = int_div_rem(op == Op::kIntDiv, uns, x, y); break;
      default: error_ = absl::StrCat("cpu codegen: binary op ", ir::op_name(op)); r = x;
    }
    b_.clearFastMathFlags();
    return r;
  }

  Value* eval(KNodeId id) {
    if (Value* v = lookup(id)) return v;
    Value* v = eval_uncached(id);
    scopes_.back()[id] = v;
    return v;
  }

  Value* eval_uncached(KNodeId id) {
    const KNode& n = k_.nodes[id];
    auto arr = outer_arrays_.find(id);
    if (arr != outer_arrays_.end())
      return b_.CreateLoad(compute_type(n.dtype), b_.CreateGEP(compute_type(n.dtype), arr->second, arr_index_));
    switch (n.op) {
      case Op::kLoad: return load(n);
      case Op::kValid: {
        Addr a = address(n.map);
        return a.valid ? a.valid : b_.getTrue();
      }
      case Op::kConst: return constant(n.dtype, ir::const_value(n.dtype, n.scalar));
      case Op::kParam: {
        Value* raw = param_.at(n.ints[0]);
        if (n.dtype == DType::kFloat64) return b_.CreateBitCast(raw, b_.getDoubleTy());
        if (is_float(n.dtype)) return b_.CreateBitCast(b_.CreateTrunc(raw, b_.getInt32Ty()), b_.getFloatTy());
        return b_.CreateTrunc(raw, compute_type(n.dtype));
      }
      case Op::kIota: {
        Value* lin = address(n.map).offset;
        return is_float(n.dtype) ? b_.CreateSIToFP(lin, compute_type(n.dtype)) : cast(lin, DType::kInt64, n.dtype);
      }
      case Op::kRand: return uniform(rng_bits(address(n.map).offset, n, nullptr), compute_type(n.dtype));
      case Op::kRandn: {
        Value* lin = address(n.map).offset;
        llvm::Type* t = compute_type(n.dtype);
        Value* c0 = b_.CreateShl(lin, 1);
        Value* u1 = uniform(rng_bits(lin, n, c0), t);
        Value* u2 = uniform(rng_bits(lin, n, b_.CreateOr(c0, b_.getInt64(1))), t);
        Value* rad = b_.CreateUnaryIntrinsic(
            llvm::Intrinsic::sqrt,
            b_.CreateFMul(llvm::ConstantFP::get(t, -2.0), emit_log(b_, b_.CreateFSub(llvm::ConstantFP::get(t, 1.0), u1))));
        Value* c = b_.CreateUnaryIntrinsic(llvm::Intrinsic::cos, b_.CreateFMul(llvm::ConstantFP::get(t, 6.283185307179586), u2));
        return b_.CreateFMul(rad, c);
      }
      case Op::kCast: return cast(eval(n.inputs[0]), k_.nodes[n.inputs[0]].dtype, n.dtype);
      case Op::kWhere: return b_.CreateSelect(eval(n.inputs[0]), eval(n.inputs[1]), eval(n.inputs[2]));
      case Op::kSegmentReduce: return segment_fold(n);
      default: break;
    }
    switch (ir::op_class(n.op)) {
      case ir::OpClass::kUnary: return unary(n.op, n.dtype, eval(n.inputs[0]));
      case ir::OpClass::kBinary: {
        DType t = k_.nodes[n.inputs[0]].dtype;
        return binary(n.op, t, eval(n.inputs[0]), eval(n.inputs[1]));
      }
      default: break;
    }
    error_ = absl::StrCat("cpu codegen: node $", id, " (", ir::op_name(n.op), ") is not available here");
    return zero(n.dtype);
  }

  // A segment_reduce (ir/program.h): a loop over its clamped row range, the segment_pos nodes
  // reading the loop's row, folding into an accumulator of the entry block.
  Value* segment_fold(const KNode& n) {
    const Op combine = ir::segment_combine_op(n);
    KNode as_reduce;
    as_reduce.op = ir::segment_fold_op(n);
    as_reduce.dtype = n.dtype;
    llvm::Type* t = compute_type(n.dtype);
    llvm::AllocaInst* acc = entry_alloca(t, 1, "seg");
    b_.CreateStore(reduce_init(as_reduce), acc);
    Value* rows = b_.getInt64(n.ints[1]);
    Value* lo = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin,
                                         b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, eval(n.inputs[0]), b_.getInt64(0)), rows);
    Value* hi = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, eval(n.inputs[1]), lo), rows);
    loop(lo, hi, [&](Value* row) {
      for (size_t i = 0; i < k_.nodes.size(); ++i)
        if (k_.nodes[i].op == Op::kSegmentPos) scopes_.back()[KNodeId(i)] = row;
      Value* x = eval(n.inputs[2]);
      Value* cur = b_.CreateLoad(t, acc);
      b_.CreateStore(binary(combine, n.dtype, cur, x), acc);
    }, "seg");
    return b_.CreateLoad(t, acc);
  }

  // ---------------------------------------------------------------- reductions
  Value* reduce_init(const KNode& n) {
    DType t = n.op == Op::kArgMax || n.op == Op::kArgMin ? k_.nodes[n.inputs[0]].dtype : n.dtype;
    bool f = is_float(t);
    llvm::Type* ty = compute_type(t);
    switch (n.op) {
      case Op::kReduceSum: return zero(t);
      case Op::kReduceProd: return f ? (Value*)llvm::ConstantFP::get(ty, 1.0) : llvm::ConstantInt::get(ty, 1);
      case Op::kReduceMax:
      case Op::kArgMax:
        if (f) return llvm::ConstantFP::get(ty, -INFINITY);
        if (!is_signed(t)) return llvm::ConstantInt::get(ty, 0);
        return llvm::ConstantInt::get(ty, llvm::APInt::getSignedMinValue(ty->getIntegerBitWidth()));
      case Op::kReduceMin:
      case Op::kArgMin:
        if (f) return llvm::ConstantFP::get(ty, INFINITY);
        if (!is_signed(t)) return llvm::ConstantInt::getAllOnesValue(ty);
        return llvm::ConstantInt::get(ty, llvm::APInt::getSignedMaxValue(ty->getIntegerBitWidth()));
      default: return zero(t);
    }
  }

  struct Acc {
    llvm::AllocaInst* value;
    llvm::AllocaInst* index;  // argmax/argmin position, or NaN flag for float max/min
    llvm::Type* type;
  };

  Acc make_acc(const KNode& n, int64_t size) {
    DType t = ir::is_arg_reduce(n.op) ? k_.nodes[n.inputs[0]].dtype : n.dtype;
    Acc a;
    a.type = compute_type(t);
    a.value = entry_alloca(a.type, size, "acc");
    a.index = nullptr;
    if (ir::is_arg_reduce(n.op)) a.index = entry_alloca(b_.getInt64Ty(), size, "arg");
    else if ((n.op == Op::kReduceMax || n.op == Op::kReduceMin) && is_float(t)) a.index = entry_alloca(b_.getInt1Ty(), size, "nan");
    return a;
  }

  void acc_init(const KNode& n, const Acc& a, Value* slot) {
    b_.CreateStore(reduce_init(n), b_.CreateGEP(a.type, a.value, slot));
    if (a.index) {
      llvm::Type* it = ir::is_arg_reduce(n.op) ? (llvm::Type*)b_.getInt64Ty() : b_.getInt1Ty();
      b_.CreateStore(llvm::Constant::getNullValue(it), b_.CreateGEP(it, a.index, slot));
    }
  }

  // Position along the reduce axes (row-major over them), for argmax/argmin.
  Value* reduce_position() {
    Value* pos = b_.getInt64(0);
    for (int d : reduce_axes_) pos = b_.CreateAdd(b_.CreateMul(pos, b_.getInt64(k_.shape[d])), idx_[d]);
    return pos;
  }

  void acc_update(const KNode& n, const Acc& a, Value* slot, Value* x) {
    DType t = k_.nodes[n.inputs[0]].dtype;
    bool f = is_float(t);
    Value* vp = b_.CreateGEP(a.type, a.value, slot);
    Value* cur = b_.CreateLoad(a.type, vp);
    llvm::FastMathFlags fm;
    fm.setAllowReassoc(true);
    fm.setAllowContract(true);
    switch (n.op) {
      case Op::kReduceSum:
      case Op::kReduceProd: {
        b_.setFastMathFlags(fm);
        Value* r = n.op == Op::kReduceSum ? (f ? b_.CreateFAdd(cur, x) : b_.CreateAdd(cur, x))
                                          : (f ? b_.CreateFMul(cur, x) : b_.CreateMul(cur, x));
        b_.clearFastMathFlags();
        b_.CreateStore(r, vp);
        return;
      }
      case Op::kReduceMax:
      case Op::kReduceMin: {
        bool mx = n.op == Op::kReduceMax;
        if (f) {
          b_.CreateStore(mx ? b_.CreateMaxNum(cur, x) : b_.CreateMinNum(cur, x), vp);
          Value* np = b_.CreateGEP(b_.getInt1Ty(), a.index, slot);
          b_.CreateStore(b_.CreateOr(b_.CreateLoad(b_.getInt1Ty(), np), b_.CreateFCmpUNO(x, x)), np);
        } else {
          b_.CreateStore(minmax(mx, t, cur, x), vp);
        }
        return;
      }
      case Op::kArgMax:
      case Op::kArgMin: {
        bool mx = n.op == Op::kArgMax;
        Value* better;
        if (f) {
          Value* cmp = mx ? b_.CreateFCmpOGT(x, cur) : b_.CreateFCmpOLT(x, cur);
          Value* x_nan = b_.CreateFCmpUNO(x, x);
          Value* cur_nan = b_.CreateFCmpUNO(cur, cur);
          better = b_.CreateAnd(b_.CreateNot(cur_nan), b_.CreateOr(cmp, x_nan));
        } else {
          bool uns = !is_signed(t);
          better = mx ? (uns ? b_.CreateICmpUGT(x, cur) : b_.CreateICmpSGT(x, cur))
                      : (uns ? b_.CreateICmpULT(x, cur) : b_.CreateICmpSLT(x, cur));
        }
        Value* ip = b_.CreateGEP(b_.getInt64Ty(), a.index, slot);
        b_.CreateStore(b_.CreateSelect(better, x, cur), vp);
        b_.CreateStore(b_.CreateSelect(better, reduce_position(), b_.CreateLoad(b_.getInt64Ty(), ip)), ip);
        return;
      }
      default: error_ = "cpu codegen: unknown reduction";
    }
  }

  // The finished value of a reduction (written into the outer array slot).
  Value* acc_final(const KNode& n, const Acc& a, Value* slot) {
    if (ir::is_arg_reduce(n.op)) return b_.CreateLoad(b_.getInt64Ty(), b_.CreateGEP(b_.getInt64Ty(), a.index, slot));
    Value* v = b_.CreateLoad(a.type, b_.CreateGEP(a.type, a.value, slot));
    if (a.index) {
      Value* nan = b_.CreateLoad(b_.getInt1Ty(), b_.CreateGEP(b_.getInt1Ty(), a.index, slot));
      v = b_.CreateSelect(nan, llvm::ConstantFP::getNaN(a.type), v);
    }
    return v;
  }

  // ---------------------------------------------------------------- generic kernels
  // Outer-level nodes that inner-level nodes or stores read, with the last reduction they need.
  void plan_outer_cache(std::vector<std::vector<KNodeId>>* after_phase) {
    size_t n = k_.nodes.size();
    std::vector<int> last_phase(n, -1);
    for (size_t i = 0; i < n; ++i) {
      const KNode& x = k_.nodes[i];
      if (ir::is_reduce(x.op)) {
        for (size_t p = 0; p < phases_.size(); ++p)
          if (phases_[p] == KNodeId(i)) last_phase[i] = int(p);
        continue;
      }
      for (KNodeId in : x.inputs) last_phase[i] = std::max(last_phase[i], last_phase[in]);
    }
    std::vector<bool> needed(n, false);
    for (size_t i = 0; i < n; ++i) {
      const KNode& x = k_.nodes[i];
      for (KNodeId in : x.inputs)
        if ((x.inner || ir::is_reduce(x.op)) && !k_.nodes[in].inner && last_phase[in] >= 0) needed[in] = true;
    }
    for (const ir::Store& s : k_.stores)
      if (!k_.nodes[s.value].inner && last_phase[s.value] >= 0) needed[s.value] = true;
    after_phase->assign(phases_.size(), {});
    for (size_t i = 0; i < n; ++i)
      if (needed[i] && !ir::is_reduce(k_.nodes[i].op)) (*after_phase)[last_phase[i]].push_back(KNodeId(i));
  }

  int64_t emit_generic() {
    int r = int(k_.shape.size());
    int jax = (r > 0 && !k_.reduce[r - 1]) ? r - 1 : -1;
    int64_t B = 1, nb = 1;
    const int64_t cost = element_cost();
    if (jax >= 0) {
      // Elementwise blocks of up to 4096 elements, fewer when each element is expensive, so a
      // small heavy kernel still spreads over the threads.
      int64_t limit = 64;
      if (phases_.empty()) {
        limit = 4096;
        while (limit > 256 && limit * cost > 65536) limit /= 2;
      }
      // A symbolic last axis takes whole blocks: the block size must not depend on the size.
      B = k_.symbolic(jax) ? limit : std::min<int64_t>(std::max<int64_t>(k_.shape[jax], 1), limit);
      nb = (k_.shape[jax] + B - 1) / B;
    }
    std::vector<int> row_axes;
    int64_t rows = 1;
    for (int d : outer_axes_)
      if (d != jax) {
        row_axes.push_back(d);
        rows *= k_.shape[d];
      }
    int64_t tiles = rows * nb;  // an empty reduce axis still writes the identity
    std::vector<std::vector<KNodeId>> after_phase;
    plan_outer_cache(&after_phase);
    // Storage for reductions and cached outer values, one slot per j in the block.
    std::vector<Acc> accs;
    for (KNodeId ph : phases_) {
      accs.push_back(make_acc(k_.nodes[ph], B));
    }
    std::unordered_map<KNodeId, llvm::AllocaInst*> cache_slots;
    for (auto& list : after_phase)
      for (KNodeId id : list) cache_slots[id] = entry_alloca(compute_type(k_.nodes[id].dtype), B, "outer");
    std::vector<llvm::AllocaInst*> reduce_slots;
    for (KNodeId ph : phases_) reduce_slots.push_back(entry_alloca(compute_type(k_.nodes[ph].dtype), B, "red"));

    Value* begin = fn_->getArg(2);
    Value* end = fn_->getArg(3);
    // The last axis and its blocks (read from the param once, before the tiles, when symbolic).
    Value* jext = jax >= 0 ? extent(jax) : nullptr;
    Value* nbv = jax >= 0 && k_.symbolic(jax) ? b_.CreateUDiv(b_.CreateAdd(jext, b_.getInt64(B - 1)), b_.getInt64(B))
                                              : b_.getInt64(nb);
    loop(begin, end, [&](Value* t) {
      Value* row = t;
      Value* jb = b_.getInt64(0);
      Value* je = b_.getInt64(1);
      if (jax >= 0) {
        row = b_.CreateUDiv(t, nbv);
        jb = b_.CreateMul(b_.CreateURem(t, nbv), b_.getInt64(B));
        Value* lim = b_.CreateAdd(jb, b_.getInt64(B));
        je = b_.CreateSelect(b_.CreateICmpSLT(lim, jext), lim, jext);
      }
      unravel(row, row_axes);
      // j loop over the block (or a single pass in row mode).
      auto over_j = [&](const std::function<void()>& body) {
        if (jax < 0) {
          arr_index_ = b_.getInt64(0);
          body();
          return;
        }
        loop(jb, je, [&](Value* j) {
          idx_[jax] = j;
          arr_index_ = b_.CreateSub(j, jb);
          body();
        }, "j", phases_.empty() && cost >= 32 ? 4 : 0);
      };
      for (size_t p = 0; p < phases_.size(); ++p) {
        const KNode& rn = k_.nodes[phases_[p]];
        over_j([&] { acc_init(rn, accs[p], arr_index_); });
        loops(reduce_axes_, 0, [&] {
          over_j([&] { acc_update(rn, accs[p], arr_index_, eval(rn.inputs[0])); });
        });
        over_j([&] {
          b_.CreateStore(acc_final(rn, accs[p], arr_index_),
                         b_.CreateGEP(compute_type(rn.dtype), reduce_slots[p], arr_index_));
        });
        outer_arrays_[phases_[p]] = reduce_slots[p];
        for (KNodeId id : after_phase[p]) {
          over_j([&] {
            Value* v = eval(id);
            b_.CreateStore(v, b_.CreateGEP(compute_type(k_.nodes[id].dtype), cache_slots[id], arr_index_));
          });
          outer_arrays_[id] = cache_slots[id];
        }
      }
      std::vector<const ir::Store*> outer_stores, inner_stores;
      for (const ir::Store& s : k_.stores) (k_.nodes[s.value].inner || store_is_inner(s) ? inner_stores : outer_stores).push_back(&s);
      if (!outer_stores.empty()) over_j([&] {
          for (const ir::Store* s : outer_stores) store(*s);
        });
      if (!inner_stores.empty()) loops(reduce_axes_, 0, [&] {
          over_j([&] {
            for (const ir::Store* s : inner_stores) store(*s);
          });
        });
      outer_arrays_.clear();
      for (int d : row_axes) idx_[d] = nullptr;
    }, "tile");
    return tiles;
  }

  bool store_is_inner(const ir::Store& s) {
    const ir::View& v = s.map.views.back();
    for (int d : reduce_axes_)
      if (v.strides[d] != 0 && v.shape[d] != 1) return true;
    return false;
  }

  // ---------------------------------------------------------------- contractions
  // Tiles of kContractMB x kContractNB outputs, the k loop inside. Where the rhs panel of an n
  // block (K x kContractNB values) fits kPanelBytes, a tile is an n block and a group of up to
  // kContractGroup m blocks: the panel is evaluated once into a buffer and every m block of the
  // group reads it back, so an expensive rhs (a convolution's padded windows, unflattened from
  // the merged k and n indices) is computed once per group instead of once per m block.
  int64_t emit_contraction() {
    const ir::Contraction& c = k_.contraction;
    int ma = c.m_axis, na = c.n_axis, ka = c.k_axis;
    int64_t M = k_.shape[ma], N = k_.shape[na], K = k_.shape[ka];
    std::vector<int> batch_axes;
    int64_t batch = 1;
    for (int d = 0; d < int(k_.shape.size()); ++d)
      if (d != ma && d != na && d != ka) {
        batch_axes.push_back(d);
        batch *= k_.shape[d];
      }
    const KNode& red = k_.nodes[c.reduce];
    llvm::Type* at = compute_type(red.dtype);
    const int64_t elem_bytes = int64_t(m_.getDataLayout().getTypeAllocSize(at));
    int64_t mb = (M + kContractMB - 1) / kContractMB, nbk = (N + kContractNB - 1) / kContractNB;
    // A symbolic m (or batch) extent: choices that must hold at every size take m as large.
    const bool sym = k_.any_symbolic();
    const bool pack = K > 0 && K * kContractNB * elem_bytes <= kPanelBytes && (sym || mb > 1);
    const int64_t group = pack ? (sym ? kContractGroup : std::min<int64_t>(mb, kContractGroup)) : 1;
    const int64_t mgroups = (mb + group - 1) / group;
    int64_t tiles = batch * mgroups * nbk;
    if (M == 0 || N == 0 || batch == 0) tiles = 0;
    llvm::AllocaInst* acc = entry_alloca(at, kContractMB * kContractNB, "cacc");
    llvm::AllocaInst* avals = entry_alloca(at, kContractMB, "arow");
    llvm::AllocaInst* panel = pack ? entry_alloca(at, K * kContractNB, "bpanel") : nullptr;
    bool is_f = is_float(red.dtype);
    auto clamp = [&](Value* v, Value* hi) {
      return b_.CreateSelect(b_.CreateICmpSLT(v, hi), v, b_.CreateSub(hi, b_.getInt64(1)));
    };
    // m, its blocks and their groups (read from the param once, before the tiles, when symbolic).
    Value* Mv = extent(ma);
    Value* mbv = k_.symbolic(ma) ? b_.CreateUDiv(b_.CreateAdd(Mv, b_.getInt64(kContractMB - 1)), b_.getInt64(kContractMB))
                                 : b_.getInt64(mb);
    Value* mgv = k_.symbolic(ma) ? b_.CreateUDiv(b_.CreateAdd(mbv, b_.getInt64(group - 1)), b_.getInt64(group))
                                 : b_.getInt64(mgroups);
    loop(fn_->getArg(2), fn_->getArg(3), [&](Value* t) {
      // Tile order: batch, n block, m group (consecutive tiles share the rhs panel's inputs).
      Value* mg = b_.CreateURem(t, mgv);
      Value* rest = b_.CreateUDiv(t, mgv);
      Value* ni_blk = b_.CreateURem(rest, b_.getInt64(nbk));
      Value* bt = b_.CreateUDiv(rest, b_.getInt64(nbk));
      unravel(bt, batch_axes);
      Value* n0 = b_.CreateMul(ni_blk, b_.getInt64(kContractNB));
      if (pack) {
        // The panel: rhs[k][n0 + j], columns past N repeat the last one (their sums are dropped).
        idx_[ma] = b_.getInt64(0);
        loop(b_.getInt64(0), b_.getInt64(K), [&](Value* k) {
          loop(b_.getInt64(0), b_.getInt64(kContractNB), [&](Value* j) {
            scopes_.emplace_back();
            idx_[ka] = k;
            idx_[na] = clamp(b_.CreateAdd(n0, j), b_.getInt64(N));
            Value* slot = b_.CreateAdd(b_.CreateMul(k, b_.getInt64(kContractNB)), j);
            b_.CreateStore(eval(c.rhs), b_.CreateGEP(at, panel, slot));
            scopes_.pop_back();
          }, "pj");
        }, "pk");
      }
      // The group's m blocks (the last group may have fewer).
      Value* first_blk = b_.CreateMul(mg, b_.getInt64(group));
      Value* left = b_.CreateSub(mbv, first_blk);
      Value* count = b_.CreateSelect(b_.CreateICmpSLT(left, b_.getInt64(group)), left, b_.getInt64(group));
      loop(b_.getInt64(0), count, [&](Value* gi) {
        Value* m0 = b_.CreateMul(b_.CreateAdd(first_blk, gi), b_.getInt64(kContractMB));
        emit_contraction_block(m0, n0, Mv, N, K, at, is_f, acc, avals, panel, clamp);
      }, "mblk");
    }, "tile");
    return tiles;
  }

  // One kContractMB x kContractNB block at (m0, n0): the k loop, then the epilogue. The rhs comes
  // from `panel` when there is one, else is evaluated here (a fast variant when the block is
  // whole along n, an edge variant that clamps n).
  template <typename Clamp>
  void emit_contraction_block(Value* m0, Value* n0, Value* M, int64_t N, int64_t K, llvm::Type* at, bool is_f,
                              llvm::AllocaInst* acc, llvm::AllocaInst* avals, llvm::AllocaInst* panel, const Clamp& clamp) {
    const ir::Contraction& c = k_.contraction;
    const int ma = c.m_axis, na = c.n_axis, ka = c.k_axis;
    for (int i = 0; i < kContractMB * kContractNB; ++i)
      b_.CreateStore(llvm::Constant::getNullValue(at), b_.CreateGEP(at, acc, b_.getInt64(i)));
    auto body = [&](bool clamp_n) {
      loop(b_.getInt64(0), b_.getInt64(K), [&](Value* k) {
        idx_[ka] = k;
        idx_[na] = b_.getInt64(0);
        for (int i = 0; i < kContractMB; ++i) {
          scopes_.emplace_back();
          idx_[ma] = clamp(b_.CreateAdd(m0, b_.getInt64(i)), M);
          b_.CreateStore(eval(c.lhs), b_.CreateGEP(at, avals, b_.getInt64(i)));
          scopes_.pop_back();
        }
        idx_[ma] = b_.getInt64(0);
        Value* row = panel ? b_.CreateMul(k, b_.getInt64(kContractNB)) : nullptr;
        loop(b_.getInt64(0), b_.getInt64(kContractNB), [&](Value* j) {
          Value* bv;
          if (panel) {
            bv = b_.CreateLoad(at, b_.CreateGEP(at, panel, b_.CreateAdd(row, j)));
          } else {
            Value* n = b_.CreateAdd(n0, j);
            idx_[na] = clamp_n ? clamp(n, b_.getInt64(N)) : n;
            bv = eval(c.rhs);
          }
          for (int i = 0; i < kContractMB; ++i) {
            Value* slot = b_.CreateAdd(b_.getInt64(i * kContractNB), j);
            Value* p = b_.CreateGEP(at, acc, slot);
            Value* a = b_.CreateLoad(at, b_.CreateGEP(at, avals, b_.getInt64(i)));
            llvm::FastMathFlags fm;
            fm.setAllowContract(true);
            fm.setAllowReassoc(true);
            b_.setFastMathFlags(fm);
            Value* prod = is_f ? b_.CreateFMul(a, bv) : b_.CreateMul(a, bv);
            Value* sum = is_f ? b_.CreateFAdd(b_.CreateLoad(at, p), prod) : b_.CreateAdd(b_.CreateLoad(at, p), prod);
            b_.clearFastMathFlags();
            b_.CreateStore(sum, p);
          }
        }, "n");
      }, "k");
    };
    if (panel) {
      scopes_.emplace_back();
      body(false);
      scopes_.pop_back();
    } else {
      Value* full_n = b_.CreateICmpSLE(b_.CreateAdd(n0, b_.getInt64(kContractNB)), b_.getInt64(N));
      auto* fast = llvm::BasicBlock::Create(ctx_, "full", fn_);
      auto* edge = llvm::BasicBlock::Create(ctx_, "edge", fn_);
      auto* join = llvm::BasicBlock::Create(ctx_, "join", fn_);
      b_.CreateCondBr(full_n, fast, edge);
      b_.SetInsertPoint(fast);
      scopes_.emplace_back();
      body(false);
      scopes_.pop_back();
      b_.CreateBr(join);
      b_.SetInsertPoint(edge);
      scopes_.emplace_back();
      body(true);
      scopes_.pop_back();
      b_.CreateBr(join);
      b_.SetInsertPoint(join);
    }
    idx_[ka] = nullptr;
    // Epilogue: every (m, n) of the block inside the matrix.
    outer_arrays_[c.reduce] = acc;
    loop(b_.getInt64(0), b_.getInt64(kContractMB), [&](Value* i) {
      Value* m = b_.CreateAdd(m0, i);
      loop(b_.getInt64(0), b_.getInt64(kContractNB), [&](Value* j) {
        Value* n = b_.CreateAdd(n0, j);
        Value* inside = b_.CreateAnd(b_.CreateICmpSLT(m, M), b_.CreateICmpSLT(n, b_.getInt64(N)));
        auto* st = llvm::BasicBlock::Create(ctx_, "epi", fn_);
        auto* skip = llvm::BasicBlock::Create(ctx_, "epi.skip", fn_);
        b_.CreateCondBr(inside, st, skip);
        b_.SetInsertPoint(st);
        scopes_.emplace_back();
        idx_[ma] = m;
        idx_[na] = n;
        arr_index_ = b_.CreateAdd(b_.CreateMul(i, b_.getInt64(kContractNB)), j);
        for (const ir::Store& s : k_.stores) store(s);
        scopes_.pop_back();
        b_.CreateBr(skip);
        b_.SetInsertPoint(skip);
      }, "en");
    }, "em");
    outer_arrays_.clear();
  }

  llvm::Module& m_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  const ir::Program& p_;
  const ir::Kernel& k_;
  llvm::Function* fn_ = nullptr;
  llvm::BasicBlock* entry_ = nullptr;
  std::vector<Value*> buf_;
  std::map<int64_t, Value*> param_;  // slot -> its 64-bit pattern
  std::vector<llvm::MDNode*> scope_, noalias_;
  std::vector<Value*> idx_;
  std::vector<int> outer_axes_, reduce_axes_;
  std::vector<KNodeId> phases_;
  std::vector<std::unordered_map<KNodeId, Value*>> scopes_;
  std::unordered_map<KNodeId, llvm::AllocaInst*> outer_arrays_;
  Value* arr_index_ = nullptr;
  std::string error_;
};

}  // namespace

absl::StatusOr<KernelLaunch> emit_kernel(llvm::Module& m, const ir::Program& p, const ir::Kernel& k,
                                         const std::string& symbol) {
  return Emitter(m, p, k).run(symbol);
}

}  // namespace kiln::codegen::cpu
