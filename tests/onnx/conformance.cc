// The ONNX backend node tests (libonnx-testdata's node/ folder) through kiln::onnx on one device.
// Each test case is a model.onnx and test_data_set_*/{input,output}_*.pb; a case is
//   PASS         every data set's outputs match within ONNX's tolerances (rtol 1e-3, atol 1e-7,
//                same dtype and shape, NaN where the reference has NaN), on the first call (traced
//                and compiled) and on a second one (replayed),
//   UNSUPPORTED  the importer refused it with an Unimplemented error (op, attribute, dtype,
//                opset), before running anything,
//   FAILURE      anything else: a wrong value, a wrong shape or dtype, any other error.
// The run fails when there is one FAILURE; it prints every failure, a summary, and writes the
// unsupported cases grouped by op (with the reason) to --report.
//
//   onnx_conformance --data DIR --device cpu [--shard K/N] [--only NAME] [--report FILE] [--verbose]
//                    [--require-all]   (an unsupported case, or none at all, fails the run too)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "frontend/onnx/tensor_proto.h"
#include "kiln/kiln.h"
#include "kiln/onnx.h"
#include "kiln_onnx.pb.h"

namespace fs = std::filesystem;
using namespace kiln;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// `declared`: the model's dtype for this value. ONNX's test generator stores bfloat16 data as
// uint16 words (NumPy has no bfloat16): such a file is read as the bfloat16 values it holds.
onnx::HostTensor read_pb(const fs::path& p, DType declared) {
  kiln::onnx_proto::TensorProto t;
  if (!t.ParseFromString(slurp(p))) throw Error(absl::InvalidArgumentError(absl::StrCat(p.string(), ": not a TensorProto")));
  if (declared == DType::kBFloat16 && t.data_type() == kiln::onnx_proto::TensorProto::UINT16)
    t.set_data_type(kiln::onnx_proto::TensorProto::BFLOAT16);
  auto h = onnx::from_tensor_proto(t, p.filename().string());
  throw_if_error(h.status());
  return *std::move(h);
}

Tensor upload(const onnx::HostTensor& h, const Device& dev) {
  int64_t n = h.numel();
  switch (h.dtype) {
    case DType::kFloat32: return from_vector(std::vector<float>(reinterpret_cast<const float*>(h.bytes.data()), reinterpret_cast<const float*>(h.bytes.data()) + n), h.shape, dev);
    case DType::kFloat64: return from_vector(std::vector<double>(reinterpret_cast<const double*>(h.bytes.data()), reinterpret_cast<const double*>(h.bytes.data()) + n), h.shape, dev);
    case DType::kInt32: return from_vector(std::vector<int32_t>(reinterpret_cast<const int32_t*>(h.bytes.data()), reinterpret_cast<const int32_t*>(h.bytes.data()) + n), h.shape, dev);
    case DType::kInt64: return from_vector(std::vector<int64_t>(reinterpret_cast<const int64_t*>(h.bytes.data()), reinterpret_cast<const int64_t*>(h.bytes.data()) + n), h.shape, dev);
    case DType::kInt8: return from_vector(std::vector<int8_t>(h.bytes.begin(), h.bytes.end()), h.shape, dev);
    case DType::kUInt8: return from_vector(std::vector<uint8_t>(h.bytes.begin(), h.bytes.end()), h.shape, dev);
    case DType::kInt16: return from_vector(std::vector<int16_t>(reinterpret_cast<const int16_t*>(h.bytes.data()), reinterpret_cast<const int16_t*>(h.bytes.data()) + n), h.shape, dev);
    case DType::kUInt16: return from_vector(std::vector<uint16_t>(reinterpret_cast<const uint16_t*>(h.bytes.data()), reinterpret_cast<const uint16_t*>(h.bytes.data()) + n), h.shape, dev);
    case DType::kUInt32: return from_vector(std::vector<uint32_t>(reinterpret_cast<const uint32_t*>(h.bytes.data()), reinterpret_cast<const uint32_t*>(h.bytes.data()) + n), h.shape, dev);
    case DType::kBool: return from_vector(std::vector<uint8_t>(h.bytes.begin(), h.bytes.end()), h.shape, DType::kBool, dev);
    case DType::kFloat16:
    case DType::kBFloat16: {
      std::vector<float> v(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) v[size_t(i)] = float(h.double_at(i));
      return from_vector(v, h.shape, h.dtype, dev);
    }
  }
  return {};
}

