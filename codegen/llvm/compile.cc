// compile.h: TargetMachines, host detection, the O3 pipeline and object emission.
#include "codegen/llvm/compile.h"

#include <algorithm>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "codegen/llvm/emit_kernel.h"
#include "ir/kernel_twins.h"
#include "support/options.h"
#include "support/parallel.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"

namespace kiln::codegen::cpu {
namespace {

constexpr llvm::Reloc::Model kReloc = llvm::Reloc::PIC_;  // loadable at any address
constexpr llvm::CodeModel::Model kCodeModel = llvm::CodeModel::Small;
constexpr llvm::CodeGenOpt::Level kCodeGenOpt = llvm::CodeGenOpt::Aggressive;

absl::Status init_llvm() {
  static const bool ok = [] {
    return !llvm::InitializeNativeTarget() && !llvm::InitializeNativeTargetAsmPrinter();
  }();
  if (!ok) return absl::UnavailableError("cpu: this LLVM has no code generator for the host CPU");
  return absl::OkStatus();
}

// A fresh TargetMachine for `t`: one per ProgramModule, so that compiles never share one (a
// TargetMachine is not thread-safe; sharing one corrupted code under concurrent realizes).
absl::StatusOr<std::unique_ptr<llvm::TargetMachine>> make_machine(const CpuTarget& t) {
  if (absl::Status s = init_llvm(); !s.ok()) return s;
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(t.triple, err);
  if (!target) return absl::UnavailableError(absl::StrCat("cpu: LLVM has no code generator for ", t.triple, ": ", err));
  std::unique_ptr<llvm::TargetMachine> tm(
      target->createTargetMachine(t.triple, t.cpu, t.features, llvm::TargetOptions(), kReloc, kCodeModel, kCodeGenOpt));
  if (!tm) return absl::InternalError(absl::StrCat("cpu: LLVM made no TargetMachine for ", t.key()));
  return tm;
}

// The host's features as LLVM detects them, sorted ("+avx2,+fma,-avx512f,...").
std::string host_features() {
  llvm::StringMap<bool> found;
  std::vector<std::string> features;
  if (llvm::sys::getHostCPUFeatures(found))
    for (const auto& f : found) features.push_back(absl::StrCat(f.second ? "+" : "-", std::string(f.first())));
  std::sort(features.begin(), features.end());
  return absl::StrJoin(features, ",");
}

// InvalidArgument unless LLVM knows `t`'s CPU. (An unknown feature is not an error LLVM exposes:
// it warns on stderr and ignores it.)
absl::Status check_known(const CpuTarget& t, const llvm::TargetMachine& tm) {
  if (!tm.getMCSubtargetInfo()->isCPUStringValid(t.cpu))
    return absl::InvalidArgumentError(absl::StrCat("cpu: LLVM ", LLVM_VERSION_STRING, " does not know the CPU '", t.cpu,
                                                   "' for ", t.triple));
  return absl::OkStatus();
}

void run_o3(llvm::Module& m, llvm::TargetMachine* tm) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = true;
  pto.SLPVectorization = true;
  llvm::PassBuilder pb(tm, pto);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(m, mam);
}

template <typename T>
std::string print(const T& x) {
  std::string text;
  llvm::raw_string_ostream os(text);
  x.print(os, nullptr);
  os.flush();
  return text;
}

}  // namespace

std::string CpuTarget::key() const { return absl::StrCat(triple, " ", cpu, " ", features); }

absl::StatusOr<CpuTarget> resolve_cpu(const ir::TargetInfo& t) {
  if (absl::Status s = init_llvm(); !s.ok()) return s;
  CpuTarget c;
  c.triple = llvm::sys::getProcessTriple();  // only the host's architecture has a code generator here
  if (t.cpu_name.empty()) {
    c.cpu = std::string(llvm::sys::getHostCPUName());
    c.features = host_features();
  } else {
    c.cpu = t.cpu_name;
    c.features = t.cpu_features;
  }
  auto tm = make_machine(c);
  if (!tm.ok()) return tm.status();
  if (absl::Status s = check_known(c, **tm); !s.ok()) return s;
  return c;
}

std::string compiler_identity() {
  return absl::StrCat("LLVM ", LLVM_VERSION_STRING, "; O3 with loop and SLP vectorization; codegen level ", int(kCodeGenOpt),
                      ", reloc ", int(kReloc), ", code model ", int(kCodeModel), "; ELF objects of up to ", kMaxParts,
                      " parts");
}

