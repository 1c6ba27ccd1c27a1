// shared_sizes.h: views of one resizable executable.
#include "replay/shared_sizes.h"

#include <cstdio>

#include "support/options.h"

namespace kiln::replay {

struct SharedSizes::Shared {
  std::mutex mu;  // a resize and the run after it are one step
  std::unique_ptr<runtime::Executable> exe;
  const void* current = nullptr;  // the view whose program the executable holds
};

namespace {

class View : public runtime::Executable {
 public:
  View(std::shared_ptr<SharedSizes::Shared> s, runtime::CompiledProgram c) : s_(std::move(s)), program_(std::move(c)) {
    kernels_ = s_->exe->kernels_per_run();
  }
  ~View() override {
    std::lock_guard<std::mutex> lock(s_->mu);
    if (s_->current == this) s_->current = nullptr;
  }
  absl::Status run(const std::vector<runtime::Buffer*>& inputs, const std::vector<runtime::Buffer*>& outputs,
                   const runtime::ParamValues& params) override {
    std::lock_guard<std::mutex> lock(s_->mu);
    if (absl::Status s = take(); !s.ok()) return s;
    return s_->exe->run(inputs, outputs, params);
  }
  int kernels_per_run() const override { return kernels_; }
  absl::StatusOr<std::vector<double>> kernel_times(const std::vector<runtime::Buffer*>& inputs,
                                                   const std::vector<runtime::Buffer*>& outputs,
                                                   const runtime::ParamValues& params) override {
    std::lock_guard<std::mutex> lock(s_->mu);
    if (absl::Status s = take(); !s.ok()) return s;
    return s_->exe->kernel_times(inputs, outputs, params);
  }
  // Makes the executable hold this view's size (s_->mu held).
  absl::Status take() {
    if (s_->current == this) return absl::OkStatus();
    s_->current = nullptr;  // a resize that fails part way leaves no size held: the next run resizes
    if (absl::Status s = s_->exe->resize(program_); !s.ok()) return s;
    s_->current = this;
    return absl::OkStatus();
  }

 private:
  std::shared_ptr<SharedSizes::Shared> s_;
  runtime::CompiledProgram program_;  // launch shapes and plan (the module is the executable's)
  int kernels_ = 0;
};

// A view's program: the executable's module was checked when the view was made (resize() with the
// whole program), so switches pass none (runtime::Executable::resize).
runtime::CompiledProgram without_code(const runtime::CompiledProgram& c) {
  runtime::CompiledProgram p = c;
  p.module.clear();
  p.module_source.clear();
  p.portable_module.clear();
  for (runtime::CompiledKernel& k : p.kernels) k.source.clear(), k.binary.clear();
  return p;
}

}  // namespace

absl::StatusOr<std::unique_ptr<runtime::Executable>> SharedSizes::load(runtime::Device* device, const runtime::CompiledProgram& c) {
  std::lock_guard<std::mutex> lock(mu_);
  if (std::shared_ptr<Shared> s = shared_.lock()) {
    std::unique_lock<std::mutex> held(s->mu);
    s->current = nullptr;  // (as in View::take)
    absl::Status taken = s->exe->resize(c);
    if (taken.ok()) {
      auto v = std::make_unique<View>(s, without_code(c));
      s->current = v.get();
      return std::unique_ptr<runtime::Executable>(std::move(v));
    }
    if (!absl::IsFailedPrecondition(taken)) return taken;
    if (support::debug_level() >= 1)
      std::fprintf(stderr, "kiln: a symbolic size loads an executable of its own: %s\n", std::string(taken.message()).c_str());
    // This size plans other code or launches (size 1 does): it loads its own executable, which the
    // sizes after it share (the views of the old one keep it).
  }
  auto exe = device->load(c);
  if (!exe.ok() || !(*exe)->resizable()) return exe;
  auto s = std::make_shared<Shared>();
  s->exe = *std::move(exe);
  auto v = std::make_unique<View>(s, without_code(c));
  s->current = v.get();
  shared_ = s;
  return std::unique_ptr<runtime::Executable>(std::move(v));
}

}  // namespace kiln::replay
