// The little binary formats kiln writes (runtime::CompiledProgram, the .kiln artifact):
// fixed-width integers in the machine's (little-endian) order and length-prefixed strings.
// ByteReader checks every length against what is left, keeps the first problem and returns
// zeros afterwards, so a parser reads a whole record and checks error() once.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::support {

class ByteWriter {
 public:
  template <typename T>
  void num(T v) {
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void u32(uint32_t v) { num(v); }
  void u64(uint64_t v) { num(v); }
  void i64(int64_t v) { num(v); }
  void str(std::string_view s) {
    u64(s.size());
    out_.append(s);
  }
  void raw(std::string_view s) { out_.append(s); }
  // A count, then `each` for every element (which writes it).
  template <typename T, typename F>
  void list(const std::vector<T>& v, F each) {
    u64(v.size());
    for (const T& x : v) each(x);
  }
  const std::string& bytes() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class ByteReader {
 public:
  // `what` names the input in messages ("the file", "compiled program", "section 'cpu'").
  ByteReader(std::string_view in, std::string what) : in_(in), what_(std::move(what)) {}

  template <typename T>
  T num() {
    T v{};
    if (take(sizeof v)) std::memcpy(&v, in_.data() + pos_ - sizeof v, sizeof v);
    return v;
  }
  uint32_t u32() { return num<uint32_t>(); }
  uint64_t u64() { return num<uint64_t>(); }
  int64_t i64() { return num<int64_t>(); }
  int32_t i32();  // an i64 on disk that must fit 32 bits
  std::string_view bytes(uint64_t n) { return take(n) ? in_.substr(pos_ - n, n) : std::string_view(); }
  std::string str() { return std::string(bytes(u64())); }
  // A count of items each at least `min_bytes` long: bounded by what is left, so a corrupted
  // count cannot make the caller allocate without limit.
  uint64_t count(uint64_t min_bytes);
  // Records a problem found by the caller (the first one is kept).
  void fail(const std::string& why);

  size_t pos() const { return pos_; }
  bool at_end() const { return pos_ == in_.size(); }
  const std::string& error() const { return error_; }

 private:
  bool take(uint64_t n);
  std::string_view in_;
  std::string what_;
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace kiln::support
