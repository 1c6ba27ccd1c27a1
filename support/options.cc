#include "support/options.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace kiln::support {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

// Says once per variable and value that a malformed number was ignored.
void warn_invalid(const char* name, const char* value, int fallback) {
  static std::mutex mu;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mu);
  if (!warned.insert(absl::StrCat(name, "=", value)).second) return;
  std::fprintf(stderr, "kiln: %s=%s is not an integer; using %d\n", name, value, fallback);
}

// A malformed value keeps the default; `strict` variables (device indices) are not warned about
// here because their reader refuses them with check().
void read_int(Options& o, const char* name, int* out, bool strict = false) {
  const char* v = env(name);
  if (!v) return;
  int parsed = 0;
  if (absl::SimpleAtoi(v, &parsed)) {
    *out = parsed;
  } else {
    o.invalid.emplace(name, v);
    if (!strict) warn_invalid(name, v, *out);
  }
}

// A byte count with an optional K, M or G suffix; a malformed value keeps the default.
void read_bytes(Options& o, const char* name, int64_t* out) {
  const char* v = env(name);
  if (!v) return;
  std::string s = v;
  int shift = 0;
  if (!s.empty() && (s.back() == 'K' || s.back() == 'M' || s.back() == 'G')) {
    shift = s.back() == 'K' ? 10 : s.back() == 'M' ? 20 : 30;
    s.pop_back();
  }
  int64_t n = 0;
  if (absl::SimpleAtoi(s, &n) && n >= 0 && n <= (INT64_MAX >> shift)) {
    *out = n << shift;
  } else {
    o.invalid.emplace(name, v);
    warn_invalid(name, v, int(*out >> 30));
  }
}

// "0" turns a switch off, anything else (set) turns it on; unset keeps the default.
void read_switch(const char* name, bool* out) {
  if (const char* v = env(name)) *out = std::string_view(v) != "0";
}

std::string cache_location() {
  if (const char* off = env("KILN_DISK_CACHE"); off && std::string_view(off) == "0") return "";
  if (const char* d = env("KILN_CACHE_DIR")) return d;
  if (const char* x = env("XDG_CACHE_HOME")) return std::string(x) + "/kiln";
  if (const char* h = env("HOME")) return std::string(h) + "/.cache/kiln";
  return "";
}

}  // namespace

absl::Status Options::check(std::string_view variable) const {
  auto it = invalid.find(variable);
  if (it == invalid.end()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(std::string(variable), "=", it->second, " is not an integer"));
}

int debug_level() {
  int level = 0;
  const char* v = env("KILN_DEBUG");
  return v && absl::SimpleAtoi(v, &level) ? level : 0;
}

bool fusion_enabled() {
  bool on = true;
  read_switch("KILN_FUSION", &on);
  return on;
}

