// Writing and reading the .kiln layout of artifact.h.
#include "artifact/artifact.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "runtime/disk_cache.h"
#include "support/bytes.h"

namespace kiln::artifact {
namespace {

constexpr char kMagic[8] = {'\x89', 'K', 'I', 'L', 'N', '\r', '\n', '\x1a'};
constexpr char kWeightsMagic[8] = {'\x89', 'K', 'I', 'L', 'N', 'W', 'T', '\n'};
enum ConstantStorage : uint32_t { kInArtifact = 0, kWeightsFile = 1 };
enum SectionKind : uint32_t { kSignature = 1, kConstants = 2, kTarget = 3 };

using support::ByteReader;
using support::ByteWriter;

absl::Status bad(const std::string& m) { return absl::InvalidArgumentError(absl::StrCat("kiln artifact: ", m)); }

void put_section(ByteWriter& out, SectionKind kind, std::string_view name, std::string_view payload) {
  out.u32(kind);
  out.str(name);
  out.u64(payload.size());
  out.u64(runtime::stable_hash64(payload));
  out.raw(payload);
}

void write_symbolic(ByteWriter& out, const TargetSection& t) {
  out.u32(t.fusion);
  out.u32(uint32_t(t.code.symbols));
  out.u64(t.code.axes.size());
  for (const auto& k : t.code.axes) {
    out.u64(k.size());
    for (const auto& [s, c] : k) {
      out.u32(uint32_t(s));
      out.u64(uint64_t(c));
    }
  }
  out.u64(t.binaries.size());
  for (const auto& [hash, b] : t.binaries) {
    out.u64(hash);
    out.u64(b.size);
    out.str(b.blob);
  }
}

absl::Status read_symbolic(ByteReader& in, const ir::SymbolicDims& symbols, TargetSection* t) {
  t->fusion = in.num<uint32_t>() != 0;
  t->code.symbols = int(in.num<uint32_t>());
  if (t->code.symbols != int(symbols.names.size()))
    return absl::InvalidArgumentError(absl::StrCat("its template has ", t->code.symbols, " symbols; the graph ", symbols.names.size()));
  t->code.axes.resize(in.count(4));
  for (auto& k : t->code.axes) {
    const uint64_t axes = in.count(12);
    for (uint64_t a = 0; a < axes; ++a) {
      const int s = int(int32_t(in.num<uint32_t>()));
      const int64_t c = int64_t(in.num<uint64_t>());
      if (s < -1 || s >= t->code.symbols || (s >= 0 && c <= 0)) return absl::InvalidArgumentError("its template names no symbol");
      k.push_back({s, c});
    }
  }
  const uint64_t n = in.count(24);
  for (uint64_t i = 0; i < n && in.error().empty(); ++i) {
    const uint64_t hash = in.num<uint64_t>(), size = in.num<uint64_t>();
    std::string blob = in.str();
    t->binaries[hash] = {size, std::move(blob)};
  }
  return absl::OkStatus();
}

}  // namespace

std::string kiln_version() { return KILN_VERSION; }

std::string constant_bytes(const Artifact& a) {
  std::string constants;
  for (const ir::ConstantData& c : a.graph.constants) constants += c.bytes;
  return constants;
}

std::string write_weights(const Artifact& a) {
  std::string data = constant_bytes(a);
  ByteWriter w;
  w.raw(std::string_view(kWeightsMagic, sizeof kWeightsMagic));
  w.u64(data.size());
  w.u64(runtime::stable_hash64(data));
  w.raw(data);
  return w.take();
}

std::string write(Artifact& a) {
  ByteWriter out;
  out.raw(std::string_view(kMagic, sizeof kMagic));
  out.u32(a.format_version);
  out.str(a.kiln_version);
  out.u32(uint32_t(2 + a.targets.size()));
  out.u64(runtime::stable_hash64(out.bytes()));
  std::string sig = ir::print(a.graph, /*with_data=*/false);
  a.signature_bytes = sig.size();
  put_section(out, kSignature, "signature", sig);
  std::string data = constant_bytes(a);
  ByteWriter constants;
  if (a.weights_file.empty()) {
    constants.u32(kInArtifact);
    constants.raw(data);
  } else {
    constants.u32(kWeightsFile);
    constants.str(a.weights_file);
    constants.u64(data.size());
    constants.u64(runtime::stable_hash64(data));
  }
  a.constants_bytes = data.size();
  put_section(out, kConstants, "constants", constants.bytes());
  for (TargetSection& t : a.targets) {
    ByteWriter payload;
    payload.str(t.backend);
    payload.str(t.profile);
    payload.str(t.target_key);
    payload.str(runtime::serialize(t.program));
    if (!a.graph.symbols.empty()) write_symbolic(payload, t);
    t.bytes = payload.bytes().size();
    put_section(out, kTarget, t.label(), payload.bytes());
  }
  return out.take();
}

absl::StatusOr<Artifact> read(std::string_view bytes, const std::string* weights) {
  Artifact a;
  if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    return bad("not a .kiln file (no KILN magic at its start)");
  ByteReader c(bytes, "the file");
  c.bytes(sizeof kMagic);
  a.format_version = c.num<uint32_t>();
  a.kiln_version = c.str();
  uint32_t sections = c.num<uint32_t>();
  size_t header_end = c.pos();
  uint64_t header_sum = c.num<uint64_t>();
  if (!c.error().empty()) return bad(c.error());
  if (a.format_version != kFormatVersion)
    return bad(absl::StrCat("format version ", a.format_version, " (written by kiln ", a.kiln_version, "); this kiln (",
                            kiln_version(), ") reads version ", kFormatVersion, ": compile the model again with this kilnc"));
  if (header_sum != runtime::stable_hash64(bytes.substr(0, header_end))) return bad("the header's checksum does not match (corrupted)");
  if (sections < 2) return bad(absl::StrCat(sections, " sections; an artifact has a signature and constants section"));
  std::string_view constants;
  for (uint32_t s = 0; s < sections; ++s) {
    uint32_t kind = c.num<uint32_t>();
    std::string name = c.str();
    uint64_t length = c.num<uint64_t>();
    uint64_t sum = c.num<uint64_t>();
    std::string_view payload = c.bytes(length);
    if (!c.error().empty()) return bad(absl::StrCat(c.error(), " in section ", s, name.empty() ? "" : absl::StrCat(" (", name, ")")));
    if (runtime::stable_hash64(payload) != sum) return bad(absl::StrCat("section '", name, "' is corrupted (its checksum does not match)"));
    const SectionKind want = s == 0 ? kSignature : s == 1 ? kConstants : kTarget;
    if (kind != want) return bad(absl::StrCat("section ", s, " ('", name, "') has kind ", kind, ", expected ", int(want)));
    if (kind == kSignature) {
      auto g = ir::parse_exported(std::string(payload), /*need_data=*/false);
      if (!g.ok()) return bad(absl::StrCat("the signature section does not parse: ", g.status().message()));
      a.graph = *std::move(g);
      a.signature_bytes = payload.size();
    } else if (kind == kConstants) {
      ByteReader k(payload, "the constants section");
      const uint32_t storage = k.num<uint32_t>();
      if (storage == kInArtifact) {
        constants = payload.substr(k.pos());
        a.constants_bytes = constants.size();
      } else if (storage == kWeightsFile) {
        a.weights_file = k.str();
        const uint64_t size = k.num<uint64_t>(), sum = k.num<uint64_t>();
        if (!k.error().empty() || !k.at_end()) return bad("the constants section is malformed");
        a.constants_bytes = size_t(size);
        if (weights) {
          ByteReader w(*weights, absl::StrCat("weights file ", a.weights_file));
          std::string_view magic = w.bytes(sizeof kWeightsMagic);
          const uint64_t wsize = w.num<uint64_t>(), wsum = w.num<uint64_t>();
          if (!w.error().empty() || std::memcmp(magic.data(), kWeightsMagic, sizeof kWeightsMagic) != 0)
            return bad(absl::StrCat("weights file ", a.weights_file, " is not a kiln weights file"));
          if (wsize != size || wsum != sum)
            return bad(absl::StrCat("weights file ", a.weights_file, " holds other weights (", wsize,
                                    " bytes) than this artifact was compiled with (", size, " bytes): compile again"));
          constants = std::string_view(*weights).substr(w.pos());
          if (constants.size() != size || runtime::stable_hash64(constants) != sum)
            return bad(absl::StrCat("weights file ", a.weights_file, " is corrupted (truncated or its checksum does not match)"));
        }
      } else {
        return bad(absl::StrCat("the constants section has storage kind ", storage));
      }
    } else {
      ByteReader t(payload, absl::StrCat("section '", name, "'"));
      TargetSection ts;
      ts.backend = t.str();
      ts.profile = t.str();
      ts.target_key = t.str();
      std::string program = t.str();
      if (!a.graph.symbols.empty() && t.error().empty())
        if (absl::Status s = read_symbolic(t, a.graph.symbols, &ts); !s.ok()) return bad(absl::StrCat("section '", name, "': ", s.message()));
      if (!t.error().empty()) return bad(t.error());
      if (!t.at_end()) return bad(absl::StrCat("section '", name, "' has bytes after its program"));
      auto p = runtime::deserialize(program);
      if (!p.ok()) return bad(absl::StrCat("section '", name, "': ", p.status().message()));
      if (p->backend != ts.backend || p->target_key != ts.target_key)
        return bad(absl::StrCat("section '", name, "' holds a program for ", p->backend, " [", p->target_key, "], not ",
                                ts.backend, " [", ts.target_key, "]"));
      ts.program = *std::move(p);
      ts.bytes = payload.size();
      a.targets.push_back(std::move(ts));
    }
  }
  if (!c.at_end()) return bad(absl::StrCat(bytes.size() - c.pos(), " bytes after the last section"));
  if (!a.weights_file.empty() && !weights) return a;  // constants left empty, as documented
  size_t at = 0;
  for (ir::ConstantData& k : a.graph.constants) {
    size_t n = size_t(shape_numel(k.shape) * dtype_size(k.dtype));
    if (n > constants.size() - at) return bad("the constants section is shorter than the signature's constants");
    k.bytes = std::string(constants.substr(at, n));
    at += n;
  }
  if (at != constants.size()) return bad("the constants section is longer than the signature's constants");
  return a;
}

namespace {

std::string beside(const std::string& artifact_path, const std::string& name) {
  size_t slash = artifact_path.rfind('/');
  return slash == std::string::npos ? name : artifact_path.substr(0, slash + 1) + name;
}

absl::StatusOr<std::string> slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

absl::Status spill(const std::string& path, const std::string& bytes, const char* what) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f || !f.write(bytes.data(), std::streamsize(bytes.size())) || !f.flush())
    return absl::PermissionDeniedError(absl::StrCat(path, ": cannot write the ", what));
  return absl::OkStatus();
}

}  // namespace