// One part of a program: some families' functions in a module of their own, so that parts are
// optimized and compiled on threads of their own.
struct Part {
  std::unique_ptr<llvm::LLVMContext> ctx;  // first: destroyed after the module
  std::unique_ptr<llvm::Module> mod;
  std::unique_ptr<llvm::TargetMachine> tm;
  bool optimized = false;

  void optimize() {
    if (optimized) return;
    run_o3(*mod, tm.get());
    optimized = true;
  }
};

struct ProgramModule::State {
  std::vector<Part> parts;
  std::vector<KernelEntry> kernels;
  std::vector<int> part_of;  // kernel -> the part holding its function
};

ProgramModule::ProgramModule(std::unique_ptr<State> s) : s_(std::move(s)) {}
ProgramModule::ProgramModule(ProgramModule&&) noexcept = default;
ProgramModule& ProgramModule::operator=(ProgramModule&&) noexcept = default;
ProgramModule::~ProgramModule() = default;

namespace {

// Which part each family's first kernel goes to: the costliest families first, each to the part
// with the least work so far (work ~ expression nodes, a contraction's inner loop weighing more).
// Depends only on the Program, so an object is the same on every machine.
std::vector<int> assign_parts(const ir::Program& p, const std::vector<int>& twins, int* parts) {
  std::vector<int> firsts;
  for (size_t i = 0; i < twins.size(); ++i)
    if (twins[i] == int(i)) firsts.push_back(int(i));
  *parts = std::max(1, std::min(kMaxParts, int(firsts.size())));
  auto cost = [&](int k) {
    const ir::Kernel& kn = p.kernels[size_t(k)];
    return int64_t(kn.nodes.size() + kn.stores.size()) * (kn.contraction.reduce >= 0 ? 4 : 1);
  };
  std::stable_sort(firsts.begin(), firsts.end(), [&](int a, int b) { return cost(a) > cost(b); });
  std::vector<int64_t> load(size_t(*parts), 0);
  std::vector<int> part(twins.size(), -1);
  for (int k : firsts) {
    const size_t least = size_t(std::min_element(load.begin(), load.end()) - load.begin());
    part[size_t(k)] = int(least);
    load[least] += cost(k) + 1;
  }
  for (size_t i = 0; i < twins.size(); ++i) part[i] = part[size_t(twins[i])];
  return part;
}

}  // namespace

absl::StatusOr<ProgramModule> ProgramModule::emit(const ir::Program& p, const CpuTarget& target) {
  auto s = std::make_unique<State>();
  // One function per family of twins: a kernel that is an earlier one's twin calls its function.
  const std::vector<int> twins = ir::kernel_twins(p);
  int parts = 1;
  s->part_of = assign_parts(p, twins, &parts);
  for (int i = 0; i < parts; ++i) {
    auto tm = make_machine(target);
    if (!tm.ok()) return tm.status();
    Part part;
    part.tm = *std::move(tm);
    part.ctx = std::make_unique<llvm::LLVMContext>();
    part.mod = std::make_unique<llvm::Module>(absl::StrCat("kiln_program_part", i), *part.ctx);
    part.mod->setDataLayout(part.tm->createDataLayout());
    part.mod->setTargetTriple(target.triple);
    s->parts.push_back(std::move(part));
  }
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    const ir::Kernel& k = p.kernels[i];
    // GPU programs chain split reductions (passes/chain_reduce.h); CPU programs never do.
    if (k.chained())
      return absl::UnimplementedError(absl::StrCat("cpu codegen: kernel ", k.name, " has a chained finish (a GPU program)"));
    if (twins[i] != int(i)) {
      KernelEntry e = s->kernels[size_t(twins[i])];
      e.twin = twins[i];
      s->kernels.push_back(e);
      continue;
    }
    std::string symbol = "kiln_" + k.name;
    for (const Part& part : s->parts)
      if (part.mod->getFunction(symbol))
        return absl::InternalError(absl::StrCat("cpu codegen: two kernels of one program are named ", k.name));
    auto launch = emit_kernel(*s->parts[size_t(s->part_of[i])].mod, p, k, symbol);
    if (!launch.ok()) return launch.status();
    s->kernels.push_back(KernelEntry{symbol, int(i), launch->tiles, launch->work});
  }
  std::string text;
  for (const Part& part : s->parts) {
    std::string verr;
    llvm::raw_string_ostream vos(verr);
    if (llvm::verifyModule(*part.mod, &vos)) return absl::InternalError("cpu codegen produced invalid LLVM IR: " + vos.str());
    text += print(*part.mod);
  }
  ProgramModule m(std::move(s));
  m.unoptimized_ir_ = std::move(text);
  return m;
}

