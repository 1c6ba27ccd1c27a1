// What the stand-in HIP runtime (fake_libamdhip64.cc) reads from an AMDGPU code object, as the
// real runtime does before it can load a module or launch a kernel: the image's length (a
// code object is passed to hipModuleLoadData as a bare pointer, so the length comes from the
// ELF headers), its gfx processor (the ELF header's e_flags) and each kernel's name and
// explicit arguments (the NT_AMDGPU_METADATA note, a MessagePack map). A kernel's explicit
// arguments tell the fake how many kernelParams entries a launch passes and how many bytes each
// points to; without them it could neither copy a launch's arguments nor check its pointers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::fake_hip {

struct KernelArg {
  uint64_t offset = 0, size = 0;
  std::string value_kind;  // "global_buffer", "by_value", ... (hidden_* arguments are not listed)
};

struct KernelInfo {
  std::string name;    // .name: what hipModuleGetFunction looks up
  std::string symbol;  // .symbol: the kernel descriptor ("<name>.kd")
  std::vector<KernelArg> args;  // the explicit arguments, in order
  uint64_t max_flat_workgroup_size = 1024;
  uint64_t group_segment_fixed_size = 0;  // static LDS bytes
};

struct CodeObject {
  std::string image;         // the ELF's bytes
  std::string processor;     // "gfx90a", "gfx908", ... ("" when e_flags names none we know)
  std::vector<KernelInfo> kernels;
};

// Reads the code object at `image`; false with `why` set when it is not a 64-bit AMDGPU ELF
// with kernel metadata.
bool read_code_object(const void* image, CodeObject* out, std::string* why);

}  // namespace kiln::fake_hip