Options options() {
  Options o;
  read_int(o, "KILN_DEBUG", &o.debug);
  if (const char* v = env("KILN_PROFILE")) o.profile = v;
  read_int(o, "KILN_PEAK_GBPS", &o.peak_gbps);
  read_int(o, "KILN_PEAK_GFLOPS", &o.peak_gflops);
  read_int(o, "KILN_PEAK_MATRIX_GFLOPS", &o.peak_matrix_gflops);
  read_bytes(o, "KILN_CACHE_BYTES", &o.cache_bytes);
  if (const char* d = env("KILN_DUMP_DIR")) o.dump_dir = d;
  read_switch("KILN_DUMP_SVG", &o.dump_svg);
  read_switch("KILN_FUSION", &o.fusion);
  if (const char* d = env("KILN_DEVICE")) o.device = d;
  o.cache_dir = cache_location();
  read_switch("KILN_GPU_SHUFFLE", &o.gpu_shuffle);
  read_switch("KILN_GPU_ROW_CACHE", &o.gpu_row_cache);
  read_switch("KILN_GPU_SUBGROUP_ROWS", &o.gpu_subgroup_rows);
  read_switch("KILN_CHAIN_REDUCE", &o.chain_reduce);
  read_switch("KILN_GPU_COLUMN_TILES", &o.gpu_column_tiles);
  read_switch("KILN_GPU_ROW_VEC4", &o.gpu_row_vec4);
  read_int(o, "KILN_GPU_SEGMENTS_GRID", &o.gpu_segments_grid);
  read_int(o, "KILN_SPLIT_K_CHUNK", &o.split_k_chunk);
  read_int(o, "KILN_GPU_COLUMN_GROUPS", &o.gpu_column_groups);
  read_int(o, "KILN_COLUMN_SPLIT_OUTPUTS", &o.column_split_outputs);
  if (const char* v = env("KILN_GPU_SEGMENTS")) {
    if (std::string(v) == "thread" || std::string(v) == "block" || std::string(v) == "queue") {
      o.gpu_segments = v;
    } else {
      o.invalid.emplace("KILN_GPU_SEGMENTS", v);
      std::fprintf(stderr, "kiln: KILN_GPU_SEGMENTS=%s is not thread, block or queue; choosing by row width\n", v);
    }
  }
  read_int(o, "KILN_DIST_TIMEOUT", &o.dist_timeout_s, /*strict=*/true);
  if (const char* v = env("KILN_MPI_LIBRARY")) o.mpi_library = v;
  read_int(o, "KILN_CUDA_DEVICE", &o.cuda_device, /*strict=*/true);
  if (const char* e = env("KILN_CUDA_INCLUDE")) o.cuda_include_dirs.push_back(e);
  if (const char* e = env("CUDA_HOME")) o.cuda_include_dirs.push_back(std::string(e) + "/include");
  if (const char* e = env("CUDA_PATH")) o.cuda_include_dirs.push_back(std::string(e) + "/include");
  read_switch("KILN_CUDA_SM90_GEMM", &o.cuda_sm90_gemm);
  read_int(o, "KILN_CUDA_SM90_BN", &o.cuda_sm90_bn);
  read_int(o, "KILN_CUDA_SM90_BK", &o.cuda_sm90_bk);
  read_int(o, "KILN_CUDA_SM90_WAIT", &o.cuda_sm90_wait);
  read_int(o, "KILN_CUDA_SM90_GROUP", &o.cuda_sm90_group);
  read_int(o, "KILN_CUDA_SM90_CLUSTER", &o.cuda_sm90_cluster);
  read_switch("KILN_CUDA_SM90_STAGED", &o.cuda_sm90_staged);
  read_int(o, "KILN_CUDA_SM90_TMA_STORE", &o.cuda_sm90_tma_store);
  read_int(o, "KILN_CUDA_SM90_TMA_BUFFERS", &o.cuda_sm90_tma_buffers);
  read_int(o, "KILN_CUDA_SM90_GRID", &o.cuda_sm90_grid);
  read_int(o, "KILN_CUDA_SM90_STREAMK", &o.cuda_sm90_stream_k);
  if (const char* v = env("KILN_CUDA_SM90_SCHEDULE")) {
    if (std::string(v) == "pingpong" || std::string(v) == "cooperative") {
      o.cuda_sm90_schedule = v;
    } else {
      o.invalid.emplace("KILN_CUDA_SM90_SCHEDULE", v);
      std::fprintf(stderr, "kiln: KILN_CUDA_SM90_SCHEDULE=%s is neither cooperative nor pingpong; using cooperative\n", v);
    }
  }
  read_switch("KILN_SIMT_RUNS", &o.simt_runs);
  read_switch("KILN_CUDA_CP_ASYNC", &o.cuda_cp_async);
  read_switch("KILN_VULKAN_COOP_MATRIX", &o.vulkan_coop_matrix);
  read_int(o, "KILN_VULKAN_COOP_WARPS", &o.vulkan_coop_warps);
  read_int(o, "KILN_VULKAN_COOP_BK", &o.vulkan_coop_bk);
  read_int(o, "KILN_VULKAN_TRANSFER_QUEUE", &o.vulkan_transfer_queue);
  read_int(o, "KILN_VULKAN_LOOP_BATCH", &o.vulkan_loop_batch);
  if (o.vulkan_loop_batch < 1) o.vulkan_loop_batch = 1;
  read_int(o, "KILN_CUDA_ATTENTION_ROWS", &o.cuda_attention_rows);
  read_switch("KILN_CUDA_SM90_ATTENTION", &o.cuda_sm90_attention);
  read_int(o, "KILN_CUDA_SM90_ATTENTION_CLUSTER", &o.cuda_sm90_attention_cluster);
  if (const char* v = env("KILN_CUDA_SM90_ATTENTION_SCHEDULE")) {
    const std::string s = v;
    if (s == "plain" || s == "pipelined" || s == "pingpong") {
      o.cuda_sm90_attention_schedule = s;
    } else {
      o.invalid.emplace("KILN_CUDA_SM90_ATTENTION_SCHEDULE", v);
      std::fprintf(stderr, "kiln: KILN_CUDA_SM90_ATTENTION_SCHEDULE=%s is not plain, pipelined or pingpong; using pipelined\n", v);
    }
  }
  read_switch("KILN_CUDA_COPY_STREAM", &o.cuda_copy_stream);
  read_switch("KILN_AUTOTUNE", &o.autotune);
  read_int(o, "KILN_COMPILE_THREADS", &o.compile_threads);
  if (o.compile_threads < 0) o.compile_threads = 0;
  read_int(o, "KILN_COPY_THREADS", &o.copy_threads);
  if (o.copy_threads < 0) o.copy_threads = 0;
  read_int(o, "KILN_VULKAN_DEVICE", &o.vulkan_device, /*strict=*/true);
  read_switch("KILN_VULKAN_VALIDATION", &o.vulkan_validation);
  read_switch("KILN_HIP_SKIP_KFD_CHECK", &o.hip_skip_kfd_check);
  read_switch("KILN_VULKAN_SPIRV_OPT", &o.vulkan_spirv_opt);
  read_int(o, "KILN_VULKAN_IN_FLIGHT", &o.vulkan_in_flight);
  read_int(o, "KILN_VULKAN_SPIN_US", &o.vulkan_spin_us);
  read_switch("KILN_VULKAN_QUEUE_ORDER", &o.vulkan_queue_order);
  read_switch("KILN_VULKAN_SKIP_DONE_WAITS", &o.vulkan_skip_done_waits);
  read_int(o, "KILN_VULKAN_DROP_BARRIER", &o.vulkan_drop_barrier);
  read_int(o, "KILN_VULKAN_BATCH", &o.vulkan_batch);
  if (o.vulkan_batch < 1) o.vulkan_batch = 1;
  read_int(o, "KILN_VULKAN_BATCH_HOLD", &o.vulkan_batch_hold);
  read_bytes(o, "KILN_VULKAN_REUSE_BYTES", &o.vulkan_reuse_bytes);
  if (const char* l = env("KILN_VULKAN_LOADER")) o.vulkan_loader = l;
  return o;
}

}  // namespace kiln::support
