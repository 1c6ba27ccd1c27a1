#include "ir/op.h"

namespace kiln::ir {
namespace {
struct OpInfo {
  const char* name;
  OpClass cls;
  int arity;
};
constexpr OpInfo kOps[] = {
#define KILN_X(name, text, cls, arity) {text, OpClass::cls, arity},
    KILN_IR_OPS(KILN_X)
#undef KILN_X
};
constexpr int kNumOps = sizeof(kOps) / sizeof(kOps[0]);
}  // namespace

const char* op_name(Op op) { return kOps[int(op)].name; }
OpClass op_class(Op op) { return kOps[int(op)].cls; }
int op_arity(Op op) { return kOps[int(op)].arity; }

bool op_from_name(const std::string& name, Op* out) {
  for (int i = 0; i < kNumOps; ++i) {
    if (name == kOps[i].name) {
      *out = Op(i);
      return true;
    }
  }
  return false;
}

}  // namespace kiln::ir
