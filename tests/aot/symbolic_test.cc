// Symbolic dimensions ahead of time: a function exported with kiln::Dim("batch") becomes one graph
// text for every batch size (polynomials in the symbols, ir/symbolic_graph.h), kilnc compiles it
// once, and the loaded model runs any batch size against the reference interpreter, finding every
// kernel's binary in the artifact (stats().kernels_compiled stays 0). Errors name what is wrong.
#include <string>

#include "absl/strings/str_cat.h"
#include "aot/aot_fixture.h"
#include "ir/signature.h"
#include "runtime/compile_cache.h"
#include "testing/error_of.h"
#include "testing/reference.h"
#include "tools/kilnc/npy.h"

namespace kiln::testing {
namespace {

// An MLP over a batch of rows: relu(x @ w1 + b) @ w2, softmax, plus each row's mean (a reduce
// over a fixed axis); the batch is symbolic.
Example batched_mlp() {
  Tensor w1 = random_tensor({16, 32}, float32, 11, -0.5, 0.5);
  return Example{"mlp",
                 [w1](const std::vector<Tensor>& in) {
                   Tensor h = relu(matmul(in[0], w1) + in[1]);
                   return std::vector<Tensor>{softmax(matmul(h, in[2]), -1), mean(h, {1}, true)};
                 },
                 {random_tensor({8, 16}, float32, 1), random_tensor({32}, float32, 2), random_tensor({32, 10}, float32, 3, -0.5, 0.5)},
                 {{"x", "b", "w2"}, {"probs", "h_mean"}},
                 {{Dim("batch"), 16}}};
}

std::vector<Tensor> inputs_at(const Example& e, int64_t batch, uint32_t seed) {
  std::vector<Tensor> in = e.inputs;
  in[0] = random_tensor({batch, 16}, float32, seed);
  return in;
}

TEST(AotSymbolic, ExportWritesTheSizesAsPolynomials) {
  Example e = batched_mlp();
  std::string text = export_graph(e.fn, e.inputs, e.names, e.dims);
  EXPECT_NE(text.find("  symbol batch = 8\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  input x : f32[batch,16]\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  output probs : f32[batch,10]\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  output h_mean : f32[batch,1]\n"), std::string::npos) << text;
  EXPECT_NE(text.find(" shape 0 = batch\n"), std::string::npos) << text;
  auto parsed = ir::parse_exported(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(ir::print(*parsed), text);
  // Written at another size, the graph is the one tracing at that size records.
  auto at5 = ir::instantiate(*parsed, {5});
  ASSERT_TRUE(at5.ok()) << at5.status();
  auto traced5 = ir::parse_exported(export_graph(e.fn, inputs_at(e, 5, 7), e.names));
  ASSERT_TRUE(traced5.ok());
  EXPECT_EQ(ir::print(*at5), ir::print(*traced5));
}

TEST(AotSymbolic, TheMeanOverASymbolicAxisIsOneOverItsSize) {
  Example e = batched_mlp();
  auto over_batch = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{mean(in[0] * 2.0, {0}, false)}; };
  std::string text = export_graph(over_batch, {e.inputs[0]}, {{"x"}, {"m"}}, {{Dim("batch"), 16}});
  EXPECT_NE(text.find(" scalar = 1/(batch)\n"), std::string::npos) << text;
  auto g = ir::parse_exported(text);
  ASSERT_TRUE(g.ok()) << g.status();
  for (int64_t n : {3, 40}) {
    auto at = ir::instantiate(*g, {n});
    ASSERT_TRUE(at.ok()) << at.status();
    auto traced = ir::parse_exported(export_graph(over_batch, {random_tensor({n, 16}, float32, 1)}, {{"x"}, {"m"}}));
    ASSERT_TRUE(traced.ok());
    EXPECT_EQ(ir::print(*at), ir::print(*traced)) << "batch " << n;
  }
}

TEST(AotSymbolic, AScalarComputedFromTheSizeIsItsPolynomial) {
  // x * (batch - 8): zero at the example's size, -5 at batch 3.
  auto fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * double(in[0].shape()[0] - 8)}; };
  std::string text = export_graph(fn, {random_tensor({8, 4}, float32, 1)}, {{"x"}, {"y"}}, {{Dim("batch"), 4}});
  EXPECT_NE(text.find(" scalar = batch-8\n"), std::string::npos) << text;
  auto g = ir::parse_exported(text);
  ASSERT_TRUE(g.ok()) << g.status();
  auto at = ir::instantiate(*g, {3});
  ASSERT_TRUE(at.ok()) << at.status();
  auto traced = ir::parse_exported(export_graph(fn, {random_tensor({3, 4}, float32, 2)}, {{"x"}, {"y"}}));
  ASSERT_TRUE(traced.ok());
  EXPECT_EQ(ir::print(*at), ir::print(*traced));
}

