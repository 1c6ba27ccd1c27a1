#include "backends/hip/comgr.h"

#include <amd_comgr.h>

#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "runtime/disk_cache.h"
#include "support/dump.h"
#include "support/options.h"

namespace kiln::runtime::hip {
namespace {

std::string status_text(amd_comgr_status_t s) {
  const char* m = nullptr;
  if (amd_comgr_status_string(s, &m) != AMD_COMGR_STATUS_SUCCESS || !m) return "unknown comgr status";
  return m;
}

absl::Status check(amd_comgr_status_t s, const char* what) {
  if (s == AMD_COMGR_STATUS_SUCCESS) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("hip: comgr ", what, " failed: ", status_text(s)));
}

// Owners of comgr handles (released however a compile ends).
struct DataSet {
  amd_comgr_data_set_t h{};
  bool made = false;
  absl::Status make() {
    absl::Status s = check(amd_comgr_create_data_set(&h), "create_data_set");
    made = s.ok();
    return s;
  }
  ~DataSet() {
    if (made) amd_comgr_destroy_data_set(h);
  }
};
struct ActionInfo {
  amd_comgr_action_info_t h{};
  bool made = false;
  absl::Status make() {
    absl::Status s = check(amd_comgr_create_action_info(&h), "create_action_info");
    made = s.ok();
    return s;
  }
  ~ActionInfo() {
    if (made) amd_comgr_destroy_action_info(h);
  }
};

// The bytes of data item `i` of `kind` in `set`.
absl::StatusOr<std::string> item(const DataSet& set, amd_comgr_data_kind_t kind, size_t i) {
  amd_comgr_data_t d;
  if (absl::Status s = check(amd_comgr_action_data_get_data(set.h, kind, i, &d), "action_data_get_data"); !s.ok()) return s;
  size_t n = 0;
  std::string bytes;
  absl::Status s = check(amd_comgr_get_data(d, &n, nullptr), "get_data");
  if (s.ok()) {
    bytes.resize(n);
    s = check(amd_comgr_get_data(d, &n, bytes.data()), "get_data");
  }
  amd_comgr_release_data(d);
  if (!s.ok()) return s;
  return bytes;
}

// Every log an action left in `set`.
std::string logs(const DataSet& set) {
  size_t n = 0;
  if (amd_comgr_action_data_count(set.h, AMD_COMGR_DATA_KIND_LOG, &n) != AMD_COMGR_STATUS_SUCCESS) return "";
  std::string all;
  for (size_t i = 0; i < n; ++i)
    if (auto l = item(set, AMD_COMGR_DATA_KIND_LOG, i); l.ok()) all += *l;
  return all;
}

// Writes the rejected source and the log to $KILN_DUMP_DIR; returns a sentence naming them.
std::string dump_rejected(const std::string& source, const std::string& log, const std::string& arch) {
  const std::string dir = support::options().dump_dir;
  if (dir.empty()) return " (set KILN_DUMP_DIR to keep the source)";
  support::make_dump_dir(dir);
  std::string base = absl::StrFormat("%s/hip_rejected_%s_%016x", dir, arch, stable_hash64(source));
  support::write_dump(base + ".hip", source);
  support::write_dump(base + ".log", log);
  return absl::StrCat(" (source: ", base, ".hip, log: ", base, ".log)");
}

}  // namespace

std::string comgr_version() {
  size_t major = 0, minor = 0;
  amd_comgr_get_version(&major, &minor);
  return absl::StrCat(major, ".", minor);
}

std::vector<std::string> comgr_targets() {
  std::vector<std::string> out;
  size_t n = 0;
  if (amd_comgr_get_isa_count(&n) != AMD_COMGR_STATUS_SUCCESS) return out;
  for (size_t i = 0; i < n; ++i) {
    const char* name = nullptr;
    if (amd_comgr_get_isa_name(i, &name) != AMD_COMGR_STATUS_SUCCESS || !name) continue;
    std::string isa = name;  // amdgcn-amd-amdhsa--gfx90a[:features]
    const size_t at = isa.rfind("--");
    if (at == std::string::npos) continue;
    std::string gfx = isa.substr(at + 2);
    if (const size_t colon = gfx.find(':'); colon != std::string::npos) gfx.resize(colon);
    if (out.empty() || out.back() != gfx) out.push_back(gfx);
  }
  return out;
}

