// Contractions on Hopper (sm_90a): bf16/f16 operands, or float32 operands a dot allows to take as
// TF32 (wgmma's .tf32 form reads the upper 19 bits of each float, so operands are truncated to
// TF32, not rounded), f32 accumulation.
//
//   - TMA: each operand is a plain strided view of a 16-bit buffer, contiguous along k (K-major)
//     or along m / n (MN-major, a transposed view); the runtime encodes one tensor map per
//     operand (KernelSource::tensor_maps) and the tensor copy engine writes 64-wide boxes into
//     shared memory with the 128-byte swizzle that wgmma reads. Ragged M, N, K: the engine fills
//     what lies outside the tensor with zeros. Batch axes with a stride are extra map dims.
//   - A multi-stage pipeline of full/empty mbarriers between one producer thread and the
//     consumers.
//   - Warp specialization: warpgroup 0 produces (setmaxnreg down to 40), warpgroups 1 and 2 each
//     compute 64 rows of the 128 x BN tile with wgmma.mma_async m64nBNk16 (setmaxnreg up to 232).
//   - A persistent grid (one block per multiprocessor) walking output tiles in a grouped order
//     (8 m-tiles per group, so that a wave shares its operand panels in L2).
//   - The fused elementwise epilogue applied in registers per accumulator, stored directly.
#include "codegen/c_family/renderer.h"