absl::Status write_file(const std::string& path, Artifact& a) {
  if (!a.weights_file.empty()) {
    if (a.weights_file.find('/') != std::string::npos)
      return absl::InvalidArgumentError(absl::StrCat("weights file '", a.weights_file,
                                                     "': give a file name; it is written beside the artifact"));
    const std::string wpath = beside(path, a.weights_file);
    std::string weights = write_weights(a);
    // The same weights already there (recompiling the code): left untouched.
    std::ifstream old(wpath, std::ios::binary | std::ios::ate);
    bool same = old && size_t(old.tellg()) == weights.size();
    if (same) {
      old.seekg(0);
      std::string head(sizeof kWeightsMagic + 16, '\0');
      same = bool(old.read(head.data(), std::streamsize(head.size()))) && head == weights.substr(0, head.size());
    }
    if (!same) {
      if (absl::Status s = spill(wpath, weights, "weights file"); !s.ok()) return s;
    }
  }
  return spill(path, write(a), "artifact");
}

absl::StatusOr<Artifact> read_file(const std::string& path) {
  auto bytes = slurp(path);
  if (!bytes.ok()) return bytes.status();
  auto a = read(*bytes);
  if (a.ok() && !a->weights_file.empty()) {
    auto weights = slurp(beside(path, a->weights_file));
    if (!weights.ok())
      return absl::NotFoundError(absl::StrCat(path, ": its weights file ", beside(path, a->weights_file),
                                              " cannot be opened"));
    a = read(*bytes, &*weights);
  }
  if (!a.ok()) return absl::Status(a.status().code(), absl::StrCat(path, ": ", a.status().message()));
  return a;
}

}  // namespace kiln::artifact