// "" when `got` matches `want` within ONNX's backend tolerances, else what differs.
std::string compare(const Tensor& got, const onnx::HostTensor& want, const std::string& name) {
  if (got.dtype() != want.dtype || got.shape() != want.shape)
    return absl::StrCat(name, ": got ", dtype_name(got.dtype()), shape_str(got.shape()), ", expected ", dtype_name(want.dtype), shape_str(want.shape));
  const double rtol = 1e-3, atol = 1e-7;
  int64_t bad = 0, first = -1;
  double worst = 0;
  if (is_float(want.dtype)) {
    std::vector<double> g = got.to_vector<double>();
    for (int64_t i = 0; i < want.numel(); ++i) {
      double w = want.double_at(i), x = g[size_t(i)];
      bool ok = std::isnan(w) ? std::isnan(x) : std::isinf(w) ? x == w : std::fabs(x - w) <= atol + rtol * std::fabs(w);
      if (!ok) {
        if (first < 0) first = i;
        ++bad;
        if (!std::isnan(x - w)) worst = std::max(worst, std::fabs(x - w));
      }
    }
    if (bad)
      return absl::StrCat(name, ": ", bad, " of ", want.numel(), " values differ (first at ", first, ": got ", g[size_t(first)],
                          ", expected ", want.double_at(first), "; largest difference ", worst, ")");
  } else {
    std::vector<int64_t> g = got.to_vector<int64_t>();
    for (int64_t i = 0; i < want.numel(); ++i)
      if (g[size_t(i)] != want.int_at(i)) {
        if (first < 0) first = i;
        ++bad;
      }
    if (bad)
      return absl::StrCat(name, ": ", bad, " of ", want.numel(), " values differ (first at ", first, ": got ", g[size_t(first)],
                          ", expected ", want.int_at(first), ")");
  }
  return "";
}

// The op type an error names ("node 'x' (Conv): ..." -> Conv), else a short key of the message.
std::string op_of(const std::string& message) {
  if (message.find("(disputed test data)") != std::string::npos) return "(disputed test data)";
  size_t n = message.find("node ");
  if (n != std::string::npos) {
    size_t open = message.find('(', n), close = message.find(')', n);
    if (open != std::string::npos && close != std::string::npos && close > open) return message.substr(open + 1, close - open - 1);
  }
  if (message.find("opset") != std::string::npos) return "(opset)";
  if (size_t d = message.find("domain '"); d != std::string::npos) return absl::StrCat("(domain ", message.substr(d + 8, message.find('\'', d + 8) - d - 8), ")");
  for (const char* kind : {"a sequence", "an optional", "a map", "a sparse tensor"})
    if (message.find(absl::StrCat(" is ", kind, ";")) != std::string::npos) return absl::StrCat("(", kind, " input or output)");
  if (message.find("element type") != std::string::npos) return "(dtype of an input or output)";
  return "(model)";
}

// The message without the file name in front.
std::string reason_of(const std::string& message) {
  size_t at = message.find(".onnx: ");
  return at == std::string::npos ? message : message.substr(at + 7);
}

enum class Outcome { kPass, kUnsupported, kFailure };