std::vector<std::string> comgr_options() { return {"-O3", "-std=c++17", "-nogpuinc"}; }

absl::StatusOr<std::string> comgr_compile(const std::string& source, const std::string& arch) {
  const std::vector<std::string> known = comgr_targets();
  bool ok = false;
  for (const std::string& k : known) ok = ok || k == arch;
  if (!ok)
    return absl::UnimplementedError(absl::StrCat("hip: comgr ", comgr_version(), " cannot compile for ", arch,
                                                 " (it targets ", absl::StrJoin(known, ", "), ")"));
  const std::string isa = "amdgcn-amd-amdhsa--" + arch;
  DataSet in, bc, linked, with_libs, reloc, exe;
  for (DataSet* s : {&in, &bc, &with_libs, &linked, &reloc, &exe})
    if (absl::Status st = s->make(); !st.ok()) return st;
  ActionInfo info;
  if (absl::Status st = info.make(); !st.ok()) return st;
  amd_comgr_data_t src;
  if (absl::Status st = check(amd_comgr_create_data(AMD_COMGR_DATA_KIND_SOURCE, &src), "create_data"); !st.ok()) return st;
  absl::Status st = check(amd_comgr_set_data(src, source.size(), source.data()), "set_data");
  if (st.ok()) st = check(amd_comgr_set_data_name(src, "kiln.hip"), "set_data_name");
  if (st.ok()) st = check(amd_comgr_data_set_add(in.h, src), "data_set_add");
  amd_comgr_release_data(src);
  if (!st.ok()) return st;
  if (st = check(amd_comgr_action_info_set_language(info.h, AMD_COMGR_LANGUAGE_HIP), "set_language"); !st.ok()) return st;
  if (st = check(amd_comgr_action_info_set_isa_name(info.h, isa.c_str()), "set_isa_name"); !st.ok()) return st;
  if (st = check(amd_comgr_action_info_set_logging(info.h, true), "set_logging"); !st.ok()) return st;
  const std::vector<std::string> opts = comgr_options();
  std::vector<const char*> argv;
  for (const std::string& o : opts) argv.push_back(o.c_str());
  if (st = check(amd_comgr_action_info_set_option_list(info.h, argv.data(), argv.size()), "set_option_list"); !st.ok())
    return st;
  if (amd_comgr_do_action(AMD_COMGR_ACTION_COMPILE_SOURCE_TO_BC, info.h, in.h, bc.h) != AMD_COMGR_STATUS_SUCCESS) {
    const std::string log = logs(bc);
    return absl::InternalError(absl::StrCat("hip: comgr ", comgr_version(), " rejected the generated kernels for ", arch,
                                            " (options: ", absl::StrJoin(opts, " "), ")",
                                            dump_rejected(source, log, arch), ":\n", log));
  }
  if (st = check(amd_comgr_action_info_set_option_list(info.h, nullptr, 0), "set_option_list"); !st.ok()) return st;
  struct Step {
    amd_comgr_action_kind_t action;
    const DataSet* from;
    DataSet* to;
    const char* what;
  };
  for (const Step& s : {Step{AMD_COMGR_ACTION_ADD_DEVICE_LIBRARIES, &bc, &with_libs, "adding the device libraries"},
                        Step{AMD_COMGR_ACTION_LINK_BC_TO_BC, &with_libs, &linked, "linking the bitcode"},
                        Step{AMD_COMGR_ACTION_CODEGEN_BC_TO_RELOCATABLE, &linked, &reloc, "code generation"},
                        Step{AMD_COMGR_ACTION_LINK_RELOCATABLE_TO_EXECUTABLE, &reloc, &exe, "linking the code object"}}) {
    if (amd_comgr_do_action(s.action, info.h, s.from->h, s.to->h) != AMD_COMGR_STATUS_SUCCESS)
      return absl::InternalError(absl::StrCat("hip: comgr ", s.what, " failed for ", arch, ":\n", logs(*s.to)));
  }
  return item(exe, AMD_COMGR_DATA_KIND_EXECUTABLE, 0);
}

}  // namespace kiln::runtime::hip
