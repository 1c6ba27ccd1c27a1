#include "codegen/llvm/compile.h"

#include <atomic>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "codegen/llvm/emit_kernel.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/ExecutionEngine/Orc/ThreadSafeModule.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

namespace kiln::codegen::cpu {
namespace {

struct JitState {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::unique_ptr<llvm::TargetMachine> tm;
  std::string error;
  std::mutex mu;  // guards optimization and code generation (they share one TargetMachine)
};

JitState& state() {
  static JitState* s = [] {
    auto* st = new JitState();
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
    if (!jtmb) {
      st->error = llvm::toString(jtmb.takeError());
      return st;
    }
    jtmb->setCodeGenOptLevel(llvm::CodeGenOpt::Aggressive);
    auto tm = jtmb->createTargetMachine();
    if (!tm) {
      st->error = llvm::toString(tm.takeError());
      return st;
    }
    st->tm = std::move(*tm);
    auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(*jtmb)).create();
    if (!jit) {
      st->error = llvm::toString(jit.takeError());
      return st;
    }
    st->jit = std::move(*jit);
    const llvm::DataLayout& dl = st->jit->getDataLayout();
    auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(dl.getGlobalPrefix());
    if (!gen) {
      st->error = llvm::toString(gen.takeError());
      return st;
    }
    st->jit->getMainJITDylib().addGenerator(std::move(*gen));
    return st;
  }();
  return *s;
}

void optimize(llvm::Module& m, llvm::TargetMachine* tm) {
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

}  // namespace

std::string host_target_description() {
  JitState& st = state();
  if (!st.tm) return "unavailable: " + st.error;
  return absl::StrCat(std::string(st.tm->getTargetCPU()), " ", std::string(st.tm->getTargetFeatureString()));
}

absl::StatusOr<CompiledProgram> compile_program(const ir::Program& p, bool keep_ir) {
  JitState& st = state();
  if (!st.jit) return absl::UnavailableError("cpu: LLVM JIT unavailable: " + st.error);
  static std::atomic<int> counter{0};
  int id = counter.fetch_add(1);
  auto ctx = std::make_unique<llvm::LLVMContext>();
  auto mod = std::make_unique<llvm::Module>(absl::StrCat("kiln_prog", id), *ctx);
  mod->setDataLayout(st.jit->getDataLayout());
  mod->setTargetTriple(st.jit->getTargetTriple().str());
  std::vector<CompiledKernel> kernels(p.kernels.size());
  std::vector<std::string> symbols;
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    std::string sym = absl::StrCat("kiln_p", id, "_", p.kernels[i].name);
    auto launch = emit_kernel(*mod, p, p.kernels[i], sym);
    if (!launch.ok()) return launch.status();
    kernels[i].tiles = launch->tiles;
    kernels[i].work = launch->work;
    symbols.push_back(sym);
  }
  std::string verr;
  llvm::raw_string_ostream vos(verr);
  if (llvm::verifyModule(*mod, &vos)) return absl::InternalError("cpu codegen produced invalid LLVM IR: " + vos.str());
  {
    std::lock_guard<std::mutex> lock(st.mu);
    optimize(*mod, st.tm.get());
  }
  CompiledProgram out;
  if (keep_ir) {
    for (const std::string& sym : symbols) {
      std::string text;
      llvm::raw_string_ostream os(text);
      if (llvm::Function* f = mod->getFunction(sym)) f->print(os);
      out.ir.push_back(os.str());
    }
  }
  // LLJIT without compile threads materializes on the thread that looks a symbol up, through
  // one shared TargetMachine, which is not thread-safe: concurrent realizes that compile at the
  // same time got corrupted code (null kernel addresses). Code generation is serialized here
  // (optimization already is, for the same reason).
  std::lock_guard<std::mutex> lock(st.mu);
  auto& es = st.jit->getExecutionSession();
  auto jd = es.createJITDylib(absl::StrCat("kiln_lib", id));
  if (!jd) return absl::InternalError("cpu: " + llvm::toString(jd.takeError()));
  jd->addToLinkOrder(st.jit->getMainJITDylib());
  if (auto err = st.jit->addIRModule(*jd, llvm::orc::ThreadSafeModule(std::move(mod), std::move(ctx))))
    return absl::InternalError("cpu: " + llvm::toString(std::move(err)));
  for (size_t i = 0; i < symbols.size(); ++i) {
    auto addr = st.jit->lookup(*jd, symbols[i]);
    if (!addr) return absl::InternalError("cpu: " + llvm::toString(addr.takeError()));
    kernels[i].fn = addr->toPtr<KernelFn>();
  }
  out.kernels = std::move(kernels);
  return out;
}

}  // namespace kiln::codegen::cpu
