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

}  // namespace

std::string kiln_version() { return KILN_VERSION; }

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
  std::string constants;
  for (const ir::ConstantData& c : a.graph.constants) constants += c.bytes;
  a.constants_bytes = constants.size();
  put_section(out, kConstants, "constants", constants);
  for (TargetSection& t : a.targets) {
    ByteWriter payload;
    payload.str(t.backend);
    payload.str(t.profile);
    payload.str(t.target_key);
    payload.str(runtime::serialize(t.program));
    t.bytes = payload.bytes().size();
    put_section(out, kTarget, t.label(), payload.bytes());
  }
  return out.take();
}

absl::StatusOr<Artifact> read(std::string_view bytes) {
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
      constants = payload;
      a.constants_bytes = payload.size();
    } else {
      ByteReader t(payload, absl::StrCat("section '", name, "'"));
      TargetSection ts;
      ts.backend = t.str();
      ts.profile = t.str();
      ts.target_key = t.str();
      std::string program = t.str();
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

absl::Status write_file(const std::string& path, Artifact& a) {
  std::string bytes = write(a);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f || !f.write(bytes.data(), std::streamsize(bytes.size())) || !f.flush())
    return absl::PermissionDeniedError(absl::StrCat(path, ": cannot write the artifact"));
  return absl::OkStatus();
}

absl::StatusOr<Artifact> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::stringstream ss;
  ss << f.rdbuf();
  auto a = read(ss.str());
  if (!a.ok()) return absl::Status(a.status().code(), absl::StrCat(path, ": ", a.status().message()));
  return a;
}

}  // namespace kiln::artifact