TEST(AotSymbolic, EveryBatchSizeRunsWithoutCompiling) {
  KILN_AOT_REQUIRE_DEVICE();
  Example e = batched_mlp();
  std::string path = scratch_dir("mlp") + "/mlp.kiln";
  compile_to(e, default_device().name(), path);
  runtime::forget_binaries();  // what compile_to compiled: the sizes must find it in the artifact
  reset_stats();
  Model m = load(path);
  ASSERT_EQ(m.inputs()[0].dims, (std::vector<std::string>{"batch", ""}));
  EXPECT_TRUE(m.inputs()[1].dims.empty());
  EXPECT_EQ(m.outputs()[0].dims, (std::vector<std::string>{"batch", ""}));
  for (int64_t batch : {8, 3, 100, 1000, 37, 3, 1, 2}) {
    SCOPED_TRACE(absl::StrCat("batch ", batch));
    std::vector<Tensor> in = inputs_at(e, batch, uint32_t(batch));
    std::vector<Tensor> got = m(in);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].shape(), (Shape{batch, 10}));
    EXPECT_EQ(got[1].shape(), (Shape{batch, 1}));
    EXPECT_TRUE(MatchesInterpreter(e.fn(in), got));
  }
  EXPECT_EQ(stats().kernels_compiled, 0);
  EXPECT_EQ(stats().kernel_disk_cache_hits, 0);
  EXPECT_GT(stats().kernels_reused, 0);
}

// Two symbols: rows of batch * seq through a linear layer (a product of the symbols), a padding
// row block concatenated along seq (seq + 2) and a softmax over it (a reduction over a symbolic
// axis).
Example two_symbols() {
  Tensor w = random_tensor({16, 8}, float32, 21, -0.5, 0.5);
  Tensor pad = random_tensor({1, 2, 8}, float32, 22);
  return Example{"bs",
                 [w, pad](const std::vector<Tensor>& in) {
                   const Shape& s = in[0].shape();
                   Tensor h = matmul(in[0].reshape({s[0] * s[1], 16}), w).reshape({s[0], s[1], 8});
                   Tensor padded = concat({h, pad.expand({s[0], 2, 8})}, 1);
                   return std::vector<Tensor>{softmax(padded, 1), h * in[1]};
                 },
                 {random_tensor({3, 5, 16}, float32, 1), random_tensor({3, 5, 1}, float32, 2)},
                 {{"x", "gate"}, {"probs", "gated"}},
                 {{Dim("batch"), Dim("seq"), 16}, {Dim("batch"), Dim("seq"), 1}}};
}

TEST(AotSymbolic, TwoSymbolsTheirProductAndAnOffset) {
  Example e = two_symbols();
  std::string text = export_graph(e.fn, e.inputs, e.names, e.dims);
  EXPECT_NE(text.find("  input x : f32[batch,seq,16]\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  output probs : f32[batch,seq+2,8]\n"), std::string::npos) << text;
  EXPECT_NE(text.find(" = batch*seq\n"), std::string::npos) << text;
  auto g = ir::parse_exported(text);
  ASSERT_TRUE(g.ok()) << g.status();
  // At batch 1 the trace records no expand of the [1, 2, 8] padding (already that shape), so the
  // written graph (with an expand to its own shape) is compared at other sizes.
  auto at1 = ir::instantiate(*g, {1, 1});
  ASSERT_TRUE(at1.ok()) << at1.status();
  EXPECT_EQ(at1->signature.outputs[0].shape, (Shape{1, 3, 8}));
  for (auto [b, s] : std::vector<std::pair<int64_t, int64_t>>{{2, 7}, {9, 4}, {2, 1}}) {
    auto at = ir::instantiate(*g, {b, s});
    ASSERT_TRUE(at.ok()) << at.status();
    std::vector<Tensor> in{random_tensor({b, s, 16}, float32, 3), random_tensor({b, s, 1}, float32, 4)};
    auto traced = ir::parse_exported(export_graph(e.fn, in, e.names));
    ASSERT_TRUE(traced.ok());
    EXPECT_EQ(ir::print(*at), ir::print(*traced)) << b << " x " << s;
  }
  auto err = ir::instantiate(*g, {2});
  EXPECT_FALSE(err.ok());
}

