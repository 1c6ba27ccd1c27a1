#include "testing/kernel_cases.h"

#include "bench/workloads.h"
#include "testing/reference.h"

namespace kiln::testing {

std::vector<KernelCase> kernel_cases() {
  Tensor x = random_tensor({64, 300}, float32, 1), y = random_tensor({64, 300}, float32, 2);
  Tensor w = random_tensor({300, 48}, float32, 3), b = random_tensor({48}, float32, 4);
  Tensor img = random_tensor({2, 3, 17, 19}, float32, 5), ker = random_tensor({8, 3, 3, 3}, float32, 6);
  Tensor idx = from_vector(std::vector<int64_t>{3, 0, 63, -1, 7}, {5});
  Tensor h = random_tensor({64, 128}, float16, 7), bf = random_tensor({64, 128}, bfloat16, 8);
  std::vector<KernelCase> c;
  c.push_back({"elementwise chain (W1-like)", {((x * 1.5 + y).tanh() - x.exp() * 0.25).sqrt()}});
  c.push_back({"W6 64-op chain", {bench::w6(random_tensor({4096}, float32, 9))}});
  c.push_back({"softmax rows", {softmax(x, -1)}});
  c.push_back({"layer norm", {layer_norm(x, random_tensor({300}, float32, 10), random_tensor({300}, float32, 11), 1e-5)}});
  c.push_back({"column and full reductions", {x.sum({0}), x.max({0, 1}), x.argmax(1)}});
  // Split, so that each pair is chained where the target chains (passes/chain_reduce.h): tickets,
  // fences, volatile partials.
  c.push_back({"split reductions, chained", {random_tensor({1 << 18}, float32, 15).sum(), random_tensor({16384, 64}, float32, 16).mean({0})}});
  c.push_back({"matmul + bias + gelu", {gelu(matmul(x, w) + b, false)}});
  c.push_back({"batched matmul", {matmul(random_tensor({4, 33, 20}, float32, 12), random_tensor({4, 20, 17}, float32, 13))}});
  c.push_back({"gather rows", {gather(x, 0, idx) * 2.0}});
  Tensor rows = expand(reshape(from_vector(std::vector<int64_t>{1, 5, 1}, {3, 1}), {3, 1}), {3, 300});
  c.push_back({"scatter add", {scatter(zeros({70, 300}), 0, rows, random_tensor({3, 300}, float32, 14), ScatterReduction::kAdd)}});
  ConvOptions co;
  co.padding = {{1, 1}, {1, 1}};
  c.push_back({"conv2d + relu", {relu(conv(img, ker, co))}});
  PoolOptions po;
  po.kernel = {2, 2};
  po.strides = {2, 2};
  c.push_back({"max pool", {max_pool(img, po)}});
  c.push_back({"f16 and bf16", {(h.cast(float32) * 3.0).cast(float16), (bf + bf).exp(), matmul(h, h.t())}});
  c.push_back({"int64 and bool", {(idx * 7 + 3).abs(), where(x > 0.0, x, y), (x > y).cast(int32).sum({1})}});
  return c;
}

}  // namespace kiln::testing
