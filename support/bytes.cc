#include "support/bytes.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"

namespace kiln::support {

bool ByteReader::take(uint64_t n) {
  if (!error_.empty()) return false;
  if (n > in_.size() - pos_) {
    error_ = absl::StrCat(what_, " is truncated (", n, " bytes needed at byte ", pos_, ", ", in_.size() - pos_, " left)");
    return false;
  }
  pos_ += n;
  return true;
}

int32_t ByteReader::i32() {
  const int64_t v = i64();
  if (v < INT32_MIN || v > INT32_MAX) fail("a 32-bit field out of range");
  return int32_t(v);
}

uint64_t ByteReader::count(uint64_t min_bytes) {
  const uint64_t n = u64();
  if (n > (in_.size() - pos_) / std::max<uint64_t>(min_bytes, 1)) fail("a count larger than the input");
  return error_.empty() ? n : 0;
}

void ByteReader::fail(const std::string& why) {
  if (error_.empty()) error_ = absl::StrCat(what_, ": ", why, " at byte ", pos_);
}

}  // namespace kiln::support
