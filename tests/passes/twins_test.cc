// Kernel twins (ir/kernel_twins.h): kernels that differ only in their buffers and param slots are
// one family, compiled as one function that every member calls with its own bindings. Pinned
// here: which kernels are twins (and which are not), that each backend's compiled program calls
// one function per family, and that every member still computes its own values.
#include <gtest/gtest.h>

#include <algorithm>

#include "ir/kernel_twins.h"
#include "ir/params.h"
#include "passes/helpers.h"
#include "runtime/registry.h"
#include "testing/reference.h"

namespace kiln {
namespace {

using testing::program_of;
using testing::random_tensor;

// Layers of the same shapes with their own weights, biases and scales: the encoder-stack
// pattern that twins are for.
Tensor layers(const Tensor& x, int n) {
  Tensor h = x;
  for (int l = 0; l < n; ++l) {
    Tensor w = random_tensor({48, 48}, float32, 10 + l), b = random_tensor({48}, float32, 20 + l);
    h = (matmul(h, w) + b).tanh() * (0.3 + 0.1 * l);
  }
  return h;
}

int twins_in(const std::vector<int>& t) {
  int n = 0;
  for (size_t i = 0; i < t.size(); ++i) n += t[i] != int(i);
  return n;
}

TEST(Twins, UnfusedOpsOfTheSameShapeAndDtypeAreTwins) {
  Tensor a = random_tensor({64}, float32, 1), b = random_tensor({64}, float32, 2), c = random_tensor({65}, float32, 3);
  Tensor d = random_tensor({64}, float64, 4);
  // tanh(a), tanh(b): twins; tanh(c) (another shape), tanh(d) (another dtype), exp(a) (another op): not.
  ir::Program p = program_of({a.tanh(), b.tanh(), c.tanh(), d.tanh(), a.exp()}, testing::cpu_target(), /*fusion=*/false);
  ASSERT_EQ(p.kernels.size(), 5u);
  EXPECT_EQ(ir::kernel_twins(p), (std::vector<int>{0, 0, 2, 3, 4}));
  // Each kernel's bindings in order of first use: what it loads, then what it stores.
  EXPECT_EQ(ir::kernel_buffers(p.kernels[0]).size(), 2u);
  EXPECT_EQ(ir::kernel_buffers(p.kernels[1]).size(), 2u);
  EXPECT_NE(ir::kernel_buffers(p.kernels[0]), ir::kernel_buffers(p.kernels[1]));
}

TEST(Twins, KernelsThatDifferInAConstantAreNotTwins) {
  Tensor a = random_tensor({64}, float32, 1), b = random_tensor({64}, float32, 2);
  // Integer-valued constants stay in the code (ir/params.h): `+ 2` and `+ 3` are two functions.
  ir::Program p = program_of({a + 2.0, b + 3.0, b + 2.0}, testing::cpu_target(), /*fusion=*/false);
  ASSERT_EQ(p.kernels.size(), 3u);
  EXPECT_EQ(ir::kernel_twins(p), (std::vector<int>{0, 1, 0}));
}

TEST(Twins, LayersWithTheirOwnParamsAreTwins) {
  Tensor x = random_tensor({8, 48}, float32, 1);
  ir::Graph g = ir::lift_params(detail::capture({layers(x, 6)}, nullptr));
  auto c = passes::compile_graph(g, testing::cpu_target(), passes::Options{});
  ASSERT_TRUE(c.ok()) << c.status();
  const ir::Program& p = c->program;
  ASSERT_EQ(p.params.size(), 6u);  // the scales 0.3, 0.4, ..., 0.8
  const std::vector<int> t = ir::kernel_twins(p);
  EXPECT_GE(twins_in(t), 3) << p.to_string();
  // A twin reads its own param slot: the same position, another slot.
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == int(i) || ir::kernel_param_slots(p.kernels[i]).empty()) continue;
    EXPECT_NE(ir::kernel_param_slots(p.kernels[i]), ir::kernel_param_slots(p.kernels[size_t(t[i])]));
  }
}

// On the device under test: the layers compute the interpreter's values, and the compiled program
// calls one function per family (cpu, cuda, hip; vulkan dispatches one shader per family with each
// kernel's table indices pushed).
TEST(Twins, EachDeviceRunsTwinsWithTheirOwnBindings) {
  Tensor x = random_tensor({8, 48}, float32, 1);
  Tensor y = layers(x, 6);
  ir::Graph g = ir::lift_params(detail::capture({y}, nullptr));  // before y is realized
  EXPECT_MATCHES_REFERENCE({y});
  const std::string backend = default_device().name();
  auto dev = runtime::get_device(backend);
  ASSERT_TRUE(dev.ok()) << dev.status();
  auto compiler = runtime::make_compiler(backend, (*dev)->target());
  ASSERT_TRUE(compiler.ok()) << compiler.status();
  auto planned = passes::compile_graph(g, (*compiler)->target(), passes::Options{});
  ASSERT_TRUE(planned.ok()) << planned.status();
  auto compiled = (*compiler)->compile(planned->program);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  int twins = 0;
  for (size_t i = 0; i < compiled->kernels.size(); ++i) {
    const runtime::CompiledKernel& k = compiled->kernels[i];
    if (k.twin < 0) continue;
    ++twins;
    ASSERT_LT(size_t(k.twin), i);
    EXPECT_EQ(compiled->entry(i), compiled->kernels[size_t(k.twin)].name);
    EXPECT_NE(k.name, compiled->kernels[size_t(k.twin)].name) << "a twin keeps its own name for profiles";
    EXPECT_NE(k.buffers, compiled->kernels[size_t(k.twin)].buffers) << "a twin binds its own buffers";
    if (backend == "vulkan") {
      EXPECT_TRUE(k.binary.empty()) << "a twin has no shader of its own";
      EXPECT_FALSE(compiled->kernels[size_t(k.twin)].binary.empty());
    }
  }
  EXPECT_GE(twins, 3) << planned->program.to_string();
  // Serialized and read back (a .kiln artifact's section), the families survive.
  auto back = runtime::deserialize(runtime::serialize(*compiled));
  ASSERT_TRUE(back.ok()) << back.status();
  for (size_t i = 0; i < back->kernels.size(); ++i) EXPECT_EQ(back->kernels[i].twin, compiled->kernels[i].twin);
}

// A kernel binding more buffers than Vulkan pushes table indices for (codegen/c_family/
// gpu_program.h: 30) has them in its text: one fused kernel of 40 inputs and its replay with
// other inputs compute the interpreter's values on every device.
TEST(Twins, AKernelOfManyBindingsComputesItsOwnValues) {
  for (int round = 0; round < 2; ++round) {
    std::vector<Tensor> xs;
    Tensor sum = zeros({5, 7});
    for (int i = 0; i < 40; ++i) {
      xs.push_back(random_tensor({5, 7}, float32, 100 * round + i));
      sum = sum + xs.back() * double(i + 1);
    }
    EXPECT_EQ(program_of({sum}).kernels.size(), 1u);
    EXPECT_MATCHES_REFERENCE({sum});
  }
}

}  // namespace
}  // namespace kiln