namespace kiln::codegen::gpu::render_detail {

using ir::KNodeId;
using ir::Op;

namespace {

constexpr int kBM = 128, kThreads = 384;

// Bytes of one k row of a stage: 128 (64 16-bit or 32 TF32 values, 128B swizzle), or 64 with
// KILN_CUDA_SM90_BK=32 for 16-bit operands (K-major rows of 32 values, 64B swizzle; twice the
// stages of half the size).
int row_bytes(int eb) { return eb == 2 && support::options().cuda_sm90_bk == 32 ? 64 : 128; }
// Whether each consumer waits for its k block's wgmma before releasing the stage
// (KILN_CUDA_SM90_WAIT=0) instead of keeping one group in flight.
bool wait0_knob() { return support::options().cuda_sm90_wait == 0; }

// m-tiles per group of the tile order (KILN_CUDA_SM90_GROUP overrides 8, for comparisons).
int group_m() {
  const int g = support::options().cuda_sm90_group;
  return g >= 1 && g <= 64 ? g : 8;
}

// An operand as the tensor copy engine sees it.
struct Operand {
  TensorMapSpec map;
  bool mn_major = false;         // contiguous along m (lhs) / n (rhs)
  std::vector<int> batch_axes;   // kernel batch axes that are map dims 2.., in order
};

// Fills `op` for the operand load `id` (16-bit, or float32 taken as TF32; rows along `mn_axis`,
// `other_axis` the axis it must not depend on); false with a reason when the copy engine cannot
// fetch it or wgmma cannot read it.
bool analyze(const ir::Program& p, const ir::Kernel& k, KNodeId id, int mn_axis, int k_axis, int other_axis,
             const std::vector<int>& batch_axes, int box_mn, Operand* op, std::string* why) {
  const ir::KNode& n = k.nodes[id];
  const char* which = mn_axis == k.contraction.m_axis ? "lhs" : "rhs";
  if (!tma_plain_load(p, k, id, which, why)) return false;
  const ir::View& v = n.map.views[0];
  const int64_t MN = k.shape[mn_axis], K = k.shape[k_axis];
  const int64_t s_mn = v.strides[mn_axis], s_k = v.strides[k_axis];
  if (v.strides[other_axis] != 0 && k.shape[other_axis] > 1) {
    *why = absl::StrCat(which, " depends on the other operand's axis");
    return false;
  }
  const int eb = int(dtype_size(n.dtype)), per16 = 16 / eb;  // elements per 16 bytes
  if (v.offset < 0 || v.offset % per16 != 0) {
    *why = absl::StrCat(which, " starts at element ", v.offset, " (the copy engine needs 16-byte alignment)");
    return false;
  }
  TensorMapSpec& m = op->map;
  m.buffer = n.buffer;
  m.elem_bytes = eb;
  m.bf16 = n.dtype == DType::kBFloat16;
  m.offset = v.offset;
  const int RB = row_bytes(eb), kBK = RB / eb;
  m.swizzle = 128;
  auto strided_ok = [&](int64_t s) { return s > 0 && s % per16 == 0; };
  if (s_k == 1 && strided_ok(s_mn)) {
    op->mn_major = false;
    m.dims = {K, MN};
    m.strides = {s_mn};
    m.box = {uint32_t(kBK), uint32_t(box_mn)};
    m.swizzle = RB;  // one k row of the box per swizzle row
  } else if (s_mn == 1 && strided_ok(s_k) && eb == 2) {
    op->mn_major = true;
    m.dims = {MN, K};
    m.strides = {s_k};
    m.box = {64u, uint32_t(kBK)};
  } else if (s_mn == 1 && eb == 4) {
    *why = absl::StrCat(which, " is contiguous along ", mn_axis == k.contraction.m_axis ? "m" : "n",
                        ": wgmma reads TF32 operands only contiguous along k");
    return false;
  } else {
    *why = absl::StrCat(which, " has strides ", s_mn, " (", mn_axis == k.contraction.m_axis ? "m" : "n", ") and ",
                        s_k, " (k): neither is 1 with the other a positive multiple of ", per16);
    return false;
  }
  for (int a : batch_axes) {
    int64_t s = v.strides[a];
    if (k.shape[a] == 1 || s == 0) continue;  // broadcast along this batch axis
    if (!strided_ok(s)) {
      *why = absl::StrCat(which, " has batch stride ", s, " (the copy engine needs a positive multiple of ", per16, ")");
      return false;
    }
    m.dims.push_back(k.shape[a]);
    m.strides.push_back(s);
    m.box.push_back(1);
    op->batch_axes.push_back(a);
  }
  if (m.dims.size() > 5) {
    *why = absl::StrCat(which, " needs ", m.dims.size(), " tensor dims (the copy engine takes 5)");
    return false;
  }
  for (size_t i = 0; i < m.dims.size(); ++i)
    if (m.dims[i] >= (int64_t(1) << 31)) {
      *why = absl::StrCat(which, " has a dim of ", m.dims[i], " (over 2^31)");
      return false;
    }
  return true;
}

// Columns per tile: the widest of 256, 128 and 64 that still gives every multiprocessor a tile
// (decode-like shapes, M <= 128, have one row of tiles: narrower tiles spread the rhs, which
// dominates the bytes, over the whole GPU); never wider than N needs. KILN_CUDA_SM90_BN=64|128|256
// forces one, for comparisons.
int bn_for(int64_t M, int64_t N, int64_t batch, int parallelism) {
  const int forced = support::options().cuda_sm90_bn;
  if (forced == 64 || forced == 128 || forced == 256) return forced;
  const int64_t mt = ceil_div(M, int64_t(kBM));
  for (int bn : {256, 128}) {
    if (N <= bn / 2) continue;  // half the tile would be empty
    if (batch * mt * ceil_div(N, int64_t(bn)) >= parallelism) return bn;
  }
  return 64;
}

// CTAs per thread-block cluster: 1, or with KILN_CUDA_SM90_CLUSTER=2, 2 (the pair computes two
// m-tiles of one n-tile and each loads half of the shared rhs tile, multicast into both) where
// there are two m-tiles to pair and the rhs tile splits in halves the copy engine can address.
// Measured on an H100 (bench/results/h100-2026-11-23-gemm2): within 2-5% of no cluster, slower
// at 4096^3, so not the default.
int cluster_for(int64_t M, int bn) {
  if (support::options().cuda_sm90_cluster != 2) return 1;
  return ceil_div(M, int64_t(kBM)) >= 2 && bn >= 128 ? 2 : 1;
}

// The schedule: cooperative (both consumer warpgroups compute one 128 x BN tile, 64 rows each)
// or, with KILN_CUDA_SM90_SCHEDULE=pingpong, ping-pong: each warpgroup computes whole 128 x 128
// tiles (two m64 wgmmas per k step), the two taking turns, so that one's epilogue overlaps the
// other's main loop.
struct TileConfig {
  int bn = 128, cluster = 1;
  bool pingpong = false;
};

// Whether the epilogue reads a tensor of the output's size (a residual): each consumer thread
// then loads scattered elements per output, and the cooperative schedule's tensor cores idle
// through it. Measured on an H200 (bench/results/h200-2026-11-26-autotune): W8's residual GEMM
// spends 30% of its stalls at the staged epilogue's barriers, and ping-pong, where one
// warpgroup's epilogue runs under the other's main loop, is 18% faster there. (A GELU epilogue
// alone is not enough: W5's first GEMM, k = 4096, is 1.3% slower in ping-pong.)
bool heavy_epilogue(const ir::Kernel& k) {
  const ir::Contraction& c = k.contraction;
  std::vector<bool> seen(k.nodes.size(), false);
  std::vector<KNodeId> todo;
  for (const ir::Store& st : k.stores) todo.push_back(st.value);
  while (!todo.empty()) {
    const KNodeId id = todo.back();
    todo.pop_back();
    if (id < 0 || id == c.reduce || seen[size_t(id)]) continue;
    seen[size_t(id)] = true;
    const ir::KNode& n = k.nodes[size_t(id)];
    if (n.op == Op::kLoad) {
      if (n.map.views.size() != 1) return true;
      const ir::View& v = n.map.views[0];
      if (v.strides.size() == k.shape.size() && v.strides[size_t(c.m_axis)] != 0 && v.strides[size_t(c.n_axis)] != 0 &&
          k.shape[size_t(c.m_axis)] > 1 && k.shape[size_t(c.n_axis)] > 1)
        return true;
    }
    for (KNodeId x : n.inputs) todo.push_back(x);
  }
  return false;
}

TileConfig tile_config(const ir::Kernel& k, int parallelism) {
  const ir::Contraction& c = k.contraction;
  const int64_t M = k.symbolic(c.m_axis) ? kSymbolicRows : k.shape[c.m_axis], K = k.shape[c.k_axis];
  int64_t batch = 1;
  batch_axes_of(k, &batch);
  TileConfig t;
  t.bn = bn_for(M, k.shape[c.n_axis], batch, parallelism);
  t.cluster = cluster_for(M, t.bn);
  const std::string& forced = support::options().cuda_sm90_schedule;
  // Ping-pong by default for 16-bit products of several row tiles whose epilogue reads a
  // residual or whose k is short next to the epilogue (1024..2048: W8's projections, 7-9% faster
  // on the H200; at 4096 and up the schedules tie or cooperative wins by 1-2%, at k = 128
  // cooperative by 6%): W8 3.39 -> 3.23 ms.
  const bool sixteen_bit = c.lhs >= 0 && k.nodes[size_t(c.lhs)].op == Op::kCast;
  const bool prefer_pingpong = forced.empty() && sixteen_bit && ceil_div(M, int64_t(kBM)) >= 2 &&
                               (heavy_epilogue(k) || (K >= 1024 && K <= 2048));
  if ((forced == "pingpong" || prefer_pingpong) && t.cluster == 1) {
    t.pingpong = true;
    t.bn = std::min(t.bn, 128);
  }
  // A tuned config (sm90_tile_configs' strings) replaces the heuristic's choices.
  if (!k.config.empty()) {
    const std::string bn = config_value(k.config, "bn"), sched = config_value(k.config, "schedule"),
                      cl = config_value(k.config, "cluster");
    if (bn == "64" || bn == "128" || bn == "256") t.bn = std::stoi(bn);
    if (!sched.empty()) t.pingpong = sched == "pingpong";
    if (!cl.empty()) t.cluster = cl == "2" ? 2 : 1;
  }
  return t;
}

std::string config_string(const TileConfig& t) {
  return absl::StrCat("bn=", t.bn, " schedule=", t.pingpong ? "pingpong" : "cooperative", " cluster=", t.cluster);
}

// Pipeline stages of operands of `eb` bytes that fit beside `extra` bytes (the epilogue's staging
// buffer).
int stages_for(int bn, int eb, int64_t shared, int64_t extra) {
  const int RB = row_bytes(eb);
  const int64_t stage = int64_t(kBM + bn) * RB;
  return int(std::min<int64_t>(RB == 64 ? 16 : 8, (shared - 2048 - extra) / stage));
}

// The staged epilogue: each consumer warpgroup writes its results one 128-byte-wide column chunk
// at a time into shared memory (rows padded to 144 bytes: the 8 rows a warp writes at once fall
// in distinct banks), then stores the chunk to global memory in 16-byte vectors, 8 threads per
// row, instead of each thread storing its scattered 2- or 4-byte elements. It applies to one
// store of a 2- or 4-byte dtype, contiguous along n, whose rows start 16-byte aligned, unless
// KILN_CUDA_SM90_STAGED=0.
constexpr int kChunkBytes = 128, kChunkPitch = 144, kStagedBytes = 2 * 64 * kChunkPitch;

bool staged_store(const ir::Program& p, const ir::Kernel& k, int* elem_bytes) {
  if (k.stores.size() != 1 || !support::options().cuda_sm90_staged) return false;
  const ir::Store& st = k.stores[0];
  if (st.map.views.size() != 1 || st.map.has_mask()) return false;
  const DType dt = p.buffers[st.buffer].dtype;
  const int64_t eb = dtype_size(dt);
  if (dt == DType::kBool || (eb != 2 && eb != 4)) return false;
  const ir::View& v = st.map.views[0];
  const ir::Contraction& c = k.contraction;
  if (v.strides.size() != k.shape.size() || v.strides[c.n_axis] != 1 || (v.offset * eb) % 16 != 0) return false;
  for (int a = 0; a < int(k.shape.size()); ++a) {
    if (a == c.n_axis || k.shape[a] == 1) continue;
    if (a == c.k_axis && v.strides[a] != 0) return false;
    if (v.strides[a] < 0 || (v.strides[a] * eb) % 16 != 0) return false;
  }
  *elem_bytes = int(eb);
  return true;
}

// The staged epilogue through the tensor copy engine: each warpgroup writes a chunk (64 rows of
// 128 bytes) into one of its buffers in the 128-byte-swizzled layout a tensor map reads, and each
// warp's lane 0 stores the warp's 16 rows with cp.async.bulk.tensor, which clips at the tensor's
// edges (a __syncwarp per chunk, no warpgroup barrier: the barrier was the top stall under ncu,
// and per-warp stores ran 4096^3 1-3% faster than one per warpgroup); the warpgroup goes on to
// its next chunk, and its next tile's main loop, while the stores drain.
// It applies where the staged store does, to float32, bf16 and f16 results whose view the copy
// engine can address (16-byte strides, at most 5 dims), with k of 512 or more
// (KILN_CUDA_SM90_TMA_STORE=1: any k; 0: never). Measured on an H100
// (bench/results/h100-2026-11-27-tmastore): W5 0.452 -> 0.409 ms, 4096^3 0.200 -> 0.192 ms; but
// the batched product with k = 128, whose tiles are mostly epilogue and whose stores saturate
// the memory, runs 7% slower than with 16-byte st.global, so short k keeps those.
constexpr int kTmaChunk = 64 * kChunkBytes, kTmaMinK = 512;

// Chunk buffers per warpgroup: 4 for 256-wide tiles (more stores in flight; W5 and 4096^3 1-3%
// faster than with 2, although the 64 KiB leave the main loop 3 stages instead of 4), else 2
// (narrower tiles: decode-like products want their stages). KILN_CUDA_SM90_TMA_BUFFERS=2|4
// forces one.
int tma_buffers(int bn) {
  const int forced = support::options().cuda_sm90_tma_buffers;
  if (forced == 2 || forced == 4) return forced;
  return bn == 256 ? 4 : 2;
}

bool tma_store(const ir::Program& p, const ir::Kernel& k, TensorMapSpec* map) {
  int eb = 0;
  const int mode = support::options().cuda_sm90_tma_store;
  if (mode == 0 || !staged_store(p, k, &eb)) return false;
  const ir::Store& st = k.stores[0];
  const DType dt = p.buffers[st.buffer].dtype;
  if (dt != DType::kFloat32 && dt != DType::kBFloat16 && dt != DType::kFloat16) return false;
  const ir::View& v = st.map.views[0];
  const ir::Contraction& c = k.contraction;
  const int64_t M = k.shape[c.m_axis], N = k.shape[c.n_axis], per16 = 16 / eb;
  if (mode != 1 && k.shape[c.k_axis] < kTmaMinK) return false;
  TensorMapSpec m;
  m.buffer = st.buffer;
  m.elem_bytes = eb;
  m.bf16 = dt == DType::kBFloat16;
  m.offset = v.offset;
  m.swizzle = 128;
  // A single row may have any stride: the engine writes only row 0.
  const int64_t row_stride = M == 1 ? per16 * ceil_div(N, per16) : v.strides[c.m_axis];
  if (row_stride <= 0) return false;
  m.dims = {N, M};
  m.strides = {row_stride};
  m.box = {uint32_t(kChunkBytes / eb), 16u};  // each warp stores its own 16 rows of a chunk
  int64_t batch = 1;
  for (int a : batch_axes_of(k, &batch)) {
    if (k.shape[a] == 1) continue;
    if (v.strides[a] <= 0) return false;  // every batch entry writes its own place
    m.dims.push_back(k.shape[a]);
    m.strides.push_back(v.strides[a]);
    m.box.push_back(1);
  }
  if (m.dims.size() > 5) return false;
  for (int64_t d : m.dims)
    if (d >= (int64_t(1) << 31)) return false;
  if (map) *map = m;
  return true;
}

// Shared bytes of the epilogue's staging buffers with tiles `bn` wide.
int64_t epilogue_bytes(const ir::Program& p, const ir::Kernel& k, int bn) {
  int eb = 0;
  if (!staged_store(p, k, &eb)) return 0;
  return tma_store(p, k, nullptr) ? 2 * tma_buffers(bn) * kTmaChunk : kStagedBytes;
}

// Stream-K (KILN_CUDA_SM90_STREAMK): a persistent grid of G CTAs over T tiles runs ceil(T / G)
// waves, the last only (T % G) / G full, so 4096^3's 512 tiles of 128 x 256 on 132 SMs leave an
// eighth of the SMs idle for a quarter of the time (ncu: the least busy SM 25% below the mean,
// cuBLAS's kernel alike). Instead the CTAs take the whole tiles of all but the last full wave, then
// split the k blocks of the remaining G + T % G tiles evenly: each CTA's share is at least one
// tile's k blocks, so a tile is cut at most once, its first part finishing it (the epilogue) and
// its later part, the start of the next CTA's share, handed over as float partial sums in a slot
// of global memory per CTA with a flag (release / acquire at gpu scope; the finisher clears it for
// the next launch). The finisher waits only for a part its neighbour does first, so no CTA waits
// on one that waits (all CTAs are resident: one per SM at most). Applies to the cooperative
// schedule without clusters, fixed sizes, k of 8 blocks or more, where the last wave's idle share
// is at least 1% of the run (0: never; 1: wherever T % G != 0).
bool stream_k(int64_t tiles, int64_t grid, int64_t kb) {
  const int mode = support::options().cuda_sm90_stream_k;
  if (mode == 0 || tiles <= grid || tiles % grid == 0 || kb < 2) return false;
  if (mode == 1) return true;
  const int64_t waves = ceil_div(tiles, grid);
  return kb >= 8 && double(waves * grid - tiles) / double(waves * grid) >= 0.01;
}

// The partial-sum slots (128 x 256 floats, the widest tile) and flags of stream-K, one per CTA of
// the widest grid, module globals shared by the module's kernels (they run one after another).
std::string stream_k_helpers(int parallelism) {
  return absl::StrCat(R"(#ifndef KILN_SM90_STREAMK
#define KILN_SM90_STREAMK
__device__ float4 kiln_sk_partials[)", parallelism, R"( * 128 * 256 / 4];
__device__ unsigned kiln_sk_flags[)", parallelism, R"(];
// The next unit of a CTA's work: whole tiles dp, dp + G, ... below dp_tiles, then its k blocks
// [it, it_end) of the rest (tile dp_tiles + it / KB), cut at tile ends.
__device__ __forceinline__ bool kiln_sk_next(long long& dp, long long& it, long long& tile, int& kb0, int& kb1,
                                             long long dp_tiles, long long it_end, long long G, int KB) {
  if (dp < dp_tiles) {
    tile = dp, kb0 = 0, kb1 = KB, dp += G;
    return true;
  }
  if (it >= it_end) return false;
  tile = dp_tiles + it / KB, kb0 = (int)(it % KB);
  kb1 = it_end - it + kb0 < KB ? (int)(it_end - it + kb0) : KB;
  it += kb1 - kb0;
  return true;
}
#endif
)");
}

// Device helpers of the sm_90a path (once per module).
const char* kHelpers = R"(#ifndef KILN_SM90_HELPERS
#define KILN_SM90_HELPERS
struct __align__(64) KilnTensorMap { unsigned long long w[16]; };
__device__ __forceinline__ unsigned kiln_smem_u32(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void kiln_mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void kiln_mbar_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void kiln_mbar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
}
__device__ __forceinline__ void kiln_mbar_wait(unsigned bar, unsigned parity) {
  unsigned ok = 0;
  do {
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(ok) : "r"(bar), "r"(parity) : "memory");
  } while (!ok);
}
__device__ __forceinline__ void kiln_mbar_arrive_cluster(unsigned bar, unsigned cta) {
  asm volatile("{\n .reg .b32 ra;\n mapa.shared::cluster.u32 ra, %0, %1;\n"
               " mbarrier.arrive.shared::cluster.b64 _, [ra];\n}" :: "r"(bar), "r"(cta) : "memory");
}
__device__ __forceinline__ unsigned kiln_cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ void kiln_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\n barrier.cluster.wait.acquire;" ::: "memory");
}
// A shared-memory matrix descriptor for wgmma: 128-byte swizzle, offsets in bytes.
// layout: 1 = 128B swizzle, 2 = 64B.
__device__ __forceinline__ unsigned long long kiln_gmma_desc(unsigned addr, unsigned lbo, unsigned sbo, unsigned layout) {
  return (unsigned long long)((addr & 0x3FFFFu) >> 4) | ((unsigned long long)((lbo >> 4) & 0x3FFFu) << 16) |
         ((unsigned long long)((sbo >> 4) & 0x3FFFu) << 32) | ((unsigned long long)layout << 62);
}
#endif
)";

