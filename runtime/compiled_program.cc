#include "runtime/compiled_program.h"

#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ir/cost.h"
#include "ir/verify_program.h"
#include "support/bytes.h"

namespace kiln::runtime {
namespace {

// 03: cuda tensor maps; 04: PTX; 05: costs; 06: params; 07: kernel twins (and the cpu calling convention);
// 10: vulkan shaders read their table indices from push constants (kernels' buffers and params), and twins
constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'C', 'P', '1', '1'};

using support::ByteReader;
using support::ByteWriter;

void write_shape(ByteWriter& w, const Shape& s) {
  w.list(s, [&](int64_t d) { w.i64(d); });
}

Shape read_shape(ByteReader& r) {
  Shape s(r.count(8));
  for (int64_t& d : s) {
    d = r.i64();
    if (d < 0) r.fail("a negative dimension");
  }
  return s;
}

std::vector<int> read_ints(ByteReader& r) {
  std::vector<int> v(r.count(8));
  for (int& x : v) x = r.i32();
  return v;
}

// What the device's encoder and the copy engine rely on: a buffer of the map's element type
// (bf16, f16 or f32) that exists, a rank of 1..5, 16-byte aligned start and strides, boxes of
// 1..256 (the swizzled row at most the swizzle's width), and every addressed element inside the
// buffer.
absl::Status check_tensor_map(const TensorMapDesc& m, const std::vector<ir::BufferDesc>& buffers) {
  if (m.buffer < 0 || size_t(m.buffer) >= buffers.size())
    return absl::InvalidArgumentError(absl::StrCat("names buffer ", m.buffer, " of ", buffers.size()));
  const ir::BufferDesc& b = buffers[size_t(m.buffer)];
  const DType want = m.type == TensorMapDesc::kFloat32    ? DType::kFloat32
                     : m.type == TensorMapDesc::kBFloat16 ? DType::kBFloat16
                                                          : DType::kFloat16;
  if ((m.type != TensorMapDesc::kFloat16 && m.type != TensorMapDesc::kBFloat16 && m.type != TensorMapDesc::kFloat32) ||
      b.dtype != want)
    return absl::InvalidArgumentError(absl::StrCat("of buffer ", m.buffer, " has the wrong element type"));
  const int64_t eb = dtype_size(want), per16 = 16 / eb;
  const size_t rank = m.dims.size();
  if (rank < 1 || rank > 5 || m.strides.size() != rank - 1 || m.box.size() != rank)
    return absl::InvalidArgumentError(absl::StrCat("has rank ", rank, " with ", m.strides.size(), " strides and ",
                                                   m.box.size(), " box dims"));
  if (m.swizzle != 0 && m.swizzle != 32 && m.swizzle != 64 && m.swizzle != 128)
    return absl::InvalidArgumentError(absl::StrCat("has swizzle ", m.swizzle));
  if (m.offset < 0 || m.offset % per16 != 0) return absl::InvalidArgumentError(absl::StrCat("starts at ", m.offset));
  if (m.swizzle > 0 && int64_t(m.box[0]) * eb > m.swizzle)
    return absl::InvalidArgumentError(absl::StrCat("has a box row of ", m.box[0] * eb, " bytes over its swizzle"));
  int64_t last = m.offset;  // the highest element addressed
  for (size_t i = 0; i < rank; ++i) {
    if (m.dims[i] < 1 || m.dims[i] > (int64_t(1) << 32)) return absl::InvalidArgumentError("has a bad dim");
    if (m.box[i] < 1 || m.box[i] > 256) return absl::InvalidArgumentError("has a bad box");
    const int64_t stride = i == 0 ? 1 : m.strides[i - 1];
    if (i > 0 && (stride <= 0 || stride % per16 != 0 || stride > (int64_t(1) << 36)))
      return absl::InvalidArgumentError(absl::StrCat("has stride ", stride));
    last += (m.dims[i] - 1) * stride;
    if (last > (int64_t(1) << 50)) return absl::InvalidArgumentError("addresses too far");
  }
  const int64_t numel = b.bytes() / eb;
  if (last >= numel)
    return absl::InvalidArgumentError(absl::StrCat("reaches element ", last, " of buffer ", m.buffer, " (", numel,
                                                   " elements)"));
  return absl::OkStatus();
}

}  // namespace