const std::vector<KernelEntry>& ProgramModule::kernels() const { return s_->kernels; }

void ProgramModule::optimize() {
  support::parallel_for(s_->parts.size(), support::options().compile_threads, [&](size_t i) {
    s_->parts[i].optimize();
  });
}

std::vector<std::string> ProgramModule::optimized_ir() {
  optimize();
  std::vector<std::string> out;
  for (size_t i = 0; i < s_->kernels.size(); ++i) {
    const KernelEntry& k = s_->kernels[i];
    const llvm::Function* f = s_->parts[size_t(s_->part_of[i])].mod->getFunction(k.symbol);
    out.push_back(f && k.twin == int(i) ? print(*f) : "");  // a twin's function is its family's first kernel's
  }
  return out;
}

absl::StatusOr<std::string> ProgramModule::emit_object() {
  // Each part optimized and compiled on a thread of its own (KILN_COMPILE_THREADS).
  std::vector<std::string> objects(s_->parts.size());
  std::vector<std::string> errors(s_->parts.size());
  support::parallel_for(s_->parts.size(), support::options().compile_threads, [&](size_t i) {
    Part& part = s_->parts[i];
    part.optimize();
    llvm::SmallVector<char, 0> buffer;
    llvm::raw_svector_ostream os(buffer);
    llvm::legacy::PassManager pm;
    if (part.tm->addPassesToEmitFile(pm, os, nullptr, llvm::CGFT_ObjectFile)) {
      errors[i] = "cpu: LLVM cannot emit an object file for " + part.tm->getTargetTriple().str();
      return;
    }
    pm.run(*part.mod);
    objects[i].assign(buffer.data(), buffer.size());
  });
  for (const std::string& e : errors)
    if (!e.empty()) return absl::InternalError(e);
  return pack_objects(objects);
}

std::string pack_objects(const std::vector<std::string>& objects) {
  if (objects.size() == 1) return objects[0];
  std::string out(kObjectsMagic, sizeof kObjectsMagic);
  auto u64 = [&out](uint64_t v) {
    for (int b = 0; b < 8; ++b) out.push_back(char((v >> (8 * b)) & 0xff));
  };
  u64(objects.size());
  for (const std::string& o : objects) u64(o.size());
  for (const std::string& o : objects) out += o;
  return out;
}

absl::StatusOr<std::vector<std::string_view>> unpack_objects(std::string_view blob) {
  if (blob.size() < sizeof kObjectsMagic || blob.substr(0, sizeof kObjectsMagic) != std::string_view(kObjectsMagic, sizeof kObjectsMagic))
    return std::vector<std::string_view>{blob};  // one object
  size_t at = sizeof kObjectsMagic;
  auto u64 = [&](uint64_t* v) {
    if (blob.size() - at < 8) return false;
    *v = 0;
    for (int b = 0; b < 8; ++b) *v |= uint64_t(uint8_t(blob[at + size_t(b)])) << (8 * b);
    at += 8;
    return true;
  };
  uint64_t n = 0;
  if (!u64(&n) || n == 0 || n > uint64_t(kMaxParts))
    return absl::InvalidArgumentError(absl::StrCat("cpu: a module of ", n, " object files (1 to ", kMaxParts, " expected)"));
  std::vector<uint64_t> sizes(n);
  for (uint64_t& sz : sizes)
    if (!u64(&sz)) return absl::InvalidArgumentError("cpu: the module's list of object files is cut short");
  std::vector<std::string_view> out;
  for (uint64_t sz : sizes) {
    if (sz > blob.size() - at) return absl::InvalidArgumentError("cpu: an object file runs past the end of the module");
    out.push_back(blob.substr(at, sz));
    at += sz;
  }
  if (at != blob.size()) return absl::InvalidArgumentError("cpu: trailing bytes after the module's object files");
  return out;
}

}  // namespace kiln::codegen::cpu