TEST(AotSymbolic, TwoSymbolsRunAtAnySizes) {
  KILN_AOT_REQUIRE_DEVICE();
  Example e = two_symbols();
  std::string path = scratch_dir("bs") + "/bs.kiln";
  compile_to(e, default_device().name(), path);
  Model m = load(path);
  EXPECT_EQ(m.outputs()[0].dims, (std::vector<std::string>{"batch", "seq+2", ""}));
  for (auto [b, s] : std::vector<std::pair<int64_t, int64_t>>{{3, 5}, {2, 7}, {1, 1}, {8, 33}}) {
    std::vector<Tensor> in{random_tensor({b, s, 16}, float32, uint32_t(b * 100 + s)), random_tensor({b, s, 1}, float32, 7)};
    std::vector<Tensor> got = m(in);
    EXPECT_EQ(got[0].shape(), (Shape{b, s + 2, 8}));
    EXPECT_TRUE(MatchesInterpreter(e.fn(in), got)) << b << " x " << s;
  }
  std::string err = error_of([&] { m({random_tensor({2, 3, 16}, float32, 1), random_tensor({2, 4, 1}, float32, 2)}); });
  EXPECT_NE(err.find("input 'gate' dim 1 binds seq to 4, but input 'x' dim 1 bound it to 3"), std::string::npos) << err;
}

TEST(AotSymbolic, AFreshKilncProcessRunsANewBatchSizeWithoutCompiling) {
  KILN_AOT_REQUIRE_DEVICE();
  Example e = batched_mlp();
  std::string dir = scratch_dir("mlp");
  compile_to(e, default_device().name(), dir + "/mlp.kiln");
  std::vector<Tensor> in = inputs_at(e, 37, 5);
  std::string args = dir + "/mlp.kiln --output-dir " + dir + "/out --device " + default_device().name();
  for (size_t i = 0; i < in.size(); ++i) {
    std::string npy = dir + "/" + e.names.inputs[i] + ".npy";
    ASSERT_TRUE(kilnc::write_npy(npy, {in[i].dtype(), in[i].shape(), bytes_of(in[i])}).ok());
    args += " --input " + e.names.inputs[i] + "=" + npy;
  }
  std::string out;
  ASSERT_EQ(run_kilnc("run " + args, &out), 0) << out;
  EXPECT_NE(out.find("kernels_compiled=0 kernel_disk_cache_hits=0"), std::string::npos) << out;
  auto written = kilnc::read_npy(dir + "/out/probs.npy");
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(written->shape, (Shape{37, 10}));
  EXPECT_EQ(written->data, bytes_of(load(dir + "/mlp.kiln")(in)[0]));
}

TEST(AotSymbolic, EverySectionCarriesItsTemplateAndBinaries) {
  // Sections for targets other than this device's (no GPU needed) plan their own templates.
  Example e = batched_mlp();
  artifact::Artifact a;
  const std::string path = scratch_dir("mlp") + "/mlp.kiln";
  try {
    a = compile_to(e, "cuda:sm_90,cuda:sm_80,vulkan:lavapipe", path);
  } catch (const Error& err) {
    GTEST_SKIP() << "this build cannot compile those targets: " << err.what();
  }
  ASSERT_EQ(a.targets.size(), 3u);
  for (const artifact::TargetSection& s : a.targets) {
    EXPECT_EQ(s.code.symbols, 1) << s.label();
    EXPECT_GT(s.code.marked(), 0) << s.label();
    EXPECT_FALSE(s.binaries.empty()) << s.label();
  }
  // Written and read back: the templates and binaries survive.
  auto back = artifact::read_file(path);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->targets.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(back->targets[i].code.axes, a.targets[i].code.axes);
    EXPECT_EQ(back->targets[i].binaries.size(), a.targets[i].binaries.size());
    EXPECT_EQ(back->targets[i].fusion, a.targets[i].fusion);
  }
  EXPECT_EQ(back->graph.symbols.names, (std::vector<std::string>{"batch"}));
}

