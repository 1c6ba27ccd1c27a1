// kiln_fuzz: differential fuzzing of kiln's backends against the reference interpreter.
//
//   kiln_fuzz [--seed S] [--count N] [--device NAME|all] [--index I] [--ir FILE] ...
//
// Generates N random graphs from seed S (time-based unless given; printed first), runs each on
// the device(s) and compares every output with the interpreter. A failing graph is printed
// with its seed, the program that built it, its IR text and a minimized graph that still
// fails. `--seed S --index I` re-runs one graph of a run; `--ir FILE` checks a graph given as IR
// text (with random inputs). Exit status: 0 all passed, 1 failures, 2 usage, 77 device missing
// (with --skip-unavailable).
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "fuzz/differential.h"
#include "ir/graph.h"
#include "kiln/kiln.h"
#include "runtime/device.h"
#include "runtime/registry.h"

namespace {

using namespace kiln;

// What is being checked right now, for the crash handler (a fixed buffer: the handler may only
// call async-signal-safe functions).
char g_current[16384];
size_t g_current_len = 0;

void remember(const std::string& what) {
  g_current_len = std::min(what.size(), sizeof g_current);
  std::memcpy(g_current, what.data(), g_current_len);
}

void on_crash(int sig) {
  const char head[] = "\nkiln_fuzz: CRASH (signal) while checking ";
  ssize_t ignored = write(2, head, sizeof head - 1);
  ignored = write(2, g_current, g_current_len);
  (void)ignored;
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

int usage() {
  std::fprintf(stderr,
               "usage: kiln_fuzz [--seed S] [--count N] [--device NAME|all] [--index I] [--ir FILE]\n"
               "                 [--max-ops N] [--max-numel N] [--special-percent P] [--no-minimize]\n"
               "                 [--max-failures N] [--skip-unavailable] [--verbose] [--dump-ir DIR]\n");
  return 2;
}

uint64_t time_seed() {
  uint64_t t = uint64_t(std::chrono::system_clock::now().time_since_epoch().count());
  return (t ^ (uint64_t(getpid()) << 32)) % 1000000000000ull;  // short enough to type
}

}  // namespace

int main(int argc, char** argv) {
  fuzz::FuzzOptions opts;
  bool have_seed = false, skip_unavailable = false;
  std::string device = "all", ir_file;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "kiln_fuzz: %s needs a value\n", a.c_str());
        std::exit(usage());
      }
      return argv[++i];
    };
    if (a == "--seed") opts.seed = std::strtoull(value(), nullptr, 10), have_seed = true;
    else if (a == "--count") opts.count = std::atoll(value());
    else if (a == "--index") opts.only_index = std::atoll(value());
    else if (a == "--device") device = value();
    else if (a == "--ir") ir_file = value();
    else if (a == "--max-ops") opts.gen.max_ops = std::atoi(value()), opts.gen.min_ops = std::min(opts.gen.min_ops, opts.gen.max_ops);
    else if (a == "--max-numel") opts.gen.max_numel = std::atoll(value());
    else if (a == "--special-percent") opts.gen.special_percent = std::atoi(value());
    else if (a == "--max-failures") opts.max_failures = std::atoi(value());
    else if (a == "--no-minimize") opts.minimize = false;
    else if (a == "--skip-unavailable") skip_unavailable = true;
    else if (a == "--verbose") opts.verbose = true;
    else if (a == "--dump-ir") opts.dump_dir = value();
    else return usage();
  }
  if (!have_seed) {
    if (const char* s = std::getenv("KILN_FUZZ_SEED"); s && *s) opts.seed = std::strtoull(s, nullptr, 10);
    else opts.seed = time_seed();
  }

  std::vector<std::string> devices;
  if (device == "all") {
    devices = available_devices();
  } else {
    auto d = runtime::get_device(device);
    if (!d.ok()) {
      std::printf("kiln_fuzz: device %s is not available: %s\n", device.c_str(), std::string(d.status().message()).c_str());
      return skip_unavailable ? 77 : 1;
    }
    devices = {device};
  }
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) std::signal(sig, on_crash);
  opts.on_case = remember;

  if (!ir_file.empty()) {
    std::ifstream f(ir_file);
    std::stringstream ss;
    ss << f.rdbuf();
    auto g = ir::parse(ss.str());
    if (!f || !g.ok()) {
      std::fprintf(stderr, "kiln_fuzz: cannot read %s: %s\n", ir_file.c_str(),
                   f ? std::string(g.status().message()).c_str() : "cannot open");
      return 2;
    }
    fuzz::Case c;
    c.graph = *g;
    std::mt19937_64 rng(opts.seed);
    for (ir::NodeId n : c.graph.input_nodes())
      c.inputs.push_back(fuzz::random_host(c.graph.node(n).dtype, c.graph.node(n).shape, rng));
    int failures = 0;
    for (const std::string& name : devices) {
      runtime::Device* dev = *runtime::get_device(name);
      auto prec = fuzz::DevicePrecision::for_device(name);
      remember(absl::StrCat(ir_file, " on ", name, "\n", ir::print(c.graph)));
      fuzz::CheckResult r = fuzz::check_case(c, fuzz::device_runner(dev), prec);
      std::printf("%s on %s: %s\n%s", ir_file.c_str(), name.c_str(), fuzz::outcome_name(r.outcome), r.detail.c_str());
      if (r.outcome == fuzz::Outcome::kPass) continue;
      ++failures;
      std::printf("%s\n", fuzz::describe_case(c).c_str());
      if (opts.minimize && r.outcome != fuzz::Outcome::kHarnessError) {
        std::string log;
        fuzz::Case small = fuzz::minimize(c, r.outcome, fuzz::device_runner(dev), prec, opts.min, &log);
        std::printf("reduced graph:\n%s%s\n%s\n", log.c_str(), fuzz::describe_case(small).c_str(),
                    fuzz::check_case(small, fuzz::device_runner(dev), prec).detail.c_str());
      }
    }
    return failures ? 1 : 0;
  }

  std::printf("kiln_fuzz: seed %llu, %lld graph(s) per device, devices: %s\n", (unsigned long long)opts.seed,
              (long long)(opts.only_index >= 0 ? 1 : opts.count), absl::StrJoin(devices, ", ").c_str());
  std::fflush(stdout);
  int64_t failures = 0;
  for (const std::string& name : devices) {
    runtime::Device* dev = *runtime::get_device(name);
    std::printf("kiln_fuzz: %s (%s); reproduce with: kiln_fuzz --seed %llu --count %lld --device %s\n", name.c_str(),
                dev->description().c_str(), (unsigned long long)opts.seed, (long long)opts.count, name.c_str());
    std::fflush(stdout);
    fuzz::FuzzStats st = fuzz::run_fuzz(dev, opts, stdout);
    failures += st.failures;
    std::printf(
        "kiln_fuzz: %s: %lld graphs (%lld nodes), %lld failing, %lld outputs compared (%lld without an error "
        "bound), closest call %.3g of the allowed error, %.1f s\n",
        name.c_str(), (long long)st.graphs, (long long)st.nodes, (long long)st.failures, (long long)st.outputs_checked,
        (long long)st.outputs_unbounded, st.worst_ratio, st.seconds);
    std::fflush(stdout);
  }
  if (devices.empty()) std::printf("kiln_fuzz: no device available\n");
  return failures ? 1 : 0;
}