CompiledProgram plan_of(const ir::Program& p) {
  CompiledProgram c;
  c.buffers = p.buffers;
  c.steps = p.steps;
  c.arena_bytes = p.arena_bytes;
  c.num_inputs = p.num_inputs;
  c.num_outputs = p.num_outputs;
  c.outputs = p.outputs;
  c.params = p.params;
  c.kernels.resize(p.kernels.size());
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    const ir::Kernel& k = p.kernels[i];
    std::set<int> reads, writes;
    std::set<int> params;
    for (const ir::Kernel* x : k.launched()) {
      for (const ir::KNode& n : x->nodes) {
        if (n.op == ir::Op::kLoad) reads.insert(n.buffer);
        if (n.op == ir::Op::kParam) params.insert(int(n.ints[0]));
      }
      for (const ir::Store& s : x->stores) writes.insert(s.buffer);
      const ir::KernelCost cost = ir::kernel_cost(p, *x);
      c.kernels[i].bytes += cost.bytes;
      c.kernels[i].flops += cost.flops;
      c.kernels[i].tensor_math = c.kernels[i].tensor_math || cost.tensor_math;
    }
    if (k.tickets >= 0) {  // counted atomically: read and written
      reads.insert(k.tickets);
      writes.insert(k.tickets);
    }
    c.kernels[i].name = k.name;
    c.kernels[i].reads.assign(reads.begin(), reads.end());
    c.kernels[i].writes.assign(writes.begin(), writes.end());
    c.kernels[i].computes = k.computes;
    c.kernels[i].params.assign(params.begin(), params.end());
  }
  return c;
}

std::vector<std::string> CompiledProgram::listings() const {
  std::vector<std::string> out;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const CompiledKernel& k = kernels[i];
    std::string s = absl::StrFormat("// %s on %s (%s): grid %dx%dx%d, block %dx%dx%d, %d bytes dynamic shared memory",
                                    k.name, backend, target_key, k.grid[0], k.grid[1], k.grid[2], k.block[0],
                                    k.block[1], k.block[2], k.shared_bytes);
    if (k.tiles > 0) absl::StrAppend(&s, ", ", k.tiles, " tiles");
    if (!k.strategy.empty()) absl::StrAppend(&s, "; ", k.strategy);
    if (k.twin >= 0)
      absl::StrAppend(&s, "\n// calls ", kernels[size_t(k.twin)].name, ", the function of kernel ", k.twin,
                      ", with its own buffers and params (a twin: ir/kernel_twins.h)");
    absl::StrAppend(&s, "\n", k.source);
    if (i == 0 && !module_source.empty()) absl::StrAppend(&s, "\n// ---- module (all kernels) ----\n", module_source);
    else if (!module_source.empty()) absl::StrAppend(&s, "// (module source: see kernel 0)\n");
    out.push_back(std::move(s));
  }
  return out;
}

std::string serialize(const CompiledProgram& c) {
  ByteWriter w;
  w.raw(std::string_view(kMagic, sizeof kMagic));
  w.str(c.backend);
  w.str(c.target_key);
  w.list(c.buffers, [&](const ir::BufferDesc& b) {
    w.i64(int64_t(b.kind));
    w.i64(b.index);
    w.i64(int64_t(b.dtype));
    write_shape(w, b.shape);
    w.i64(b.offset);
    w.i64(b.zeroed ? 1 : 0);
  });
  w.list(c.steps, [&](const ir::Step& s) {
    w.i64(int64_t(s.kind));
    w.i64(s.kernel);
    w.list(s.deps, [&](int d) { w.i64(d); });
    w.i64(s.flag);
    w.i64(s.max_trips);
    if (s.is_collective()) {  // (only these steps have more: files without them read as before)
      w.list(s.collective.ints(), [&](int64_t v) { w.i64(v); });
      w.i64(s.in);
      w.i64(s.out);
    }
  });
  w.i64(c.arena_bytes);
  w.i64(c.num_inputs);
  w.i64(c.num_outputs);
  w.list(c.outputs, [&](int o) { w.i64(o); });
  w.list(c.params, [&](const ir::ParamDesc& d) {
    w.i64(int64_t(d.dtype));
    w.i64(d.rng_key ? 1 : 0);
  });
  w.str(c.module);
  w.str(c.module_source);
  w.str(c.portable_module);
  w.list(c.kernels, [&](const CompiledKernel& k) {
    w.str(k.name);
    w.i64(k.twin);
    w.list(k.buffers, [&](int b) { w.i64(b); });
    w.list(k.reads, [&](int b) { w.i64(b); });
    w.list(k.writes, [&](int b) { w.i64(b); });
    for (uint32_t g : k.grid) w.u64(g);
    for (uint32_t b : k.block) w.u64(b);
    w.u64(k.shared_bytes);
    w.list(k.params, [&](int p) { w.i64(p); });
    w.list(k.tensor_maps, [&](const TensorMapDesc& m) {
      w.i64(m.buffer);
      w.i64(m.type);
      w.i64(m.offset);
      w.list(m.dims, [&](int64_t d) { w.i64(d); });
      w.list(m.strides, [&](int64_t d) { w.i64(d); });
      w.list(m.box, [&](uint32_t d) { w.u64(d); });
      w.i64(m.swizzle);
    });
    w.i64(k.tiles);
    w.i64(k.work);
    w.str(k.binary);
    w.str(k.strategy);
    w.str(k.source);
    w.i64(k.bytes);
    w.i64(k.flops);
    w.i64(k.tensor_math ? 1 : 0);
    w.str(k.computes);
  });
  return w.take();
}

