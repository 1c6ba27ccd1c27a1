// The process-wide LLJIT behind jit_linker.h: one JITDylib per program (its objects, one per part),
// serialized linking.
#include "backends/cpu/jit_linker.h"

#include <mutex>

#include "absl/strings/str_cat.h"
#include "codegen/llvm/compile.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

namespace kiln::runtime::cpu {
namespace {

struct Jit {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::string error;  // why `jit` is null
  // LLJIT links on the thread that looks a symbol up. Concurrent realizes that loaded code at
  // the same time once got corrupted code (null kernel addresses) through state ORC shares;
  // adding, looking up and removing are serialized here.
  std::mutex mu;
  int64_t libraries = 0;  // for unique JITDylib names
};

Jit& jit() {
  static Jit* j = [] {  // never destroyed: executables may be released during static teardown
    auto* st = new Jit();
    if (llvm::InitializeNativeTarget() || llvm::InitializeNativeTargetAsmPrinter()) {
      st->error = "LLVM has no code generator for the host CPU";
      return st;
    }
    auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
    if (!jtmb) {
      st->error = llvm::toString(jtmb.takeError());
      return st;
    }
    auto lljit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(*jtmb)).create();
    if (!lljit) {
      st->error = llvm::toString(lljit.takeError());
      return st;
    }
    auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess((*lljit)->getDataLayout().getGlobalPrefix());
    if (!gen) {
      st->error = llvm::toString(gen.takeError());
      return st;
    }
    (*lljit)->getMainJITDylib().addGenerator(std::move(*gen));
    st->jit = std::move(*lljit);
    return st;
  }();
  return *j;
}

}  // namespace

LinkedObject::~LinkedObject() {
  Jit& j = jit();
  std::lock_guard<std::mutex> lock(j.mu);
  if (llvm::Error err = j.jit->getExecutionSession().removeJITDylib(*lib_))
    llvm::logAllUnhandledErrors(std::move(err), llvm::errs(), "kiln: cpu: releasing compiled kernels: ");
}

absl::StatusOr<std::unique_ptr<LinkedObject>> link_object(std::string_view object, const std::vector<std::string>& symbols) {
  Jit& j = jit();
  if (!j.jit) return absl::UnavailableError("cpu: LLVM's JIT linker cannot start: " + j.error);
  auto objects = codegen::cpu::unpack_objects(object);
  if (!objects.ok()) return objects.status();
  for (std::string_view o : *objects)
    if (auto parsed = llvm::object::ObjectFile::createObjectFile(llvm::MemoryBufferRef(llvm::StringRef(o.data(), o.size()), "kiln_program"));
        !parsed)
      return absl::InvalidArgumentError("cpu: the compiled program's module is not an object file: " +
                                        llvm::toString(parsed.takeError()));
  std::lock_guard<std::mutex> lock(j.mu);
  auto& es = j.jit->getExecutionSession();
  auto lib = es.createJITDylib(absl::StrCat("kiln_lib", j.libraries++));
  if (!lib) return absl::InternalError("cpu: " + llvm::toString(lib.takeError()));
  lib->addToLinkOrder(j.jit->getMainJITDylib());
  auto fail = [&](const std::string& why) {
    if (llvm::Error err = es.removeJITDylib(*lib)) llvm::consumeError(std::move(err));  // already failing
    return absl::InvalidArgumentError("cpu: cannot link the compiled program: " + why);
  };
  for (size_t i = 0; i < objects->size(); ++i) {
    const std::string_view o = (*objects)[i];
    if (llvm::Error err = j.jit->addObjectFile(
            *lib, llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(o.data(), o.size()), absl::StrCat("kiln_program_part", i))))
      return fail(llvm::toString(std::move(err)));
  }
  std::vector<KernelFn> fns;
  for (const std::string& s : symbols) {
    auto addr = j.jit->lookup(*lib, s);
    if (!addr) return fail(llvm::toString(addr.takeError()));
    fns.push_back(addr->toPtr<KernelFn>());
  }
  return std::make_unique<LinkedObject>(&*lib, std::move(fns));
}

}  // namespace kiln::runtime::cpu