// kiln_tma<rank>(dst, map, bar, c0..) and kiln_tma<rank>_mc(..., mask): one tensor copy into this
// CTA's shared memory, or multicast into the same offset of every CTA of the cluster in `mask`.
std::string tma_helpers() {
  std::string out = "#ifndef KILN_SM90_TMA\n#define KILN_SM90_TMA\n";
  // A helper's coordinate parameters c0.., their asm operands from %first on, and their constraints.
  struct Coords {
    std::string params, asm_list, operands;
  };
  auto coords_of = [](int rank, int first) {
    Coords c;
    for (int i = 0; i < rank; ++i) {
      absl::StrAppend(&c.params, ", int c", i);
      absl::StrAppend(&c.asm_list, i ? ", " : "", "%", i + first);
      absl::StrAppend(&c.operands, ", \"r\"(c", i, ")");
    }
    return c;
  };
  for (int rank = 2; rank <= 5; ++rank) {
    for (bool mc : {false, true}) {
      const Coords c = coords_of(rank, 3);
      absl::StrAppend(&out, "__device__ __forceinline__ void kiln_tma", rank, mc ? "_mc" : "",
                      "(unsigned dst, const KilnTensorMap* m, unsigned bar", c.params, mc ? ", unsigned short mask" : "",
                      ") {\n  asm volatile(\"cp.async.bulk.tensor.", rank,
                      "d.shared::cluster.global.tile.mbarrier::complete_tx::bytes", mc ? ".multicast::cluster" : "",
                      " [%0], [%1, {", c.asm_list, "}], [%2]", mc ? absl::StrCat(", %", rank + 3) : "",
                      ";\"\n               :: \"r\"(dst), \"l\"(m), \"r\"(bar)", c.operands, mc ? ", \"h\"(mask)" : "",
                      " : \"memory\");\n}\n");
    }
    // kiln_tma<rank>_store(map, src, c0..): one tensor copy from this CTA's shared memory.
    const Coords c = coords_of(rank, 2);
    absl::StrAppend(&out, "__device__ __forceinline__ void kiln_tma", rank, "_store(const KilnTensorMap* m, unsigned src",
                    c.params, ") {\n  asm volatile(\"cp.async.bulk.tensor.", rank,
                    "d.global.shared::cta.bulk_group [%0, {", c.asm_list, "}], [%1];\"\n               :: \"l\"(m), \"r\"(src)",
                    c.operands, " : \"memory\");\n}\n");
  }
  return out + "#endif\n";
}

}  // namespace

