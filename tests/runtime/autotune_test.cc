// The autotuner (replay/autotune.h) against a stand-in compiler and device whose kernels' times
// depend on their config: it picks each kernel's fastest variant, leaves kernels with nothing to
// choose alone, stores the winner (memory and disk) so that the next compile times nothing,
// retunes when the stored winner is no longer a candidate, skips rounds that fail, and changes
// nothing on a device that cannot time kernels. The CUDA side (real candidates, real timing)
// is tests/cuda/autotune_sm90_test.cc.
#include "replay/autotune.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kiln/kiln.h"
#include "passes/helpers.h"
#include "runtime/compiled_program.h"
#include "runtime/disk_cache.h"
#include "runtime/stats.h"
#include "testing/scoped_env.h"
#include "testing/temp_dir.h"

namespace kiln {
namespace {

// Kernel 0 has variants "v=0" (the heuristic's), "v=1", "v=2" and, when `offer_bad`, "v=bad"
// (which does not compile); other kernels have none.
class FakeCompiler : public runtime::Compiler {
 public:
  explicit FakeCompiler(bool offer_bad = false, std::string cls = "fake class") : offer_bad_(offer_bad), cls_(cls) {
    target_.name = "fake";
  }
  const ir::TargetInfo& target() const override { return target_; }
  std::string target_key() const override { return "fake-target"; }
  absl::StatusOr<runtime::CompiledProgram> compile(const ir::Program& p) const override {
    ++compiles;
    runtime::CompiledProgram c = runtime::plan_of(p);
    c.backend = "fake";
    c.target_key = target_key();
    for (size_t i = 0; i < p.kernels.size(); ++i) {
      if (p.kernels[i].config == "v=bad") return absl::InternalError("v=bad does not compile");
      c.kernels[i].strategy = p.kernels[i].config;  // what the stand-in executable times
    }
    return c;
  }
  std::vector<std::string> tuning_candidates(const ir::Program&, int k, std::string* shape_class) const override {
    if (k != 0) return {};
    *shape_class = cls_;
    std::vector<std::string> v = {"v=0", "v=1", "v=2"};
    if (offer_bad_) v.insert(v.begin() + 1, "v=bad");
    return v;
  }
  mutable int compiles = 0;

 private:
  ir::TargetInfo target_;
  bool offer_bad_;
  std::string cls_;
};

class FakeExecutable : public runtime::Executable {
 public:
  FakeExecutable(std::vector<std::string> configs, bool can_time) : configs_(std::move(configs)), can_time_(can_time) {}
  absl::Status run(const std::vector<runtime::Buffer*>&, const std::vector<runtime::Buffer*>&,
                   const runtime::ParamValues&) override {
    return absl::OkStatus();
  }
  int kernels_per_run() const override { return int(configs_.size()); }
  absl::StatusOr<std::vector<double>> kernel_times(const std::vector<runtime::Buffer*>& in,
                                                   const std::vector<runtime::Buffer*>& out,
                                                   const runtime::ParamValues& params) override {
    if (!can_time_) return Executable::kernel_times(in, out, params);
    for (runtime::Buffer* b : in)
      if (!b) return absl::InvalidArgumentError("an input is not bound");
    for (runtime::Buffer* b : out)
      if (!b) return absl::InvalidArgumentError("an output is not bound");
    static const std::map<std::string, double> us = {{"", 10}, {"v=0", 10}, {"v=1", 5}, {"v=2", 7}};
    std::vector<double> t;
    for (const std::string& c : configs_) t.push_back(us.count(c) ? us.at(c) : 1.0);
    return t;
  }

 private:
  std::vector<std::string> configs_;
  bool can_time_;
};

class FakeDevice : public runtime::Device {
 public:
  explicit FakeDevice(bool can_time = true) : can_time_(can_time) {}
  std::string name() const override { return "fake"; }
  std::string description() const override { return "fake device"; }
  const ir::TargetInfo& target() const override { return target_; }
  absl::StatusOr<std::shared_ptr<runtime::Buffer>> alloc(int64_t bytes) override {
    return std::make_shared<runtime::Buffer>(this, bytes);
  }
  absl::Status upload(runtime::Buffer*, const void*, int64_t) override { return absl::OkStatus(); }
  absl::Status download(runtime::Buffer*, void*, int64_t) override { return absl::OkStatus(); }
  absl::StatusOr<std::unique_ptr<runtime::Executable>> load(const runtime::CompiledProgram& c) override {
    std::vector<std::string> configs;
    for (const runtime::CompiledKernel& k : c.kernels) configs.push_back(k.strategy);
    return std::unique_ptr<runtime::Executable>(new FakeExecutable(configs, can_time_));
  }

