// Reading an AMDGPU code object for the stand-in HIP runtime (code_object.h): the ELF64 headers
// for the image's length and processor, and a small MessagePack reader for the kernel metadata
// note (only the MessagePack types LLVM writes there: maps, arrays, strings, integers, booleans,
// floats and binary blobs).
#include "hip/fake_runtime/code_object.h"

#include <algorithm>
#include <cstring>
#include <map>

namespace kiln::fake_hip {
namespace {

template <typename T>
T read_le(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;  // AMDGPU code objects and the hosts kiln runs on are little-endian
}

// One MessagePack value; maps keep their entries in order.
struct Value {
  enum Kind { kNil, kBool, kInt, kFloat, kString, kArray, kMap } kind = kNil;
  uint64_t u = 0;
  std::string s;
  std::vector<Value> items;                       // kArray
  std::vector<std::pair<Value, Value>> entries;  // kMap
  const Value* get(const char* key) const {
    for (const auto& [k, v] : entries)
      if (k.kind == kString && k.s == key) return &v;
    return nullptr;
  }
};

class MsgPack {
 public:
  MsgPack(const unsigned char* p, const unsigned char* end) : p_(p), end_(end) {}
  bool read(Value* v, int depth = 0) {
    if (depth > 32 || p_ >= end_) return false;
    const unsigned b = *p_++;
    if (b <= 0x7f) return integer(v, b);
    if (b >= 0xe0) return integer(v, uint64_t(int64_t(int8_t(b))));
    if ((b & 0xf0) == 0x80) return map(v, b & 0x0f, depth);
    if ((b & 0xf0) == 0x90) return array(v, b & 0x0f, depth);
    if ((b & 0xe0) == 0xa0) return string(v, b & 0x1f);
    uint64_t n = 0;
    switch (b) {
      case 0xc0: v->kind = Value::kNil; return true;
      case 0xc2: case 0xc3: v->kind = Value::kBool; v->u = b == 0xc3; return true;
      case 0xc4: return big(1, &n) && string(v, n);  // bin: kept as bytes
      case 0xc5: return big(2, &n) && string(v, n);
      case 0xc6: return big(4, &n) && string(v, n);
      case 0xca: v->kind = Value::kFloat; return big(4, &v->u);
      case 0xcb: v->kind = Value::kFloat; return big(8, &v->u);
      case 0xcc: return big(1, &n) && integer(v, n);
      case 0xcd: return big(2, &n) && integer(v, n);
      case 0xce: return big(4, &n) && integer(v, n);
      case 0xcf: return big(8, &n) && integer(v, n);
      case 0xd0: return big(1, &n) && integer(v, uint64_t(int64_t(int8_t(n))));
      case 0xd1: return big(2, &n) && integer(v, uint64_t(int64_t(int16_t(n))));
      case 0xd2: return big(4, &n) && integer(v, uint64_t(int64_t(int32_t(n))));
      case 0xd3: return big(8, &n) && integer(v, n);
      case 0xd9: return big(1, &n) && string(v, n);
      case 0xda: return big(2, &n) && string(v, n);
      case 0xdb: return big(4, &n) && string(v, n);
      case 0xdc: return big(2, &n) && array(v, n, depth);
      case 0xdd: return big(4, &n) && array(v, n, depth);
      case 0xde: return big(2, &n) && map(v, n, depth);
      case 0xdf: return big(4, &n) && map(v, n, depth);
      default: return false;  // extension types: not in AMDGPU metadata
    }
  }