absl::StatusOr<CompiledProgram> deserialize(std::string_view bytes) {
  if (bytes.size() >= sizeof kMagic && std::memcmp(bytes.data(), kMagic, 6) == 0 && std::memcmp(bytes.data(), kMagic, 8) != 0)
    return absl::InvalidArgumentError(absl::StrCat("compiled program: format ", absl::string_view(bytes.data() + 6, 2), ", this kiln reads format ",
                                                   absl::string_view(kMagic + 6, 2), ": compile it again with this kiln"));
  if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    return absl::InvalidArgumentError("compiled program: not a kiln compiled program (bad magic or version)");
  ByteReader r(bytes.substr(sizeof kMagic), "compiled program");
  CompiledProgram c;
  c.backend = r.str();
  c.target_key = r.str();
  c.buffers.resize(r.count(40));
  for (ir::BufferDesc& b : c.buffers) {
    int64_t kind = r.i64();
    if (kind < 0 || kind > int64_t(ir::BufferKind::kIntermediate)) r.fail("a bad buffer kind");
    b.kind = ir::BufferKind(kind);
    b.index = r.i32();
    int64_t dt = r.i64();
    if (dt < 0 || dt >= int64_t(kNumDTypes)) r.fail("a bad dtype");
    b.dtype = DType(dt);
    b.shape = read_shape(r);
    b.offset = r.i64();
    b.zeroed = r.i64() != 0;
  }
  c.steps.resize(r.count(40));
  for (ir::Step& s : c.steps) {
    const int64_t kind = r.i64();
    if (kind < 0 || kind > int64_t(ir::StepKind::kCollective)) r.fail("a bad step kind");
    s.kind = ir::StepKind(kind);
    s.kernel = r.i32();
    s.deps = read_ints(r);
    s.flag = r.i32();
    s.max_trips = r.i64();
    if (s.is_collective()) {
      std::vector<int64_t> ints(r.count(8));
      for (int64_t& v : ints) v = r.i64();
      if (ints.size() != 5) r.fail("a bad collective step");
      else s.collective = ir::CollectiveAttrs::from_ints(ints);
      s.in = r.i32();
      s.out = r.i32();
    }
  }
  c.arena_bytes = r.i64();
  c.num_inputs = r.i32();
  c.num_outputs = r.i32();
  c.outputs = read_ints(r);
  c.params.resize(r.count(16));
  for (ir::ParamDesc& d : c.params) {
    int64_t dt = r.i64();
    if (dt < 0 || dt >= int64_t(kNumDTypes)) r.fail("a bad param dtype");
    d.dtype = DType(dt);
    d.rng_key = r.i64() != 0;
  }
  c.module = r.str();
  c.module_source = r.str();
  c.portable_module = r.str();
  c.kernels.resize(r.count(64));
  for (CompiledKernel& k : c.kernels) {
    k.name = r.str();
    k.twin = r.i32();
    k.buffers = read_ints(r);
    k.reads = read_ints(r);
    k.writes = read_ints(r);
    for (uint32_t& g : k.grid) g = uint32_t(r.u64());
    for (uint32_t& b : k.block) b = uint32_t(r.u64());
    k.shared_bytes = uint32_t(r.u64());
    k.params = read_ints(r);
    k.tensor_maps.resize(r.count(48));
    for (TensorMapDesc& m : k.tensor_maps) {
      m.buffer = r.i32();
      m.type = r.i32();
      if (m.type != TensorMapDesc::kFloat16 && m.type != TensorMapDesc::kBFloat16 && m.type != TensorMapDesc::kFloat32)
        r.fail("a tensor map of an unknown element type");
      m.offset = r.i64();
      m.dims.resize(r.count(8));
      for (int64_t& d : m.dims) d = r.i64();
      m.strides.resize(r.count(8));
      for (int64_t& d : m.strides) d = r.i64();
      m.box.resize(r.count(8));
      for (uint32_t& d : m.box) {
        uint64_t v = r.u64();
        if (v > 256) r.fail("a tensor map box over 256");
        d = uint32_t(v);
      }
      m.swizzle = r.i32();
    }
    k.tiles = r.i64();
    k.work = r.i64();
    k.binary = r.str();
    k.strategy = r.str();
    k.source = r.str();
    k.bytes = r.i64();
    k.flops = r.i64();
    k.tensor_math = r.i64() != 0;
    k.computes = r.str();
  }
  if (r.error().empty() && !r.at_end()) r.fail("trailing bytes");
  if (!r.error().empty()) return absl::InvalidArgumentError(r.error());
  if (absl::Status s = check_consistent(c); !s.ok()) return s;
  return c;
}