// Cases whose data (Debian's libonnx-testdata, ONNX 1.12) contradicts the ONNX specification as
// kiln reads it: run like any other, but a mismatch counts as unsupported with this reason, not
// as a failure. Each entry was checked by hand against the .pb files.
const std::map<std::string, std::string>& disputed_cases() {
  static const auto* cases = [] {
    const std::string trunc =
        "the expected bfloat16 values are truncated float32 values; kiln rounds to the nearest even, as the ONNX "
        "reference and later ONNX test data do";
    const std::string like = "the test data's 'like' input is [1] where the model declares [3,4]";
    return new std::map<std::string, std::string>{
        {"test_cast_FLOAT_to_BFLOAT16", trunc},
        {"test_castlike_FLOAT_to_BFLOAT16", like + "; and " + trunc},
        {"test_castlike_FLOAT_to_BFLOAT16_expanded", like + "; and " + trunc},
        {"test_castlike_BFLOAT16_to_FLOAT", like},
        {"test_castlike_BFLOAT16_to_FLOAT_expanded", like},
    };
  }();
  return *cases;
}

Outcome run_case(const fs::path& dir, const Device& dev, std::string* detail) {
  onnx::Model model;
  try {
    model = onnx::load((dir / "model.onnx").string(), dev);
  } catch (const Error& e) {
    *detail = e.what();
    return e.status().code() == absl::StatusCode::kUnimplemented ? Outcome::kUnsupported : Outcome::kFailure;
  }
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) {
    *detail = "no test_data_set_* folder";
    return Outcome::kFailure;
  }
  for (const fs::path& set : sets) {
    std::vector<Tensor> inputs;
    std::vector<onnx::HostTensor> expected;
    try {
      auto declared = [](const std::vector<onnx::ValueSpec>& specs, size_t i) {
        return i < specs.size() ? specs[i].dtype : DType::kFloat32;
      };
      for (size_t i = 0; fs::exists(set / absl::StrCat("input_", i, ".pb")); ++i)
        inputs.push_back(upload(read_pb(set / absl::StrCat("input_", i, ".pb"), declared(model.inputs(), i)), dev));
      for (size_t i = 0; fs::exists(set / absl::StrCat("output_", i, ".pb")); ++i)
        expected.push_back(read_pb(set / absl::StrCat("output_", i, ".pb"), declared(model.outputs(), i)));
    } catch (const Error& e) {
      // Test data kiln cannot even hold (an input of a type kiln lacks).
      *detail = e.what();
      return e.status().code() == absl::StatusCode::kUnimplemented ? Outcome::kUnsupported : Outcome::kFailure;
    }
    // Twice: the first call traces and compiles, the second replays the compiled graph.
    for (const char* call : {"", " (replayed)"}) {
      std::vector<Tensor> outs;
      try {
        outs = model(inputs);
      } catch (const Error& e) {
        *detail = absl::StrCat(set.filename().string(), call, ": ", e.what());
        return e.status().code() == absl::StatusCode::kUnimplemented ? Outcome::kUnsupported : Outcome::kFailure;
      }
      if (outs.size() != expected.size()) {
        *detail = absl::StrCat(set.filename().string(), ": ", outs.size(), " outputs, expected ", expected.size());
        return Outcome::kFailure;
      }
      for (size_t k = 0; k < outs.size(); ++k) {
        std::string diff = compare(outs[k], expected[k], absl::StrCat(set.filename().string(), call, " output ", k, " '", model.outputs()[k].name, "'"));
        if (!diff.empty()) {
          *detail = diff;
          return Outcome::kFailure;
        }
      }
    }
  }
  return Outcome::kPass;
}

}  // namespace

