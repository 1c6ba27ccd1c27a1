// compile.h: TargetMachines, host detection, the O3 pipeline and object emission.
#include "codegen/llvm/compile.h"

#include <algorithm>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "codegen/llvm/emit_kernel.h"
#include "ir/kernel_twins.h"
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
                      ", reloc ", int(kReloc), ", code model ", int(kCodeModel), "; ELF object");
}

struct ProgramModule::State {
  std::unique_ptr<llvm::LLVMContext> ctx;  // first: destroyed after the module
  std::unique_ptr<llvm::Module> mod;
  std::unique_ptr<llvm::TargetMachine> tm;
  std::vector<KernelEntry> kernels;
  bool optimized = false;
};

ProgramModule::ProgramModule(std::unique_ptr<State> s) : s_(std::move(s)) {}
ProgramModule::ProgramModule(ProgramModule&&) noexcept = default;
ProgramModule& ProgramModule::operator=(ProgramModule&&) noexcept = default;
ProgramModule::~ProgramModule() = default;

absl::StatusOr<ProgramModule> ProgramModule::emit(const ir::Program& p, const CpuTarget& target) {
  auto tm = make_machine(target);
  if (!tm.ok()) return tm.status();
  auto s = std::make_unique<State>();
  s->tm = *std::move(tm);
  s->ctx = std::make_unique<llvm::LLVMContext>();
  s->mod = std::make_unique<llvm::Module>("kiln_program", *s->ctx);
  s->mod->setDataLayout(s->tm->createDataLayout());
  s->mod->setTargetTriple(target.triple);
  // One function per family of twins: a kernel that is an earlier one's twin calls its function.
  const std::vector<int> twins = ir::kernel_twins(p);
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    const ir::Kernel& k = p.kernels[i];
    if (twins[i] != int(i)) {
      KernelEntry e = s->kernels[size_t(twins[i])];
      e.twin = twins[i];
      s->kernels.push_back(e);
      continue;
    }
    std::string symbol = "kiln_" + k.name;
    if (s->mod->getFunction(symbol))
      return absl::InternalError(absl::StrCat("cpu codegen: two kernels of one program are named ", k.name));
    auto launch = emit_kernel(*s->mod, p, k, symbol);
    if (!launch.ok()) return launch.status();
    s->kernels.push_back(KernelEntry{symbol, int(i), launch->tiles, launch->work});
  }
  std::string verr;
  llvm::raw_string_ostream vos(verr);
  if (llvm::verifyModule(*s->mod, &vos)) return absl::InternalError("cpu codegen produced invalid LLVM IR: " + vos.str());
  ProgramModule m(std::move(s));
  m.unoptimized_ir_ = print(*m.s_->mod);
  return m;
}

const std::vector<KernelEntry>& ProgramModule::kernels() const { return s_->kernels; }

void ProgramModule::optimize() {
  if (s_->optimized) return;
  run_o3(*s_->mod, s_->tm.get());
  s_->optimized = true;
}

std::vector<std::string> ProgramModule::optimized_ir() {
  optimize();
  std::vector<std::string> out;
  for (size_t i = 0; i < s_->kernels.size(); ++i) {
    const KernelEntry& k = s_->kernels[i];
    const llvm::Function* f = s_->mod->getFunction(k.symbol);
    out.push_back(f && k.twin == int(i) ? print(*f) : "");  // a twin's function is its family's first kernel's
  }
  return out;
}

absl::StatusOr<std::string> ProgramModule::emit_object() {
  optimize();
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  if (s_->tm->addPassesToEmitFile(pm, os, nullptr, llvm::CGFT_ObjectFile))
    return absl::InternalError("cpu: LLVM cannot emit an object file for " + s_->tm->getTargetTriple().str());
  pm.run(*s_->mod);
  return std::string(buffer.data(), buffer.size());
}

}  // namespace kiln::codegen::cpu