bool tma_plain_load(const ir::Program& p, const ir::Kernel& k, KNodeId id, const char* which, std::string* why) {
  const ir::KNode& n = k.nodes[id];
  if (n.op != Op::kLoad || n.map.views.size() != 1 || n.map.has_mask()) {
    *why = absl::StrCat(which, " is not a plain strided load (computed, masked or a multi-view index)");
    return false;
  }
  if (p.buffers[n.buffer].dtype != n.dtype) {
    *why = absl::StrCat(which, "'s buffer holds another dtype");
    return false;
  }
  if (n.map.views[0].strides.size() != k.shape.size()) {
    *why = absl::StrCat(which, "'s view does not follow the kernel's axes");
    return false;
  }
  return true;
}

std::string sm90_device_helpers() { return kHelpers + tma_helpers(); }

bool Renderer::sm90_applies(std::string* why) const {
  if (d_.kind() != Dialect::kCuda) return false;
  if (t_.compute_capability != 90) {
    *why = absl::StrCat("target is sm_", t_.compute_capability);
    return false;
  }
  const bool tf32 = tf32_mma_applies();
  if (!half_mma_applies() && !tf32) {
    *why = "operands are not both bf16 or both f16, nor float32 allowed TF32";
    return false;
  }
  const ir::Contraction& c = k_.contraction;
  if (!support::options().cuda_sm90_gemm) {
    *why = "KILN_CUDA_SM90_GEMM=0";
    return false;
  }
  const int64_t K = k_.shape[c.k_axis];
  if (K < 1) {
    *why = "empty k";
    return false;
  }
  const TileConfig cfg = tile_config(k_, t_.parallelism);
  const int bn = cfg.bn;
  if (stages_for(bn, tf32 ? 4 : 2, t_.shared_memory, epilogue_bytes(p_, k_, bn)) < 2) {
    *why = absl::StrCat("the target's ", t_.shared_memory, " bytes of shared memory hold fewer than 2 stages");
    return false;
  }
  int64_t batch = 1;
  const std::vector<int> batch_axes = batch_axes_of(k_, &batch);
  Operand a, b;
  if (!analyze(p_, k_, operand(c.lhs), c.m_axis, c.k_axis, c.n_axis, batch_axes, kBM, &a, why)) return false;
  const int C = cfg.cluster;
  if (!analyze(p_, k_, operand(c.rhs), c.n_axis, c.k_axis, c.m_axis, batch_axes, bn / C, &b, why)) return false;
  for (const ir::Store& s : k_.stores)
    if (w_.store_is_inner(s)) {
      *why = "a store inside the k loop";
      return false;
    }
  return true;
}

std::vector<std::string> Renderer::contraction_sm90_candidates(std::string* shape_class) const {
  std::string why;
  if (!sm90_applies(&why)) return {};
  const ir::Contraction& c = k_.contraction;
  const int64_t M = k_.shape[c.m_axis], N = k_.shape[c.n_axis], K = k_.shape[c.k_axis];
  int64_t batch = 1;
  const std::vector<int> batch_axes = batch_axes_of(k_, &batch);
  const bool tf32 = !half_mma_applies();
  int eb = 0;
  const bool staged = staged_store(p_, k_, &eb);
  std::vector<std::string> out = {config_string(tile_config(k_, t_.parallelism))};
  auto add = [&](int bn, int cluster, bool pingpong) {
    const std::string s = config_string(TileConfig{bn, cluster, pingpong});
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  };
  for (int bn : {256, 128, 64}) {
    if (bn > 64 && N <= bn / 2) continue;  // half the tile or more would be empty
    if (stages_for(bn, tf32 ? 4 : 2, t_.shared_memory, epilogue_bytes(p_, k_, bn)) < 2) continue;
    add(bn, 1, false);
    if (bn <= 128) add(bn, 1, true);
    if (bn >= 128 && ceil_div(M, int64_t(kBM)) >= 2) add(bn, 2, false);
  }
  Operand a, b;
  analyze(p_, k_, operand(c.lhs), c.m_axis, c.k_axis, c.n_axis, batch_axes, kBM, &a, &why);
  analyze(p_, k_, operand(c.rhs), c.n_axis, c.k_axis, c.m_axis, batch_axes, 64, &b, &why);
  *shape_class = absl::StrCat("cuda sm_90a contraction ", tf32 ? "tf32" : a.map.bf16 ? "bf16" : "f16", " batch ", batch,
                              " m ", M, " n ", N, " k ", K, " lhs ", a.mn_major ? "m" : "k", "-major rhs ",
                              b.mn_major ? "n" : "k", "-major", staged ? absl::StrCat(" staged ", eb) : " unstaged",
                              tma_store(p_, k_, nullptr) ? " tma" : "");
  return out;
}

std::string Renderer::sm90_kernel_open(const std::string& name) const {
  std::vector<std::string> params;
  for (const BufferParam& b : w_.params())
    params.push_back(absl::StrCat(b.written ? "" : "const ", d_.storage_type(b.dtype), b.aliased ? "* " : "* __restrict__ ",
                                  DialectOps::buffer_name(b.id)));
  for (int slot : w_.scalar_params()) params.push_back(d_.param_arg(slot));
  for (int i = 0; i < sm90_maps_; ++i) params.push_back(absl::StrCat("const __grid_constant__ KilnTensorMap tm", i));
  std::string p;
  for (size_t i = 0; i < params.size(); ++i) absl::StrAppend(&p, i ? ", " : "", params[i]);
  const std::string cluster = sm90_cluster_ > 1 ? absl::StrCat("__cluster_dims__(", sm90_cluster_, ", 1, 1) ") : "";
  return absl::StrCat(helpers_, sm90_device_helpers(), "extern \"C\" __global__ void ", cluster, "__launch_bounds__(", kThreads, ", 1) ", name, "(", p,
                      ") {\n  extern __shared__ __align__(1024) unsigned char kiln_dsmem[];\n");
}

// After a stream-K unit's main loop (both consumer warpgroups, 256 threads, thread ct = tid - 128
// holding acc[0 .. BN/2)): a later part of a tile (kb0 > 0) leaves its sums in this CTA's slot,
// raises its flag and skips the epilogue; a first part that does not reach the tile's end waits
// for the next CTA's flag and adds that CTA's sums before the epilogue. 16-byte accesses at
// L2 (cg), thread-major so that a warp's are contiguous.
void Renderer::stream_k_fixup(int BN, int64_t KB) {
  const int vecs = BN / 8;  // float4s per thread
  const std::string slot_floats = std::to_string(128 * BN / 4);
  w_.line("const int ct = tid - 128;");
  w_.open("if (kb0 > 0)");
  w_.line("float4* const part = kiln_sk_partials + (long long)cid * " + slot_floats + ";");
  w_.line("#pragma unroll");
  w_.open(absl::StrCat("for (int q = 0; q < ", vecs, "; ++q)"));
  w_.line("__stcg(part + q * 256 + ct, make_float4(acc[4 * q], acc[4 * q + 1], acc[4 * q + 2], acc[4 * q + 3]));");
  w_.close();
  w_.line("asm volatile(\"bar.sync 3, 256;\" ::: \"memory\");");
  w_.open("if (ct == 0)");
  w_.line("asm volatile(\"fence.acq_rel.gpu;\" ::: \"memory\");");
  w_.line("asm volatile(\"st.relaxed.gpu.global.u32 [%0], 1;\" :: \"l\"(kiln_sk_flags + cid) : \"memory\");");
  w_.close();
  w_.line("continue;");
  w_.close();
  w_.open(absl::StrCat("if (kb1 < ", KB, ")"));
  w_.open("if (ct == 0)");
  w_.line("unsigned ready = 0;");
  w_.line("do asm volatile(\"ld.acquire.gpu.global.u32 %0, [%1];\" : \"=r\"(ready) : \"l\"(kiln_sk_flags + cid + 1) : \"memory\");");
  w_.line("while (!ready);");
  w_.close();
  w_.line("asm volatile(\"bar.sync 3, 256;\" ::: \"memory\");");
  w_.line("const float4* const part = kiln_sk_partials + (long long)(cid + 1) * " + slot_floats + ";");
  w_.line("#pragma unroll");
  w_.open(absl::StrCat("for (int q = 0; q < ", vecs, "; ++q)"));
  w_.line("const float4 p = __ldcg(part + q * 256 + ct);");
  w_.line("acc[4 * q] += p.x, acc[4 * q + 1] += p.y, acc[4 * q + 2] += p.z, acc[4 * q + 3] += p.w;");
  w_.close();
  w_.line("if (ct == 0) asm volatile(\"st.relaxed.gpu.global.u32 [%0], 0;\" :: \"l\"(kiln_sk_flags + cid + 1) : \"memory\");");
  w_.close();
}