absl::Status check_consistent(const CompiledProgram& c) {
  absl::Status s = ir::verify_plan(c.buffers, c.steps, int(c.kernels.size()), c.arena_bytes, c.num_inputs,
                                   c.num_outputs, c.outputs);
  if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat("compiled program for ", c.backend, ": ", s.message()));
  for (size_t i = 0; i < c.kernels.size(); ++i) {
    const int t = c.kernels[i].twin;
    if (t != -1 && (t < 0 || size_t(t) >= i || c.kernels[size_t(t)].twin != -1))
      return absl::InvalidArgumentError(absl::StrCat("compiled program for ", c.backend, ": kernel ", c.kernels[i].name,
                                                     " is the twin of kernel ", t, ", not an earlier kernel with a function of its own"));
    // A twin passes its family's function as many buffers and params as the function reads.
    if (t >= 0 && (c.kernels[i].buffers.size() != c.kernels[size_t(t)].buffers.size() ||
                   c.kernels[i].params.size() != c.kernels[size_t(t)].params.size()))
      return absl::InvalidArgumentError(absl::StrCat("compiled program for ", c.backend, ": kernel ", c.kernels[i].name,
                                                     " binds ", c.kernels[i].buffers.size(), " buffers and ",
                                                     c.kernels[i].params.size(), " params, its twin kernel ", t, " ",
                                                     c.kernels[size_t(t)].buffers.size(), " and ",
                                                     c.kernels[size_t(t)].params.size()));
  }
  for (const CompiledKernel& k : c.kernels)
    for (const std::vector<int>* ids : {&k.buffers, &k.reads, &k.writes})
      for (int b : *ids)
        if (b < 0 || size_t(b) >= c.buffers.size())
          return absl::InvalidArgumentError(absl::StrCat("compiled program for ", c.backend, ": kernel ", k.name,
                                                         " uses buffer ", b, " of ", c.buffers.size()));
  if (c.params.size() > size_t(ir::kMaxParams))
    return absl::InvalidArgumentError(absl::StrCat("compiled program for ", c.backend, ": ", c.params.size(), " params"));
  for (const CompiledKernel& k : c.kernels)
    for (int p : k.params)
      if (p < 0 || size_t(p) >= c.params.size())
        return absl::InvalidArgumentError(absl::StrCat("compiled program for ", c.backend, ": kernel ", k.name,
                                                       " reads param ", p, " of ", c.params.size()));
  for (const CompiledKernel& k : c.kernels)
    for (const TensorMapDesc& m : k.tensor_maps)
      if (absl::Status s = check_tensor_map(m, c.buffers); !s.ok())
        return absl::InvalidArgumentError(absl::StrCat("compiled program for ", c.backend, ": kernel ", k.name,
                                                       ": tensor map ", s.message()));
  return absl::OkStatus();
}

std::string differs_beyond_sizes(const CompiledProgram& c, const std::vector<ir::Step>& steps,
                                 const std::vector<ir::BufferDesc>& buffers, size_t kernels, int num_inputs, int num_outputs,
                                 size_t params) {
  if (c.kernels.size() != kernels || c.steps.size() != steps.size() || c.buffers.size() != buffers.size() ||
      c.num_inputs != num_inputs || c.num_outputs != num_outputs || c.params.size() != params)
    return "its kernels, steps, buffers or params differ";
  for (size_t i = 0; i < steps.size(); ++i)
    if (c.steps[i].kernel != steps[i].kernel || c.steps[i].kind != steps[i].kind || c.steps[i].deps != steps[i].deps)
      return "its steps differ";
  for (size_t b = 0; b < buffers.size(); ++b)
    if (c.buffers[b].kind != buffers[b].kind || c.buffers[b].index != buffers[b].index) return "its buffers differ";
  return "";
}

absl::Status refuse_collectives(const CompiledProgram& c, const std::string& backend) {
  for (const ir::Step& s : c.steps)
    if (s.is_collective())
      return absl::UnimplementedError(absl::StrCat(backend, ": this program has collectives (", ir::describe(s.collective),
                                                   "); they run on the cpu device only in this build"));
  return absl::OkStatus();
}

}  // namespace kiln::runtime