 private:
  bool big(int bytes, uint64_t* out) {
    if (end_ - p_ < bytes) return false;
    *out = 0;
    for (int i = 0; i < bytes; ++i) *out = (*out << 8) | *p_++;
    return true;
  }
  static bool integer(Value* v, uint64_t n) {
    v->kind = Value::kInt;
    v->u = n;
    return true;
  }
  bool string(Value* v, uint64_t n) {
    if (uint64_t(end_ - p_) < n) return false;
    v->kind = Value::kString;
    v->s.assign(reinterpret_cast<const char*>(p_), size_t(n));
    p_ += n;
    return true;
  }
  bool array(Value* v, uint64_t n, int depth) {
    v->kind = Value::kArray;
    for (uint64_t i = 0; i < n; ++i)
      if (!read(&v->items.emplace_back(), depth + 1)) return false;
    return true;
  }
  bool map(Value* v, uint64_t n, int depth) {
    v->kind = Value::kMap;
    for (uint64_t i = 0; i < n; ++i) {
      auto& [k, val] = v->entries.emplace_back();
      if (!read(&k, depth + 1) || !read(&val, depth + 1)) return false;
    }
    return true;
  }
  const unsigned char* p_;
  const unsigned char* end_;
};

const char* processor_of(uint32_t e_flags) {
  static const std::map<uint32_t, const char*> names = {
      {0x02c, "gfx900"}, {0x02f, "gfx906"},  {0x030, "gfx908"},  {0x03f, "gfx90a"},
      {0x040, "gfx940"}, {0x04c, "gfx942"},  {0x036, "gfx1030"}, {0x041, "gfx1100"}};
  auto it = names.find(e_flags & 0xff);  // EF_AMDGPU_MACH
  return it == names.end() ? "" : it->second;
}

bool read_kernels(const Value& meta, std::vector<KernelInfo>* out, std::string* why) {
  const Value* kernels = meta.get("amdhsa.kernels");
  if (!kernels || kernels->kind != Value::kArray) {
    *why = "the metadata has no amdhsa.kernels";
    return false;
  }
  for (const Value& k : kernels->items) {
    KernelInfo info;
    const Value* name = k.get(".name");
    const Value* symbol = k.get(".symbol");
    if (!name || name->kind != Value::kString || !symbol || symbol->kind != Value::kString) {
      *why = "a kernel's metadata has no .name or .symbol";
      return false;
    }
    info.name = name->s;
    info.symbol = symbol->s;
    if (const Value* m = k.get(".max_flat_workgroup_size"); m && m->kind == Value::kInt) info.max_flat_workgroup_size = m->u;
    if (const Value* g = k.get(".group_segment_fixed_size"); g && g->kind == Value::kInt) info.group_segment_fixed_size = g->u;
    if (const Value* args = k.get(".args"); args && args->kind == Value::kArray)
      for (const Value& a : args->items) {
        const Value* kind = a.get(".value_kind");
        const Value* size = a.get(".size");
        const Value* offset = a.get(".offset");
        if (!kind || kind->kind != Value::kString || !size || !offset) {
          *why = "an argument of " + info.name + " has no .value_kind, .size or .offset";
          return false;
        }
        if (kind->s.rfind("hidden_", 0) == 0) continue;  // filled in by the runtime, not passed
        info.args.push_back(KernelArg{offset->u, size->u, kind->s});
      }
    out->push_back(std::move(info));
  }
  return true;
}

}  // namespace

bool read_code_object(const void* image, CodeObject* out, std::string* why) {
  const auto* p = static_cast<const unsigned char*>(image);
  if (!p || std::memcmp(p, "\x7f" "ELF", 4) != 0) {
    *why = "not an ELF image";
    return false;
  }
  if (p[4] != 2 || p[5] != 1 || read_le<uint16_t>(p + 18) != 224) {
    *why = "not a 64-bit little-endian AMDGPU ELF (EM_AMDGPU)";
    return false;
  }
  const uint64_t phoff = read_le<uint64_t>(p + 0x20), shoff = read_le<uint64_t>(p + 0x28);
  const uint16_t phentsize = read_le<uint16_t>(p + 0x36), phnum = read_le<uint16_t>(p + 0x38);
  const uint16_t shentsize = read_le<uint16_t>(p + 0x3a), shnum = read_le<uint16_t>(p + 0x3c);
  if (shnum == 0 || shentsize < 64 || (phnum && phentsize < 56)) {
    *why = "the ELF has no section headers";
    return false;
  }
  uint64_t length = std::max(shoff + uint64_t(shnum) * shentsize, phoff + uint64_t(phnum) * phentsize);
  const unsigned char* note = nullptr;
  uint64_t note_bytes = 0;
  for (uint16_t i = 0; i < shnum; ++i) {
    const unsigned char* sh = p + shoff + uint64_t(i) * shentsize;
    const uint32_t type = read_le<uint32_t>(sh + 4);
    const uint64_t offset = read_le<uint64_t>(sh + 24), size = read_le<uint64_t>(sh + 32);
    if (type != 8) length = std::max(length, offset + size);  // SHT_NOBITS takes no file bytes
    if (type == 7 && !note) {                                  // SHT_NOTE
      note = p + offset;
      note_bytes = size;
    }
  }
  out->image.assign(reinterpret_cast<const char*>(p), size_t(length));
  out->processor = processor_of(read_le<uint32_t>(p + 0x30));
  // Notes: namesz, descsz, type, then the name and the descriptor, each padded to 4 bytes.
  for (uint64_t at = 0; note && at + 12 <= note_bytes;) {
    const uint32_t namesz = read_le<uint32_t>(note + at), descsz = read_le<uint32_t>(note + at + 4);
    const uint32_t type = read_le<uint32_t>(note + at + 8);
    const uint64_t desc = at + 12 + ((uint64_t(namesz) + 3) & ~uint64_t(3));
    if (desc + descsz > note_bytes) break;
    if (type == 32 && namesz == 7 && std::memcmp(note + at + 12, "AMDGPU", 7) == 0) {  // NT_AMDGPU_METADATA
      Value meta;
      MsgPack reader(note + desc, note + desc + descsz);
      if (!reader.read(&meta) || meta.kind != Value::kMap) {
        *why = "the kernel metadata is not a MessagePack map";
        return false;
      }
      return read_kernels(meta, &out->kernels, why);
    }
    at = desc + ((uint64_t(descsz) + 3) & ~uint64_t(3));
  }
  *why = "no NT_AMDGPU_METADATA note (kernel metadata)";
  return false;
}

}  // namespace kiln::fake_hip
