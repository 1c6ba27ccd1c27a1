// What differs between the C-family GPU languages (CUDA, HIP, GLSL, MSL): type names, literals,
// memory access, thread builtins, barriers, math functions. The renderer (renderer.cc) writes
// the same kernel structure for every dialect and asks this interface for the pieces.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "codegen/c_family/gpu_program.h"
#include "ir/op.h"
#include "kiln/dtype.h"
#include "ir/target_info.h"

namespace kiln::codegen::gpu {

struct BufferParam {
  int id;        // ir::Program buffer id
  DType dtype;   // element dtype (storage follows from it)
  bool written;  // the kernel stores into it
};

// Storage element kinds that need declarations (GLSL buffer_reference block types, ...).
struct Features {
  std::set<DType> storage;  // dtypes of buffers used
  bool f64 = false, i64 = false, i8 = false, f16_storage = false;
  bool shared = false;
  bool subgroup = false;
};

class DialectOps {
 public:
  virtual ~DialectOps() = default;
  virtual Dialect kind() const = 0;

  // --- types and literals
  virtual std::string type(DType t) const = 0;  // compute type of a value of dtype t
  virtual std::string index_type(bool wide) const = 0;
  virtual std::string literal(DType t, const Scalar& v) const = 0;
  virtual std::string index_literal(int64_t v, bool wide) const = 0;
  // Converts an integer expression to the index type.
  virtual std::string index_cast(const std::string& e, bool wide) const = 0;

  // --- program structure
  // Helper functions every kernel may call (conversions, erf, safe tanh, saturating casts).
  virtual std::string preamble(const Features& f) const = 0;
  // Text before and after a kernel body. `block` is the workgroup size (baked into GLSL/MSL).
  virtual std::string kernel_open(const std::string& name, const std::vector<BufferParam>& bufs, int block,
                                  const std::string& shared_decls) const = 0;
  virtual std::string kernel_close() const { return "}\n"; }
  // A shared-memory array declaration (placed by kernel_open).
  virtual std::string shared_decl(const std::string& type, const std::string& name, int64_t n) const = 0;

  // --- memory: `index` is an element index expression of index type
  virtual std::string load(int buf, DType dt, const std::string& index) const = 0;
  virtual std::string store(int buf, DType dt, const std::string& index, const std::string& value) const = 0;

  // --- 16-byte float32 access (4 consecutive elements at element index 4*index)
  virtual std::string vec4_type() const = 0;
  virtual std::string vec4_load(int buf, const std::string& index) const = 0;
  virtual std::string vec4_store(int buf, const std::string& index, const std::vector<std::string>& lanes) const = 0;
  virtual std::string vec4_lane(const std::string& v, int lane) const {
    static const char* names[] = {".x", ".y", ".z", ".w"};
    return v + names[lane];
  }

  // --- cooperation inside a warp / subgroup. warp_size() <= 0: no shuffles, use shared memory.
  virtual int warp_size(const ir::TargetInfo& t) const = 0;
  virtual bool can_shuffle(DType t) const = 0;
  virtual std::string shuffle_xor(DType t, const std::string& v, int mask) const = 0;
  // Lane within the warp / warp within the workgroup of local thread `lid`.
  virtual std::string lane_of(const std::string& lid, int ws) const { return "(" + lid + " % " + std::to_string(ws) + ")"; }
  virtual std::string warp_of(const std::string& lid, int ws) const { return "(" + lid + " / " + std::to_string(ws) + ")"; }

  // --- threads
  virtual std::string local_id() const = 0;
  virtual std::string group_id() const = 0;
  virtual std::string num_groups() const = 0;
  virtual std::string barrier() const = 0;

  // --- arithmetic
  // A math or arithmetic op on compute-typed operands of dtype t (the operand dtype; comparison
  // results are the dialect's bool).
  virtual std::string op(ir::Op op, DType t, const std::vector<std::string>& a) const = 0;
  virtual std::string cast(DType from, DType to, const std::string& v) const = 0;
  virtual std::string select(const std::string& c, const std::string& a, const std::string& b) const {
    return "(" + c + " ? " + a + " : " + b + ")";
  }
  virtual std::string is_nan(DType t, const std::string& v) const = 0;
  // Bit-exact 32-bit unsigned arithmetic type (random numbers).
  virtual std::string u32() const = 0;
  virtual std::string u32_literal(uint32_t v) const = 0;
  virtual std::string u32_to_float(const std::string& v, DType t) const = 0;
  virtual std::string index_to_u32(const std::string& v, int shift) const = 0;
};

std::unique_ptr<DialectOps> make_dialect(Dialect d);

// Shared pieces of C-like dialects.
std::string c_float_literal(double v, bool is_double, const std::string& float_suffix);

}  // namespace kiln::codegen::gpu
