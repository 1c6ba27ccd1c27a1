#include "replay/autotune.h"

#include <algorithm>
#include <cstring>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/half.h"
#include "runtime/disk_cache.h"
#include "runtime/stats.h"
#include "support/options.h"

namespace kiln::replay {
namespace {

constexpr int kTimedRuns = 4;  // after one warm-up run; each kernel's best counts

// A kernel being tuned: its candidates and each one's best time (infinity until measured).
struct Tuning {
  int kernel = 0;
  std::string key;  // the store's key: device, target and shape class
  std::vector<std::string> candidates;
  std::vector<double> us;
};

// The winners of this process, by store key (also when the disk cache is off).
std::mutex& memo_mu() {
  static std::mutex mu;
  return mu;
}
std::map<std::string, std::string>& memo() {
  static std::map<std::string, std::string> m;
  return m;
}

// A stored winner for `key` that is still among `candidates`.
std::optional<std::string> stored(const runtime::DiskCache& disk, const std::string& key,
                                  const std::vector<std::string>& candidates) {
  std::optional<std::string> config;
  {
    std::lock_guard<std::mutex> lock(memo_mu());
    auto it = memo().find(key);
    if (it != memo().end()) config = it->second;
  }
  if (!config && disk.enabled()) {
    if (std::optional<std::string> blob = disk.get(key)) config = blob->substr(0, blob->find('\n'));
  }
  if (config && std::find(candidates.begin(), candidates.end(), *config) != candidates.end()) return config;
  return std::nullopt;
}

// The bytes of a scratch input: floating-point values spread over [-1, 1) (a fixed sequence),
// every other dtype zero.
std::vector<char> scratch_values(const ir::BufferDesc& b) {
  const int64_t n = shape_numel(b.shape);
  std::vector<char> out(size_t(b.bytes()), 0);
  uint32_t state = 0x9e3779b9u;
  auto next = [&state] {
    state = state * 1664525u + 1013904223u;
    return float(state >> 8) / float(1 << 23) - 1.0f;
  };
  for (int64_t i = 0; i < n; ++i) {
    char* at = out.data() + i * dtype_size(b.dtype);
    switch (b.dtype) {
      case DType::kFloat32: {
        const float v = next();
        std::memcpy(at, &v, 4);
        break;
      }
      case DType::kFloat64: {
        const double v = next();
        std::memcpy(at, &v, 8);
        break;
      }
      case DType::kFloat16: {
        const uint16_t v = ir::float_to_half(next());
        std::memcpy(at, &v, 2);
        break;
      }
      case DType::kBFloat16: {
        const uint16_t v = ir::float_to_bf16(next());
        std::memcpy(at, &v, 2);
        break;
      }
      default: return out;  // integers, booleans: zeros
    }
  }
  return out;
}

// Scratch bindings for the timing runs, made once for every round (the memory plan does not
// depend on the variants). Inputs hold values like real data's (the tensor cores draw less power,
// so run faster, on zeros: measured 20% on an H200), integers and booleans zero (an index read
// from them is always in range); outputs are only written.
struct Scratch {
  std::vector<std::shared_ptr<runtime::Buffer>> held;
  std::vector<runtime::Buffer*> inputs, outputs;
};

absl::Status make_scratch(const ir::Program& p, runtime::Device* device, Scratch* s) {
  for (const ir::BufferDesc& b : p.buffers) {
    if (b.kind == ir::BufferKind::kIntermediate) continue;
    std::vector<runtime::Buffer*>& side = b.kind == ir::BufferKind::kInput ? s->inputs : s->outputs;
    if (side.size() <= size_t(b.index)) side.resize(size_t(b.index) + 1, nullptr);
    auto buf = device->alloc(std::max<int64_t>(b.bytes(), 1));
    if (!buf.ok()) return buf.status();
    if (b.kind == ir::BufferKind::kInput) {
      const std::vector<char> data = scratch_values(b);
      if (absl::Status st = device->upload(buf->get(), data.data(), b.bytes()); !st.ok()) return st;
    }
    side[size_t(b.index)] = buf->get();
    s->held.push_back(*std::move(buf));
  }
  return absl::OkStatus();
}

// One round: `p` compiled with each tuned kernel on its candidate `round` (or its last), loaded,
// and timed over `scratch`; each kernel's time goes to that candidate.
absl::Status time_round(const ir::Program& p, int round, std::vector<Tuning>* tunings, const runtime::Compiler& compiler,
                        runtime::Device* device, const Scratch& scratch) {
  ir::Program q = p;
  std::vector<size_t> pick(tunings->size());
  for (size_t t = 0; t < tunings->size(); ++t) {
    Tuning& tu = (*tunings)[t];
    pick[t] = std::min(size_t(round), tu.candidates.size() - 1);
    q.kernels[size_t(tu.kernel)].config = tu.candidates[pick[t]];
  }
  auto compiled = compiler.compile(q);
  if (!compiled.ok()) return compiled.status();
  auto exe = device->load(*compiled);
  if (!exe.ok()) return exe.status();
  const runtime::ParamValues params(compiled->params.size(), 0);
  std::vector<double> best(q.kernels.size(), std::numeric_limits<double>::infinity());
  for (int run = 0; run <= kTimedRuns; ++run) {
    auto us = (*exe)->kernel_times(scratch.inputs, scratch.outputs, params);
    if (!us.ok()) return us.status();
    if (run == 0) continue;  // warm-up: first-launch costs
    for (size_t k = 0; k < best.size() && k < us->size(); ++k)
      if ((*us)[k] > 0) best[k] = std::min(best[k], (*us)[k]);
  }
  for (size_t t = 0; t < tunings->size(); ++t) {
    Tuning& tu = (*tunings)[t];
    tu.us[pick[t]] = std::min(tu.us[pick[t]], best[size_t(tu.kernel)]);
  }
  return absl::OkStatus();
}

}  // namespace

void autotune(ir::Program* p, const runtime::Compiler& compiler, runtime::Device* device) {
  const runtime::DiskCache disk = runtime::DiskCache::for_backend("autotune");
  const bool debug = support::debug_level() >= 1;
  std::vector<Tuning> tunings;
  for (size_t k = 0; k < p->kernels.size(); ++k) {
    std::string shape_class;
    std::vector<std::string> candidates = compiler.tuning_candidates(*p, int(k), &shape_class);
    if (candidates.size() < 2) continue;
    Tuning tu;
    tu.kernel = int(k);
    tu.key = absl::StrCat("autotune v1|", device->description(), "|", compiler.target_key(), "|", shape_class);
    if (std::optional<std::string> config = stored(disk, tu.key, candidates)) {
      p->kernels[k].config = *config;
      runtime::counters().autotune_cache_hits++;
      continue;
    }
    tu.candidates = std::move(candidates);
    tu.us.assign(tu.candidates.size(), std::numeric_limits<double>::infinity());
    tunings.push_back(std::move(tu));
  }
  if (tunings.empty()) return;
  size_t rounds = 0;
  for (const Tuning& tu : tunings) rounds = std::max(rounds, tu.candidates.size());
  Scratch scratch;
  if (absl::Status s = make_scratch(*p, device, &scratch); !s.ok()) {
    if (debug) std::fprintf(stderr, "kiln: autotune: no scratch bindings (%s); the heuristics decide\n",
                            std::string(s.message()).c_str());
    return;
  }
  for (size_t r = 0; r < rounds; ++r) {
    absl::Status s = time_round(*p, int(r), &tunings, compiler, device, scratch);
    if (absl::IsUnimplemented(s)) {
      if (debug) std::fprintf(stderr, "kiln: autotune: %s; the heuristics decide\n", std::string(s.message()).c_str());
      return;
    }
    if (!s.ok() && debug) std::fprintf(stderr, "kiln: autotune: round %zu skipped: %s\n", r, std::string(s.message()).c_str());
  }
  for (const Tuning& tu : tunings) {
    const size_t best = size_t(std::min_element(tu.us.begin(), tu.us.end()) - tu.us.begin());
    ir::Kernel& k = p->kernels[size_t(tu.kernel)];
    if (tu.us[best] == std::numeric_limits<double>::infinity()) {
      if (debug) std::fprintf(stderr, "kiln: autotune %s: no variant ran; the heuristic decides\n", k.name.c_str());
      continue;
    }
    k.config = tu.candidates[best];
    runtime::counters().kernels_autotuned++;
    std::string table;
    for (size_t c = 0; c < tu.candidates.size(); ++c)
      absl::StrAppend(&table, tu.candidates[c], "\t", tu.us[c], " us\n");
    {
      std::lock_guard<std::mutex> lock(memo_mu());
      memo()[tu.key] = k.config;
    }
    if (disk.enabled()) disk.put(tu.key, absl::StrCat(k.config, "\n", table));
    if (debug)
      std::fprintf(stderr, "kiln: autotune %s (%s): chose \"%s\", %.2f us (the heuristic's \"%s\": %.2f us)\n%s",
                   k.name.c_str(), tu.key.c_str(), k.config.c_str(), tu.us[best], tu.candidates[0].c_str(), tu.us[0],
                   table.c_str());
  }
}

}  // namespace kiln::replay