 private:
  ir::TargetInfo target_;
  bool can_time_;
};

// A program of several kernels (one per primitive), planned for the CPU.
ir::Program two_kernels() {
  Tensor a = from_vector(std::vector<float>(64, 1.0f), {8, 8});
  Tensor b = from_vector(std::vector<float>(8, 2.0f), {8});
  return testing::program_of({a.sum({1}) * b, (a + 1.0f).exp()}, testing::cpu_target(), /*fusion=*/false);
}

class Autotune : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      (void)default_device();
    } catch (const Error& e) {
      GTEST_SKIP() << "no default device: " << e.what();
    }
    dir_ = testing::unique_temp_dir("autotune");
    env_ = std::make_unique<testing::ScopedEnv>(std::initializer_list<std::pair<std::string, std::string>>{
        {"KILN_CACHE_DIR", dir_}, {"KILN_DISK_CACHE", ""}});
  }
  std::string dir_;
  std::unique_ptr<testing::ScopedEnv> env_;
};

TEST_F(Autotune, EachKernelGetsItsFastestVariantAndTheNextCompileTimesNothing) {
  ir::Program p = two_kernels();
  ASSERT_GE(p.kernels.size(), 2u);
  const std::string cls = absl::StrCat("class of ", dir_);  // a class no other test stored
  FakeCompiler compiler(false, cls);
  FakeDevice device;
  const Stats before = stats();
  replay::autotune(&p, compiler, &device);
  EXPECT_EQ(p.kernels[0].config, "v=1");
  for (size_t k = 1; k < p.kernels.size(); ++k) EXPECT_EQ(p.kernels[k].config, "") << k;
  EXPECT_EQ(compiler.compiles, 3);  // one round per candidate
  EXPECT_EQ(stats().kernels_autotuned - before.kernels_autotuned, 1);
  // Stored on disk under device, target and class, with every candidate's time.
  const std::string key = absl::StrCat("autotune v1|fake device|fake-target|", cls);
  std::optional<std::string> blob = runtime::DiskCache::for_backend("autotune").get(key);
  ASSERT_TRUE(blob.has_value());
  EXPECT_EQ(blob->substr(0, blob->find('\n')), "v=1");
  EXPECT_NE(blob->find("v=2\t7 us"), std::string::npos) << *blob;
  // The next compile of the same class: the stored winner, nothing compiled or timed.
  ir::Program again = two_kernels();
  FakeCompiler second(false, cls);
  replay::autotune(&again, second, &device);
  EXPECT_EQ(again.kernels[0].config, "v=1");
  EXPECT_EQ(second.compiles, 0);
  EXPECT_EQ(stats().autotune_cache_hits - before.autotune_cache_hits, 1);
}

TEST_F(Autotune, ARoundThatDoesNotCompileIsSkipped) {
  ir::Program p = two_kernels();
  FakeCompiler compiler(/*offer_bad=*/true, absl::StrCat("bad class of ", dir_));
  FakeDevice device;
  replay::autotune(&p, compiler, &device);
  EXPECT_EQ(p.kernels[0].config, "v=1");
  EXPECT_EQ(compiler.compiles, 4);
}

TEST_F(Autotune, AStoredWinnerThatIsNoLongerACandidateIsRetuned) {
  const std::string cls = absl::StrCat("stale class of ", dir_);
  runtime::DiskCache::for_backend("autotune").put(absl::StrCat("autotune v1|fake device|fake-target|", cls),
                                                  "v=gone\nv=gone\t1 us\n");
  ir::Program p = two_kernels();
  FakeCompiler compiler(false, cls);
  FakeDevice device;
  replay::autotune(&p, compiler, &device);
  EXPECT_EQ(p.kernels[0].config, "v=1");
  EXPECT_EQ(compiler.compiles, 3);
}

TEST_F(Autotune, ADeviceThatCannotTimeKernelsKeepsTheHeuristic) {
  ir::Program p = two_kernels();
  FakeCompiler compiler(false, absl::StrCat("untimed class of ", dir_));
  FakeDevice device(/*can_time=*/false);
  const Stats before = stats();
  replay::autotune(&p, compiler, &device);
  for (const ir::Kernel& k : p.kernels) EXPECT_EQ(k.config, "");
  EXPECT_EQ(stats().kernels_autotuned - before.kernels_autotuned, 0);
}

// Only the CUDA compiler offers variants today: on the CPU, KILN_AUTOTUNE=1 changes nothing and
// results are the same.
TEST_F(Autotune, OnTheCpuKilnAutotuneChangesNothing) {
  testing::ScopedEnv on({{"KILN_AUTOTUNE", "1"}});
  const Stats before = stats();
  Tensor a = from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  EXPECT_EQ(matmul(a, a).to_vector<float>(), (std::vector<float>{7, 10, 15, 22}));
  EXPECT_EQ(stats().kernels_autotuned - before.kernels_autotuned, 0);
}

}  // namespace
}  // namespace kiln