int Renderer::contraction_sm90(KernelSource* out) {
  const ir::Contraction& c = k_.contraction;
  const int64_t M = k_.shape[c.m_axis], N = k_.shape[c.n_axis], K = k_.shape[c.k_axis];
  const int kGroupM = group_m();
  int64_t batch = 1;
  const std::vector<int> batch_axes = batch_axes_of(k_, &batch);
  const TileConfig cfg = tile_config(k_, t_.parallelism);
  const int BN = cfg.bn;
  const int C = cfg.cluster;  // CTAs per cluster, sharing the rhs tile
  const bool pp = cfg.pingpong;
  const int P = pp ? 2 : 1;  // 64-row blocks each consumer warpgroup computes per tile
  int eb = 0;
  const bool staged = staged_store(p_, k_, &eb);
  const bool tf32 = !half_mma_applies();  // else float32 operands taken as TF32
  const int ob = tf32 ? 4 : 2;            // operand bytes
  TensorMapSpec omap;
  const bool tmast = tma_store(p_, k_, &omap);
  const int64_t ebytes = epilogue_bytes(p_, k_, BN);  // the epilogue's staging buffers
  const int S = stages_for(BN, ob, t_.shared_memory, ebytes);
  const int RB = row_bytes(ob), kBK = RB / ob;  // a stage's k rows: bytes, elements
  const bool wait0 = wait0_knob();
  Operand A, B;
  std::string unused;
  analyze(p_, k_, operand(c.lhs), c.m_axis, c.k_axis, c.n_axis, batch_axes, kBM, &A, &unused);
  // Fewer rows than a tile (decode-like products): a k-major lhs box of only the rows there are
  // (rounded up to 8), since the copy engine is slow to fill rows past the end with zeros (M = 16
  // ran at 2/3 of M = 128's speed). The stage's other rows keep stale values: their results are
  // never stored, and each output row depends only on its own lhs row.
  const bool sym_m = k_.symbolic(c.m_axis);
  const int a_rows = !A.mn_major && !sym_m && M < kBM ? int(ceil_div(M, 8) * 8) : kBM;
  if (a_rows != kBM) {
    A = Operand{};
    analyze(p_, k_, operand(c.lhs), c.m_axis, c.k_axis, c.n_axis, batch_axes, a_rows, &A, &unused);
  }
  // ... and with at most 64 rows, the second consumer warpgroup's rows are all past the end: it
  // issues no wgmma (it still frees its stages).
  const bool idle_wg1 = !pp && !sym_m && M <= 64;
  analyze(p_, k_, operand(c.rhs), c.n_axis, c.k_axis, c.m_axis, batch_axes, BN / C, &B, &unused);
  sm90_ = true;
  sm90_cluster_ = C;
  sm90_maps_ = tmast ? 3 : 2;
  if (tmast) helpers_ = attention_device_helpers();  // kiln_pack_bf / kiln_pack_h
  out->tensor_maps = {A.map, B.map};
  if (tmast) out->tensor_maps.push_back(omap);
  // Tiles are walked per cluster: a cluster tile is C m-tiles of one n-tile (C = 1: one tile).
  const int64_t mt = ceil_div(ceil_div(M, kBM), C), nt = ceil_div(N, BN), per_batch = mt * nt, tiles = batch * per_batch;
  // The tile counts as text: symbolic extents (m, batch) read their params, so the code holds for
  // every size (the grid and the tensor maps come from each size's own plan).
  const bool sym = k_.any_symbolic();
  const std::string mtx = sym_m ? absl::StrCat("(((long long)", m_tiles_text(0, kBM), " + ", C - 1, "LL) / ", C, "LL)")
                                : absl::StrCat(mt, "LL");
  const std::string per_batch_x = sym_m ? absl::StrCat("(", mtx, " * ", nt, "LL)") : absl::StrCat(per_batch, "LL");
  const std::string tiles_x = sym ? absl::StrCat("((long long)", w_.extent_product(batch_axes), " * ", per_batch_x, ")")
                                  : absl::StrCat(tiles, "LL");
  const std::string Mx = w_.extent(c.m_axis);
  // Every tile whole (rows a multiple of the cluster's rows, columns of the tile width): the
  // epilogue needs no bounds checks, so its loads are unconditional (NVRTC then merges the two
  // rows' loads of one column and keeps no per-element branch).
  const bool whole = !sym_m && M % (int64_t(kBM) * C) == 0 && N % BN == 0;
  const int group = std::max(1, kGroupM / C);
  const int64_t KB = ceil_div(K, kBK);
  const int a_bytes = kBM * RB, b_bytes = BN * RB, stage_bytes = a_bytes + b_bytes;
  // KILN_CUDA_SM90_GRID caps the CTAs (tests: many tiles per CTA on small shapes).
  const int cap = support::options().cuda_sm90_grid > 0 ? support::options().cuda_sm90_grid : t_.parallelism;
  const int64_t clusters = std::max<int64_t>(1, std::min<int64_t>(tiles, std::max(std::min(cap, t_.parallelism), C) / C));
  const bool sk = !pp && C == 1 && !sym && stream_k(tiles, clusters, KB);
  if (sk) helpers_ += stream_k_helpers(t_.parallelism);
  const bool bf = A.map.bf16;
  const std::string it = w_.idx_t();
  auto S_ = [](int64_t v) { return std::to_string(v); };

  w_.line("const unsigned smem = (kiln_smem_u32(kiln_dsmem) + 1023u) & ~1023u;");
  const int64_t ebuf_at = int64_t(S) * stage_bytes;
  w_.line("const unsigned full0 = smem + " + S_(ebuf_at + ebytes) + ", empty0 = full0 + " + S_(8 * S) + ";");
  w_.line("const int tid = (int)threadIdx.x;");
  w_.open("if (tid == 0)");
  w_.open("for (int s = 0; s < " + S_(S) + "; ++s)");
  w_.line("kiln_mbar_init(full0 + 8 * s, 1);");
  w_.line(absl::StrCat("kiln_mbar_init(empty0 + 8 * s, ", (pp ? 4 : 8) * C,
                       ");  // lane 0 of each consumer warp (of the cluster) reading the stage"));
  w_.close();
  // Ping-pong turns: order0 + 8w completes a phase each time the other warpgroup finishes a main
  // loop. A warpgroup starts its i-th tile's main loop after the other's (i + w)-th: the stages
  // it then waits for are at most one fill ahead of it, as the parity waits require.
  if (pp) w_.line("kiln_mbar_init(empty0 + " + S_(8 * S) + ", 4), kiln_mbar_init(empty0 + " + S_(8 * S + 8) + ", 4);");
  w_.line("asm volatile(\"fence.mbarrier_init.release.cluster;\" ::: \"memory\");");
  w_.close();
  if (C > 1) {
    // The peer multicasts into this CTA's stages and arrives on its barriers: both must exist.
    w_.line("kiln_cluster_sync();");
    w_.line("const int rank = (int)kiln_cluster_rank(), cid = (int)blockIdx.x / " + std::to_string(C) +
            ", nclusters = (int)gridDim.x / " + std::to_string(C) + ";");
  } else {
    w_.line("__syncthreads();");
    w_.line("const int rank = 0, cid = (int)blockIdx.x, nclusters = (int)gridDim.x;");
  }
  // The tile order, shared by producer and consumers: batch-major, then groups of kGroupM
  // m-tiles walked n-tile by n-tile.
  auto decode = [&]() {
    w_.line(absl::StrCat("const long long bt = tile / ", per_batch_x, ", r = tile % ", per_batch_x, ";"));
    w_.line(absl::StrCat("const long long group = r / ", group * nt, "LL, first_m = group * ", group, "LL;"));
    w_.line(absl::StrCat("const long long gsize = ", mtx, " - first_m < ", group, "LL ? ", mtx, " - first_m : ", group,
                         "LL;"));
    w_.line(absl::StrCat("const long long in_group = r % ", group * nt, "LL;"));
    w_.line(absl::StrCat("const int mtile = (int)(first_m + in_group % gsize) * ", C,
                         " + rank, ntile = (int)(in_group / gsize);"));
    w_.line(absl::StrCat("const int m0 = mtile * ", kBM, ", n0 = ntile * ", BN, ";"));
    w_.line(absl::StrCat(it, " btx = ", idx_cast("bt"), ";"));
    w_.unravel("btx", batch_axes);
  };
  const std::string tile_loop =
      sk ? absl::StrCat("while (kiln_sk_next(dpn, skit, tile, kb0, kb1, dp_tiles, sk_end, nclusters, ", KB, "))")
         : absl::StrCat("for (long long tile = cid; tile < ", tiles_x, "; tile += nclusters)");
  // Stream-K: the whole tiles of all but the last full wave, then the rest's k blocks split evenly
  // (kiln_sk_next walks both); the CTA's k blocks of its current unit are [kb0, kb1).
  const std::string kb_lo = sk ? "kb0" : "0", kb_hi = sk ? "kb1" : S_(KB);
  auto sk_setup = [&]() {
    if (!sk) return;
    w_.line(absl::StrCat("const long long dp_tiles = ", tiles, "LL % nclusters == 0 ? ", tiles, "LL : (", tiles,
                         "LL / nclusters - 1) * nclusters;"));
    w_.line(absl::StrCat("const long long sk_iters = (", tiles, "LL - dp_tiles) * ", KB, "LL;"));
    w_.line("const long long sk_end = sk_iters * (cid + 1) / nclusters;");
    w_.line("long long dpn = cid, skit = sk_iters * cid / nclusters, tile = 0;");
    w_.line(absl::StrCat("int kb0 = 0, kb1 = ", KB, ";"));
  };

  // ---- producer warpgroup
  w_.open("if (tid < 128)");
  w_.line("asm volatile(\"setmaxnreg.dec.sync.aligned.u32 40;\");");
  w_.open("if (tid == 0)");
  w_.line("int s = 0;");
  w_.line("unsigned ph = 0;");
  sk_setup();
  w_.open(tile_loop);
  decode();
  w_.open("for (int kb = " + kb_lo + "; kb < " + kb_hi + "; ++kb)");
  w_.line("const int k0 = kb * " + S_(kBK) + ";");
  w_.line("const unsigned full = full0 + 8 * s, sa = smem + s * " + S_(stage_bytes) + ", sb = sa + " + S_(a_bytes) + ";");
  w_.line("kiln_mbar_wait(empty0 + 8 * s, ph ^ 1u);");
  w_.line("kiln_mbar_expect_tx(full, " + S_(stage_bytes - (kBM - a_rows) * RB) + ");");
  // One operand's copies: its k-major box, or its 64-wide mn boxes. With a cluster (rhs only),
  // this CTA fetches its share of the boxes and multicasts them into both CTAs.
  auto issue = [&](const Operand& op, int map, const std::string& dst, const std::string& mn0, int box_mn, bool shared) {
    std::vector<std::string> batch_coords;
    for (int a : op.batch_axes) batch_coords.push_back(absl::StrCat("(int)", w_.axis(a)));
    const int rank = int(op.map.dims.size());
    const bool mc = shared && C > 1;
    auto call = [&](const std::string& d, const std::string& c0, const std::string& c1) {
      std::string args = absl::StrCat(d, ", &tm", map, ", full, ", c0, ", ", c1);
      for (const std::string& b : batch_coords) absl::StrAppend(&args, ", ", b);
      if (mc) absl::StrAppend(&args, ", (unsigned short)", (1 << C) - 1);
      w_.line(absl::StrCat("kiln_tma", rank, mc ? "_mc(" : "(", args, ");"));
    };
    const int share = mc ? box_mn / C : box_mn;  // rows along mn this CTA fetches
    const std::string first = mc ? absl::StrCat(" + rank * ", share) : "";
    if (!op.mn_major) {
      call(absl::StrCat(dst, mc ? absl::StrCat(" + rank * ", share * RB) : ""), "k0", mn0 + first);
    } else {
      for (int j = 0; j < share / 64; ++j)
        call(absl::StrCat(dst, mc ? absl::StrCat(" + rank * ", share / 64 * 64 * RB) : "", " + ", j * 64 * RB),
             absl::StrCat(mn0, first, " + ", j * 64), "k0");
    }
  };
  issue(A, 0, "sa", "m0", kBM, false);
  issue(B, 1, "sb", "n0", BN, true);
  w_.line("if (++s == " + S_(S) + ") { s = 0; ph ^= 1u; }");
  w_.close();
  w_.close();
  w_.close();
  w_.close();
  // ---- consumer warpgroups
  w_.open("else");
  w_.line("asm volatile(\"setmaxnreg.inc.sync.aligned.u32 232;\");");
  w_.line("const int wg = tid / 128 - 1, cw = (tid / 32) % 4, lane = tid % 32;");
  w_.line("float acc[" + S_(P * BN / 2) + "];");
  w_.line("int s = 0, prev = 0;");
  w_.line("unsigned ph = 0;");
  if (tmast) w_.line("unsigned ech = 0;  // the epilogue's chunks so far (its staging buffer: ech % buffers)");
  if (!pp) {
    sk_setup();
    w_.open(tile_loop);
  } else {
    // Tiles j = wg, wg + 2, ... of this CTA's sequence; tile j's stages start at j * KB.
    w_.open(absl::StrCat("for (long long tile = cid + wg * nclusters, j = wg; tile < ", tiles_x,
                         "; tile += 2 * nclusters, j += 2)"));
    w_.line(absl::StrCat("s = (int)(j * ", KB, "LL % ", S, "), ph = (unsigned)((j * ", KB, "LL / ", S, ") & 1);"));
  }
  decode();
  if (pp) {
    w_.line("const unsigned order0 = empty0 + " + S_(8 * S) + ";");
    w_.line("const long long turn = j / 2 + wg;  // the other warpgroup's main loops to wait for");
    w_.line("if (turn >= 1) kiln_mbar_wait(order0 + 8 * wg, (unsigned)((turn - 1) & 1));");
  }
  w_.line("#pragma unroll");
  w_.line("for (int q = 0; q < " + S_(P * BN / 2) + "; ++q) acc[q] = 0.0f;");
  w_.open("for (int kb = " + kb_lo + "; kb < " + kb_hi + "; ++kb)");
  w_.line("const unsigned sa = smem + s * " + S_(stage_bytes) + (pp ? "" : " + wg * " + S_(64 * RB)) +
          ", sb = smem + s * " + S_(stage_bytes) + " + " + S_(a_bytes) + ";");
  w_.line("kiln_mbar_wait(full0 + 8 * s, ph);");
  if (idle_wg1) w_.open("if (wg == 0)");
  w_.line("asm volatile(\"wgmma.fence.sync.aligned;\" ::: \"memory\");");
  // The wgmma of one k16 step, every accumulator an operand.
  std::string regs;
  std::vector<std::string> cons(P);
  for (int q = 0; q < BN / 2; ++q) {
    absl::StrAppend(&regs, q ? ", " : "", "%", q);
    for (int h = 0; h < P; ++h) absl::StrAppend(&cons[h], q ? ", " : "", "\"+f\"(acc[", h * BN / 2 + q, "])");
  }
  // A consumer warp frees a stage in every CTA of the cluster (the peer's producer multicasts into it).
  auto release = [&](const std::string& bar) {
    return C > 1 ? absl::StrCat("for (unsigned r = 0; r < ", C, "u; ++r) kiln_mbar_arrive_cluster(", bar, ", r);")
                 : absl::StrCat("kiln_mbar_arrive(", bar, ");");
  };
  const std::string instr = absl::StrCat("wgmma.mma_async.sync.aligned.m64n", BN, tf32 ? "k8.f32.tf32.tf32" : "k16.f32",
                                         tf32 ? "" : bf ? ".bf16.bf16" : ".f16.f16");
  w_.line("#pragma unroll");
  w_.open("for (int kk = 0; kk < " + S_(RB / 32) + "; ++kk)");  // k steps of 32 bytes
  // K-major: rows of 128 bytes, 8-row swizzle atoms 1024 bytes apart, k16 = 32 bytes along the
  // row. MN-major: 64-wide boxes (8 KiB) along m / n (LBO), k rows of 128 bytes, k16 = 2 KiB.
  // (BK = 32: K-major rows of 64 bytes with 64B swizzle, atoms 512 bytes; MN-major boxes 4 KiB.)
  auto desc = [&](const std::string& var, const std::string& base, bool mn_major) {
    if (mn_major)
      w_.line(absl::StrCat("const unsigned long long ", var, " = kiln_gmma_desc(", base, " + kk * 2048, ", 64 * RB,
                           ", 1024, 1);"));
    else
      w_.line(absl::StrCat("const unsigned long long ", var, " = kiln_gmma_desc(", base, " + kk * 32, 16, ", 8 * RB,
                           ", ", RB == 128 ? 1 : 2, ");"));
  };
  desc("db", "sb", B.mn_major);
  for (int h = 0; h < P; ++h) {  // rows 64h.. of the stage's lhs box (the same offset in both layouts)
    const std::string da = absl::StrCat("da", h);
    desc(da, h ? absl::StrCat("sa + ", 64 * RB) : "sa", A.mn_major);
    // TF32 takes no transpose immediates (its operands are k-major).
    const std::string trans = tf32 ? "" : absl::StrCat(", ", A.mn_major ? 1 : 0, ", ", B.mn_major ? 1 : 0);
    w_.line(absl::StrCat("asm volatile(\"", instr, " {", regs, "}, %", BN / 2, ", %", BN / 2 + 1, ", 1, 1, 1", trans,
                         ";\" : ", cons[h], " : \"l\"(", da, "), \"l\"(db));"));
  }
  w_.close();
  w_.line("asm volatile(\"wgmma.commit_group.sync.aligned;\" ::: \"memory\");");
  if (idle_wg1) w_.close();
  if (wait0) {
    w_.line("asm volatile(\"wgmma.wait_group.sync.aligned 0;\" ::: \"memory\");");
    w_.line("if (lane == 0) " + release("empty0 + 8 * s"));
    w_.line("if (++s == " + S_(S) + ") { s = 0; ph ^= 1u; }");
    w_.close();
  } else {
    // One group stays in flight: the previous k block's stage is free once only this one is
    // pending (the last one's after the loop).
    w_.line("asm volatile(\"wgmma.wait_group.sync.aligned 1;\" ::: \"memory\");");
    w_.line("if (kb > " + kb_lo + " && lane == 0) " + release("empty0 + 8 * prev"));
    w_.line("prev = s;");
    w_.line("if (++s == " + S_(S) + ") { s = 0; ph ^= 1u; }");
    w_.close();
    w_.line("asm volatile(\"wgmma.wait_group.sync.aligned 0;\" ::: \"memory\");");
    w_.line("if (lane == 0) " + release("empty0 + 8 * prev"));
  }
  if (pp) w_.line("if (lane == 0) kiln_mbar_arrive(order0 + 8 * (1 - wg));  // the other's turn");
  if (sk) stream_k_fixup(BN, KB);
  // Epilogue: thread (warp cw, lane) holds rows 16cw + lane/4 (+8) and columns 8j + 2(lane%4)
  // (+1) of its warpgroup's 64 x BN accumulator.
  // Ping-pong: the warpgroup's tile is two such 64-row blocks (acc[0..], acc[BN/2..]).
  for (int h = 0; h < P; ++h) {
    w_.push_scope();  // the values of one block stay in its C scope
    const std::string row0 = pp ? absl::StrCat("m0 + ", 64 * h) : "m0 + wg * 64", acc0 = S_(h * BN / 2);
    w_.line(absl::StrCat("const int rbase", h, " = ", row0, " + cw * 16 + lane / 4, cbase", h, " = n0 + 2 * (lane % 4);"));
    auto element = [&](const std::string& j) {  // opens the bounds check of element (j, v)
      w_.line(absl::StrCat(it, " om = ", idx_cast(absl::StrCat("rbase", h, " + 8 * (v >> 1)")), ";"));
      w_.line(absl::StrCat(it, " on = ", idx_cast(absl::StrCat("cbase", h, " + 8 * (", j, ") + (v & 1)")), ";"));
      w_.open(whole ? std::string("") : absl::StrCat("if (om < ", Mx, " && on < ", w_.ilit(N), ")"));
      w_.set_axis(c.m_axis, "om");
      w_.set_axis(c.n_axis, "on");
      w_.bind(c.reduce, absl::StrCat("acc[", acc0, " + (", j, ") * 4 + v]"));
    };
    if (!staged) {
      w_.line("#pragma unroll");
      w_.open("for (int j = 0; j < " + S_(BN / 8) + "; ++j)");
      w_.line("#pragma unroll");
      w_.open("for (int v = 0; v < 4; ++v)");
      element("j");
      for (const ir::Store& st : k_.stores) w_.store(st);
      w_.close();
      w_.close();
      w_.close();
    } else {
      const ir::Store& st = k_.stores[0];
      const DType odt = p_.buffers[st.buffer].dtype;
      const std::string et = d_.storage_type(odt), out = DialectOps::buffer_name(st.buffer);
      const int cols = kChunkBytes / eb, vec = 16 / eb;  // columns per chunk, elements per vector
      if (tmast) {
        const int NB = tma_buffers(BN);
        if (h == 0) w_.line(absl::StrCat("const unsigned ebuf = smem + ", ebuf_at, " + wg * ", NB * kTmaChunk, ";"));
        // Per chunk c: this thread's elements into buffer c % NB (16-byte piece x of row r at
        // piece x ^ (r % 8)), made visible to the copy engine. Each warp writes and stores only
        // its own 16 rows, so a warp sync orders them, no warpgroup barrier: lane 0 waits until
        // its store of chunk c + 1 - NB has read its rows (chunk c + 1 writes them next: at most
        // NB - 2 of its stores stay pending), then stores this chunk's rows.
        w_.line("#pragma unroll");  // the accumulator index must be known at compile time
        w_.open(absl::StrCat("for (int ch = 0; ch < ", BN / cols, "; ++ch, ++ech)"));
        w_.line(absl::StrCat("unsigned char* const cb = kiln_dsmem + (ebuf + (ech % ", NB, "u) * ", kTmaChunk,
                             " - kiln_smem_u32(kiln_dsmem));"));
        // 16-bit results: the two adjacent columns a thread holds (v = 2 vpair + 0, 1) rounded as
        // one pair (cvt.rn.{bf16,f16}x2) and written as one 32-bit word.
        const bool pairs = eb == 2;
        w_.line("#pragma unroll");
        w_.open(absl::StrCat("for (int jj = 0; jj < ", cols / 8, "; ++jj)"));
        w_.line("#pragma unroll");
        w_.open(pairs ? "for (int vpair = 0; vpair < 2; ++vpair)" : "for (int v = 0; v < 4; ++v)");
        if (pairs) {
          w_.line("float pv[2] = {0.0f, 0.0f};");
          w_.line("#pragma unroll");
          w_.open("for (int velem = 0; velem < 2; ++velem)");
          w_.line("const int v = 2 * vpair + velem;");
        }
        element(absl::StrCat("ch * ", cols / 8, " + jj"));
        const std::string value = w_.eval(st.value);
        auto at = [&](const std::string& rows, const std::string& col) {
          w_.line("const int srow = cw * 16 + lane / 4 + 8 * " + rows + ";");
          w_.line(absl::StrCat("const int sbyte = (8 * jj + 2 * (lane % 4)", col, ") * ", eb, ";"));
          return absl::StrCat("cb + srow * ", kChunkBytes, " + ((((sbyte >> 4) ^ (srow & 7)) << 4) | (sbyte & 15))");
        };
        if (pairs) {
          w_.line("pv[velem] = " + value + ";");
          w_.close();
          w_.close();
          const std::string addr = at("vpair", "");
          w_.line(absl::StrCat("*reinterpret_cast<unsigned*>(", addr, ") = ", odt == DType::kBFloat16 ? "kiln_pack_bf" : "kiln_pack_h",
                               "(pv[0], pv[1]);"));
        } else {
          const std::string addr = at("(v >> 1)", " + (v & 1)");
          w_.line(absl::StrCat("*reinterpret_cast<", et, "*>(", addr, ") = ", d_.to_storage(odt, value), ";"));
          w_.close();
        }
        w_.close();
        w_.close();
        const std::string rows0 = absl::StrCat("(", row0, ") + cw * 16");
        w_.line("asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");");
        w_.line(absl::StrCat("if (lane == 0) asm volatile(\"cp.async.bulk.wait_group.read ", NB - 2, ";\" ::: \"memory\");"));
        w_.line("__syncwarp();");
        w_.open("if (lane == 0)");
        std::string coords = absl::StrCat("n0 + ch * ", cols, ", ", rows0);
        int64_t nb = 0;
        for (int a : batch_axes)
          if (k_.shape[a] > 1) {
            absl::StrAppend(&coords, ", (int)", w_.axis(a));
            ++nb;
          }
        w_.open(whole ? std::string("") : absl::StrCat("if (n0 + ch * ", cols, " < ", N, " && ", rows0, " < ", Mx, ")"));
        w_.line(absl::StrCat("kiln_tma", 2 + nb, "_store(&tm2, ebuf + (ech % ", NB, "u) * ", kTmaChunk,
                             " + cw * ", 16 * kChunkBytes, ", ", coords, ");"));
        w_.close();
        w_.line("asm volatile(\"cp.async.bulk.commit_group;\" ::: \"memory\");");
        w_.close();
        w_.close();
        w_.pop_scope();
        continue;
      }
      if (h == 0) {
        w_.line(absl::StrCat("const unsigned ebuf = smem + ", ebuf_at, " + wg * ", 64 * kChunkPitch, ";"));
        w_.line(absl::StrCat("unsigned char* const ebuf_p = kiln_dsmem + (ebuf - kiln_smem_u32(kiln_dsmem));"));
      }
      w_.line("#pragma unroll");  // the accumulator index must be known at compile time
      w_.open(absl::StrCat("for (int ch = 0; ch < ", BN / cols, "; ++ch)"));
      // 1. This thread's elements of the chunk, computed and converted, into shared memory.
      w_.line("#pragma unroll");
      w_.open(absl::StrCat("for (int jj = 0; jj < ", cols / 8, "; ++jj)"));
      w_.line("#pragma unroll");
      w_.open("for (int v = 0; v < 4; ++v)");
      element(absl::StrCat("ch * ", cols / 8, " + jj"));
      const std::string value = w_.eval(st.value);
      w_.line(absl::StrCat("*reinterpret_cast<", et, "*>(ebuf_p + (cw * 16 + lane / 4 + 8 * (v >> 1)) * ", kChunkPitch,
                           " + (8 * jj + 2 * (lane % 4) + (v & 1)) * ", eb, ") = ", d_.to_storage(odt, value), ";"));
      w_.close();
      w_.close();
      w_.close();
      w_.line("asm volatile(\"bar.sync %0, 128;\" :: \"r\"(wg + 1) : \"memory\");");
      // 2. The chunk (64 rows of 128 bytes) to global memory, 16 bytes per thread and step.
      w_.line("#pragma unroll");
      w_.open(absl::StrCat("for (int q = 0; q < ", 64 * kChunkBytes / 16 / 128, "; ++q)"));
      w_.line("const int t = (tid % 128) + 128 * q, row = t / 8, c16 = t % 8;");
      w_.line(absl::StrCat(it, " om = ", idx_cast(row0 + " + row"), ";"));
      w_.line(absl::StrCat(it, " on = ", idx_cast(absl::StrCat("n0 + ch * ", cols, " + c16 * ", vec)), ";"));
      w_.line(absl::StrCat("const unsigned char* src = ebuf_p + row * ", kChunkPitch, " + c16 * 16;"));
      w_.open(absl::StrCat("if (om < ", Mx, ")"));
      w_.set_axis(c.m_axis, "om");
      w_.set_axis(c.n_axis, "on");
      const std::string at = w_.element_index(st.map);
      w_.open(absl::StrCat("if (on + ", vec, " <= ", w_.ilit(N), ")"));
      w_.line(absl::StrCat("*reinterpret_cast<uint4*>(", out, " + ", at, ") = *reinterpret_cast<const uint4*>(src);"));
      w_.close();
      w_.open("else");
      w_.open(absl::StrCat("for (int e = 0; e < ", vec, " && on + e < ", w_.ilit(N), "; ++e)"));
      w_.line(absl::StrCat(out, "[", at, " + e] = reinterpret_cast<const ", et, "*>(src)[e];"));
      w_.close();
      w_.close();
      w_.close();
      w_.close();
      // The next chunk reuses the buffer once every thread of the warpgroup has read this one.
      w_.line("asm volatile(\"bar.sync %0, 128;\" :: \"r\"(wg + 1) : \"memory\");");
      w_.close();
    }
    w_.pop_scope();
  }
  w_.close();
  // The last stores have read their buffers before the CTA's shared memory goes (and written).
  if (tmast) w_.line("if (lane == 0) asm volatile(\"cp.async.bulk.wait_group 0;\" ::: \"memory\");");
  w_.close();
  // No CTA leaves while its peer may still arrive on its barriers.
  if (C > 1) w_.line("kiln_cluster_sync();");

  out->grid[0] = uint32_t(clusters * C);
  out->strided_tiles = tiles * C;  // (the loop over clusters below walks them all with any grid)
  out->shared_bytes = uint32_t(int64_t(S) * stage_bytes + ebytes + 16 * S + (pp ? 16 : 0) + 1024);
  out->strategy = absl::StrCat("contraction sm_90a: TMA (lhs ", A.mn_major ? "m" : "k", "-major, rhs ",
                               B.mn_major ? "n" : "k", "-major, ", RB == 128 ? "128B" : "64B/128B", " swizzle) into ", S, " stages of ", kBM, "x", BN,
                               "x", kBK, ", wgmma m64n", BN, tf32 ? "k8 (TF32, operands truncated)" : "k16", " on 2 consumer warpgroups",
                               pp ? " taking turns (ping-pong, 128 rows each)" : " (64 rows each)", " + 1 producer warp, persistent ",
                               "grid over ", tiles * C, " tiles in groups of ", group * C,
                               C > 1 ? absl::StrCat(", clusters of ", C, " sharing the rhs tile (multicast)") : "",
                               a_rows != kBM ? absl::StrCat(", lhs boxes of ", a_rows, " rows") : "",
                               idle_wg1 ? ", the second consumer idle (m <= 64)" : "",
                               tmast    ? absl::StrCat(", epilogue staged through shared memory (TMA stores, ", tma_buffers(BN), " buffers)")
                               : staged ? ", epilogue staged through shared memory (16-byte stores)"
                                        : ", epilogue in registers",
                               sk ? ", stream-K after the last full wave (partial tiles through global memory)" : "",
                               wait0 ? ", wgmma waited per k block" : "");
  return kThreads;
}

}  // namespace kiln::codegen::gpu::render_detail
