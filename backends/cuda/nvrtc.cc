// NVRTC behind nvrtc.h: options, architecture check, compile, and the dump of a rejected source.
#include "backends/cuda/nvrtc.h"

#include <nvrtc.h>
#include <sys/stat.h>

#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "runtime/disk_cache.h"
#include "support/dump.h"
#include "support/options.h"

#ifndef KILN_CUDA_INCLUDE_DIR
#define KILN_CUDA_INCLUDE_DIR "/usr/local/cuda/include"
#endif

namespace kiln::runtime::cuda {
namespace {

bool has_fp16_header(const std::string& dir) {
  struct stat st;
  return !dir.empty() && ::stat((dir + "/cuda_fp16.h").c_str(), &st) == 0;
}

// The first folder holding cuda_fp16.h: the user's choice, then the toolkit's usual homes.
std::string cuda_include_dir() {
  std::vector<std::string> candidates = support::options().cuda_include_dirs;
  candidates.push_back(KILN_CUDA_INCLUDE_DIR);
  candidates.push_back("/usr/local/cuda/include");
  for (const std::string& c : candidates)
    if (has_fp16_header(c)) return c;
  return std::string();
}

struct ProgramDeleter {
  void operator()(nvrtcProgram p) const { nvrtcDestroyProgram(&p); }
};
using ProgramPtr = std::unique_ptr<_nvrtcProgram, ProgramDeleter>;

absl::Status nvrtc_error(nvrtcResult r, const char* what) {
  return absl::InternalError(absl::StrCat("cuda: ", what, " failed: ", nvrtcGetErrorString(r)));
}

std::string program_log(nvrtcProgram p) {
  size_t n = 0;
  if (nvrtcGetProgramLogSize(p, &n) != NVRTC_SUCCESS || n <= 1) return "";
  std::string log(n, '\0');
  if (nvrtcGetProgramLog(p, log.data()) != NVRTC_SUCCESS) return "";
  log.resize(n - 1);  // drop the terminating NUL
  return log;
}

absl::Status check_arch(int cc) {
  int n = 0;
  if (nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0) return absl::OkStatus();  // let NVRTC say
  std::vector<int> archs(size_t(n), 0);
  if (nvrtcGetSupportedArchs(archs.data()) != NVRTC_SUCCESS) return absl::OkStatus();
  for (int a : archs)
    if (a == cc) return absl::OkStatus();
  return absl::UnimplementedError(absl::StrCat("cuda: NVRTC ", nvrtc_version(), " cannot compile for sm_", cc,
                                               " (it targets sm_", archs.front(), " to sm_", archs.back(), ")"));
}

// Writes the rejected source and the log to $KILN_DUMP_DIR; returns a sentence naming them.
std::string dump_rejected(const std::string& source, const std::string& log, int cc) {
  const std::string dir = support::options().dump_dir;
  if (dir.empty()) return " (set KILN_DUMP_DIR to keep the source)";
  support::make_dump_dir(dir);
  std::string base = absl::StrFormat("%s/cuda_rejected_sm%d_%016x", dir, cc, stable_hash64(source));
  support::write_dump(base + ".cu", source);
  support::write_dump(base + ".log", log);
  return absl::StrCat(" (source: ", base, ".cu, log: ", base, ".log)");
}

}  // namespace

std::string nvrtc_version() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "unknown";
  return absl::StrCat(major, ".", minor);
}

std::vector<std::string> nvrtc_options(int cc, bool arch_specific) {
  std::vector<std::string> o = {absl::StrCat("-arch=sm_", cc, arch_specific ? "a" : ""), "-std=c++17", "-default-device"};
  // No --use_fast_math: it would change every division, sqrt and denormal of every kernel. The
  // renderer asks for fast intrinsics per operation where the results stay within tolerance.
  if (std::string inc = cuda_include_dir(); !inc.empty()) o.push_back("-I" + inc);
  return o;
}

absl::StatusOr<CudaBinary> nvrtc_compile(const std::string& source, int cc, bool keep_ptx, bool arch_specific) {
  if (absl::Status s = check_arch(cc); !s.ok()) return s;
  nvrtcProgram raw = nullptr;
  if (nvrtcResult r = nvrtcCreateProgram(&raw, source.c_str(), "kiln.cu", 0, nullptr, nullptr); r != NVRTC_SUCCESS)
    return nvrtc_error(r, "nvrtcCreateProgram");
  ProgramPtr prog(raw);
  std::vector<std::string> opts = nvrtc_options(cc, arch_specific);
  // NVRTC runs its optimizer on several threads (--split-compile; 0 = every hardware thread): a
  // module of a hundred kernels compiles several times faster on a many-core host. The cubin
  // does not depend on it, so it is not among nvrtc_options (the cache key).
  if (int t = support::options().compile_threads; t != 1) opts.push_back(absl::StrCat("--split-compile=", t));
  std::vector<const char*> argv;
  for (const std::string& o : opts) argv.push_back(o.c_str());
  nvrtcResult r = nvrtcCompileProgram(raw, int(argv.size()), argv.data());
  if (r != NVRTC_SUCCESS) {
    std::string log = program_log(raw);
    std::string where = dump_rejected(source, log, cc);
    return absl::InternalError(absl::StrCat("cuda: NVRTC ", nvrtc_version(), " rejected the generated kernels (",
                                            nvrtcGetErrorString(r), ", options: ", absl::StrJoin(opts, " "), ")",
                                            where, ":\n", log));
  }
  CudaBinary out;
  size_t n = 0;
  if (r = nvrtcGetCUBINSize(raw, &n); r != NVRTC_SUCCESS) return nvrtc_error(r, "nvrtcGetCUBINSize");
  out.cubin.resize(n);
  if (r = nvrtcGetCUBIN(raw, out.cubin.data()); r != NVRTC_SUCCESS) return nvrtc_error(r, "nvrtcGetCUBIN");
  if (keep_ptx) {
    if (r = nvrtcGetPTXSize(raw, &n); r != NVRTC_SUCCESS) return nvrtc_error(r, "nvrtcGetPTXSize");
    out.ptx.resize(n);
    if (r = nvrtcGetPTX(raw, out.ptx.data()); r != NVRTC_SUCCESS) return nvrtc_error(r, "nvrtcGetPTX");
    if (!out.ptx.empty() && out.ptx.back() == '\0') out.ptx.pop_back();
  }
  return out;
}

}  // namespace kiln::runtime::cuda
