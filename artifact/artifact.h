// The .kiln artifact: one file holding a graph's signature, its constants, and the same program
// compiled for several targets, loadable on any device one of them fits without compiling.
//
// Layout (little-endian; every length checked on read, so a bad file is an error, not a crash):
//   header    magic "\x89KILN\r\n\x1a" (8 bytes; catches text-mode mangling like PNG's), u32
//             format version (kFormatVersion), str kiln version, u32 section count, u64
//             checksum of the header bytes before it
//   section   u32 kind, str name, u64 length, u64 checksum (runtime::stable_hash64) of the
//             payload, payload; in this order:
//     signature   ir::print(ExportedGraph, with_data=false): the signature and the graph text
//     constants   u32 storage, then for 0 (in the artifact) the constants' bytes concatenated in
//                 signature order, or for 1 (a weights file) str file name (beside the artifact),
//                 u64 size, u64 checksum of those bytes; the weights file is magic
//                 "\x89KILNWT\n", u64 size, u64 checksum, the bytes. Recompiling code with the
//                 same weights leaves an identical weights file untouched.
//     target...   one per target: str backend, str profile ("" = a device's own target), str
//                 target_key, str runtime::serialize(CompiledProgram) (for CUDA: the cubin and,
//                 unless the module is arch-specific, its PTX for newer GPUs); when the graph has
//                 symbolic dimensions, then: u32 fusion, the kernels' template (u32 symbols, u64 kernels, per
//                 kernel u64 axes and per axis i32 symbol, i64 coefficient) and u64 binaries, each
//                 u64 hash and u64 size of its portable text and str blob (runtime/compile_cache.h)
//   str is a u64 length and the bytes. The same inputs give the same bytes (no time stamps,
//   no paths), so artifacts can be compared and cached by content.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/signature.h"
#include "runtime/compile_cache.h"
#include "runtime/compiled_program.h"

namespace kiln::artifact {

inline constexpr uint32_t kFormatVersion = 3;  // 2: CUDA sections carry PTX; 3: symbolic dimensions

// The kiln version this library writes into artifacts (the project version).
std::string kiln_version();

struct TargetSection {
  std::string backend;   // "cpu", "cuda", "vulkan"
  std::string profile;   // "x86-64-v3", "sm_90", "lavapipe"; "" for a device's own target
  std::string target_key;
  runtime::CompiledProgram program;  // at the graph's base sizes
  // Symbolic dimensions (the graph's symbols not empty): how the kernels scale with them and the
  // binaries of the code every size shares, which a size planned at load finds by their source.
  ir::SymbolicTemplate code;
  runtime::PortableBinaries binaries;
  bool fusion = true;  // how it was planned (a size planned at load plans alike)
  size_t bytes = 0;      // serialized size (set by read and write)

  // "cuda:sm_90", or the backend alone for a device's own target.
  std::string label() const { return profile.empty() ? backend : backend + ":" + profile; }
};

struct Artifact {
  uint32_t format_version = kFormatVersion;
  std::string kiln_version;
  ir::ExportedGraph graph;  // signature, constants (with their bytes) and graph
  std::vector<TargetSection> targets;
  // "" = constants in the artifact; else the name of the weights file beside it that holds them.
  std::string weights_file;
  size_t signature_bytes = 0, constants_bytes = 0;  // section sizes (set by read and write)
};

// The artifact file's bytes (with weights_file set, not the weights); sets the sections' sizes
// in `a`.
std::string write(Artifact& a);
// The weights file's bytes for `a`'s constants.
std::string write_weights(const Artifact& a);
// InvalidArgument naming the problem (not an artifact, truncated, a section's checksum,
// another format version with the kiln version that wrote it, a malformed section). With a
// weights file, its bytes come from `weights` (nullptr: the constants are left empty).
absl::StatusOr<Artifact> read(std::string_view bytes, const std::string* weights = nullptr);

// Whole files; errors name the path. write_file writes the weights file beside `path` too
// (unless one with the same bytes is there), read_file reads it from there.
absl::Status write_file(const std::string& path, Artifact& a);
absl::StatusOr<Artifact> read_file(const std::string& path);

}  // namespace kiln::artifact