TEST(AotSymbolic, ABatchReductionCompilesItsOwnKernelAndStaysExact) {
  KILN_AOT_REQUIRE_DEVICE();
  Example e{"colmean", [](const std::vector<Tensor>& in) { return std::vector<Tensor>{mean(in[0], {0}, true) + in[0]}; },
            {random_tensor({8, 16}, float32, 1)}, {{"x"}, {"y"}}, {{Dim("batch"), 16}}};
  std::string path = scratch_dir("colmean") + "/colmean.kiln";
  compile_to(e, default_device().name(), path);
  Model m = load(path);
  for (int64_t batch : {8, 5, 300}) {
    std::vector<Tensor> in{random_tensor({batch, 16}, float32, uint32_t(batch))};
    EXPECT_TRUE(MatchesInterpreter(e.fn(in), m(in))) << "batch " << batch;
  }
}

TEST(AotSymbolic, InputsThatDoNotFitTheSymbolsAreErrors) {
  KILN_AOT_REQUIRE_DEVICE();
  Example e{"pair", [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] + in[1]}; },
            {random_tensor({8, 4}, float32, 1), random_tensor({8, 4}, float32, 2)}, {{"a", "b"}, {"c"}},
            {{Dim("batch"), 4}, {Dim("batch"), 4}}};
  std::string path = scratch_dir("pair") + "/pair.kiln";
  compile_to(e, default_device().name(), path);
  Model m = load(path);
  std::string err = error_of([&] { m({random_tensor({6, 4}, float32, 1), random_tensor({7, 4}, float32, 2)}); });
  EXPECT_NE(err.find("input 'b' dim 0 binds batch to 7, but input 'a' dim 0 bound it to 6"), std::string::npos) << err;
  err = error_of([&] { m({random_tensor({6, 5}, float32, 1), random_tensor({6, 5}, float32, 2)}); });
  EXPECT_NE(err.find("input 'a' dim 1 is 5; the graph takes f32[batch,4]"), std::string::npos) << err;
  err = error_of([&] { m({random_tensor({6}, float32, 1), random_tensor({6, 4}, float32, 2)}); });
  EXPECT_NE(err.find("input 'a' has rank 1; the graph takes f32[batch,4]"), std::string::npos) << err;
}

TEST(AotSymbolic, FunctionsThatDoNotScaleAreRefusedAtExport) {
  Tensor x = random_tensor({8, 4}, float32, 1);
  // A dim of batch / 2 is no polynomial with integer coefficients.
  std::string err = error_of([&] {
    export_graph([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0].reshape({in[0].shape()[0] / 2, 8})}; }, {x}, {},
                 {{Dim("batch"), 4}});
  });
  EXPECT_NE(err.find("is not a polynomial with integer coefficients in the symbolic sizes"), std::string::npos) << err;
  // A branch on the size records another graph.
  err = error_of([&] {
    export_graph([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0].shape()[0] > 10 ? relu(in[0]) : in[0] * 2.0}; },
                 {x}, {}, {{Dim("batch"), 4}});
  });
  EXPECT_NE(err.find("records another graph at batch=16 than at batch=8"), std::string::npos) << err;
  // Declared dims must fit the examples.
  err = error_of([&] { export_graph([](const std::vector<Tensor>& in) { return in; }, {x}, {}, {{Dim("batch"), 5}}); });
  EXPECT_NE(err.find("dim 1 of input 0 is declared 5; its example has 4"), std::string::npos) << err;
}

}  // namespace
}  // namespace kiln::testing