int main(int argc, char** argv) {
  std::string data, device = "cpu", only, report;
  int shard = 0, shards = 1;
  bool verbose = false, require_all = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--data") data = next();
    else if (a == "--device") device = next();
    else if (a == "--only") only = next();
    else if (a == "--report") report = next();
    else if (a == "--verbose") verbose = true;
    else if (a == "--require-all") require_all = true;
    else if (a == "--shard") {
      std::string s = next();
      if (std::sscanf(s.c_str(), "%d/%d", &shard, &shards) != 2 || shards < 1 || shard < 0 || shard >= shards) {
        std::fprintf(stderr, "--shard K/N with 0 <= K < N\n");
        return 2;
      }
    } else {
      std::fprintf(stderr, "usage: onnx_conformance --data DIR --device NAME [--shard K/N] [--only NAME] [--report FILE] [--verbose] "
                           "[--require-all]\n");
      return 2;
    }
  }
  if (data.empty() || !fs::is_directory(data)) {
    std::printf("[  SKIPPED ] no ONNX node tests at '%s' (Debian: libonnx-testdata)\n", data.c_str());
    return 77;
  }
  auto dev = Device::get(device);
  if (!dev.ok()) {
    std::printf("[  SKIPPED ] device %s is not available here: %s\n", device.c_str(), std::string(dev.status().message()).c_str());
    return 77;
  }
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(data))
    if (fs::exists(e.path() / "model.onnx")) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  int pass = 0, unsupported = 0, failure = 0;
  std::map<std::string, std::pair<int, std::string>> by_op;  // op -> (cases, one reason)
  std::vector<std::string> failures;
  for (size_t k = 0; k < names.size(); ++k) {
    if (!only.empty() ? names[k] != only : int(k % size_t(shards)) != shard) continue;
    std::string detail;
    Outcome o;
    try {
      o = run_case(fs::path(data) / names[k], *dev, &detail);
    } catch (const std::exception& e) {
      o = Outcome::kFailure;
      detail = absl::StrCat("exception: ", e.what());
    }
    if (auto d = disputed_cases().find(names[k]); d != disputed_cases().end() && o == Outcome::kFailure) {
      o = Outcome::kUnsupported;
      detail = absl::StrCat(names[k], ".onnx: (disputed test data) ", d->second, " [", detail, "]");
    }
    if (o == Outcome::kPass) ++pass;
    if (o == Outcome::kUnsupported) {
      ++unsupported;
      auto& slot = by_op[op_of(detail)];
      if (slot.first++ == 0) slot.second = reason_of(detail);
    }
    if (o == Outcome::kFailure) {
      ++failure;
      failures.push_back(absl::StrCat(names[k], ": ", detail));
    }
    if (verbose || o == Outcome::kFailure)
      std::printf("%-11s %s%s%s\n", o == Outcome::kPass ? "PASS" : o == Outcome::kUnsupported ? "UNSUPPORTED" : "FAILURE", names[k].c_str(),
                  detail.empty() ? "" : ": ", detail.c_str());
    std::fflush(stdout);
  }
  int total = pass + unsupported + failure;
  if (!report.empty()) {
    std::ofstream r(report);
    r << "| op | unsupported cases | reason (first case) |\n| --- | --- | --- |\n";
    std::vector<std::pair<std::string, std::pair<int, std::string>>> rows(by_op.begin(), by_op.end());
    std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
    for (const auto& [op, v] : rows) {
      std::string reason = v.second;
      std::replace(reason.begin(), reason.end(), '|', '/');
      r << "| " << op << " | " << v.first << " | " << reason << " |\n";
    }
  }
  std::printf("onnx node tests on %s%s: %d pass, %d unsupported, %d failures of %d (%.1f%% passing)\n", device.c_str(),
              shards > 1 ? absl::StrCat(" (shard ", shard, "/", shards, ")").c_str() : "", pass, unsupported, failure, total,
              total ? 100.0 * pass / total : 0.0);
  for (const std::string& f : failures) std::printf("FAILURE %s\n", f.c_str());
  if (require_all && (unsupported || total == 0)) {
    std::printf("--require-all: every case must run (%d unsupported of %d)\n", unsupported, total);
    return 1;
  }
  return failure ? 1 : 0;
}
