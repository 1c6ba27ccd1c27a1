// While and if nodes in the graph IR: the verifier's rules for their regions (each message names
// the region and the mismatch), the interpreter's trip limit, and the plan of a loop: carried
// values and everything the loop reads from before its head stay alive through the whole loop.
#include <gtest/gtest.h>

#include "absl/strings/str_replace.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/program.h"
#include "passes/pipeline.h"
#include "testing/control_graphs.h"

namespace kiln::ir {
namespace {

const char* const kLoop = testing::kDoublingLoop;

std::string error_of(const std::string& text) {
  auto g = parse(text);
  return g.ok() ? "parsed" : std::string(g.status().message());
}

TEST(ControlIr, TextRoundTripAndValues) {
  auto g = parse(kLoop);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(print(*g), kLoop);
  HostTensor x = HostTensor::make(DType::kFloat32, {4}), w = HostTensor::make(DType::kFloat32, {4});
  x.f = {1, 1, 1, 1};
  w.f = {0, 1, 0, 1};
  auto r = interpret(*g, {x, w});
  ASSERT_TRUE(r.ok()) << r.status();
  // [1,1,1,1] -> [2,3,2,3] (10) -> [4,7,4,7] (22) -> [8,15,8,15] (46) -> [16,31,16,31] (94) -> [32,63,32,63]
  EXPECT_EQ((*r)[0].f, (std::vector<double>{32, 63, 32, 63}));
}

TEST(ControlIr, TripLimitIsOutOfRange) {
  auto g = parse(absl::StrReplaceAll(kLoop, {{"max_trips=0", "max_trips=3"}}));
  ASSERT_TRUE(g.ok()) << g.status();
  HostTensor x = HostTensor::make(DType::kFloat32, {4}), w = HostTensor::make(DType::kFloat32, {4});
  x.f = {1, 1, 1, 1};
  w.f = {0, 0, 0, 0};
  auto r = interpret(*g, {x, w});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_NE(std::string(r.status().message()).find("maximum of 3 trips"), std::string::npos) << r.status();
}

TEST(ControlIr, RegionsMustMatchTheirNode) {
  // The body's output has another dtype than its carried value.
  EXPECT_NE(error_of(absl::StrReplaceAll(kLoop, {{"      output %4\n    }\n  %3", "      %5 = cast %4 : f16[4]\n      output %5\n    }\n  %3"}}))
                .find("region body output 0 is f16[4], its carried value f32[4]"),
            std::string::npos);
  // The condition is not a bool.
  EXPECT_NE(error_of(absl::StrReplaceAll(kLoop, {{"      output %5\n", "      output %3\n"}}))
                .find("region cond must have one output, a bool[]"),
            std::string::npos);
  // A region input of another shape than its operand.
  EXPECT_NE(error_of(absl::StrReplaceAll(kLoop, {{"    cond graph {\n      %0 = input 0 : f32[4]\n      %1 = input 1 : f32[4]",
                                                  "    cond graph {\n      %0 = input 0 : f32[4]\n      %1 = input 1 : f32[2,2]"}}))
                .find("region cond input 1 is f32[2,2], its operand f32[4]"),
            std::string::npos);
  // A result past the loop's values.
  EXPECT_NE(error_of(absl::StrReplaceAll(kLoop, {{"result %2 index=0", "result %2 index=1"}})).find("needs a result index in [0, 1)"),
            std::string::npos);
  // A result of something that is not a loop or branch.
  EXPECT_NE(error_of(absl::StrReplaceAll(kLoop, {{"result %2 index=0", "result %1 index=0"}})).find("not a while or if"),
            std::string::npos);
}

TEST(ControlIr, LoopReadsStayAliveThroughTheLoop) {
  auto g = parse(kLoop);
  ASSERT_TRUE(g.ok()) << g.status();
  TargetInfo cpu;
  cpu.name = "test";
  cpu.parallelism = 2;
  auto c = passes::compile_graph(*g, cpu, passes::Options{});
  ASSERT_TRUE(c.ok()) << c.status();
  const Program& p = c->program;
  const BlockLinks links = block_links(p.steps);
  size_t head = 0;
  while (p.steps[head].kind != StepKind::kWhile) ++head;
  const size_t end = size_t(links.end[head]);
  ASSERT_GT(end, head);
  // Every intermediate written before the head and read inside the loop shares no bytes with an
  // intermediate first written inside the loop.
  auto touches = [&](size_t s, int b, bool store) {
    if (!p.steps[s].is_kernel()) return p.steps[s].flag == b && !store;
    const Kernel& k = p.kernels[size_t(p.steps[s].kernel)];
    if (store) {
      for (const Store& st : k.stores)
        if (st.buffer == b) return true;
      return false;
    }
    for (const KNode& n : k.nodes)
      if (n.op == Op::kLoad && n.buffer == b) return true;
    return false;
  };
  for (size_t a = 0; a < p.buffers.size(); ++a) {
    if (p.buffers[a].kind != BufferKind::kIntermediate) continue;
    bool before = false, inside = false;
    for (size_t s = 0; s < head; ++s) before = before || touches(s, int(a), true);
    for (size_t s = head; s <= end; ++s) inside = inside || touches(s, int(a), false);
    if (!before || !inside) continue;
    for (size_t b = 0; b < p.buffers.size(); ++b) {
      if (b == a || p.buffers[b].kind != BufferKind::kIntermediate) continue;
      bool born_inside = false, before_b = false;
      for (size_t s = 0; s < head; ++s) before_b = before_b || touches(s, int(b), true) || touches(s, int(b), false);
      for (size_t s = head; s <= end; ++s) born_inside = born_inside || touches(s, int(b), true);
      if (born_inside && !before_b) {
        EXPECT_FALSE(share_bytes(p, int(a), int(b))) << "buffers " << a << " and " << b << "\n" << p.to_string();
      }
    }
  }
}

}  // namespace
}  // namespace kiln::ir
