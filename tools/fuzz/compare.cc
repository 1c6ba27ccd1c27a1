#include "fuzz/compare.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "ir/half.h"
#include "runtime/device.h"

namespace kiln::testing {

absl::StatusOr<ir::HostTensor> download_host(const runtime::Buffer& buf, DType dt, const Shape& shape) {
  ir::HostTensor t = ir::HostTensor::make(dt, shape);
  int64_t n = t.numel(), es = dtype_size(dt);
  std::vector<uint8_t> bytes(size_t(n * es));
  if (n) {
    absl::Status s = buf.device()->download(const_cast<runtime::Buffer*>(&buf), bytes.data(), int64_t(bytes.size()));
    if (!s.ok()) return s;
  }
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* p = bytes.data() + i * es;
    switch (dt) {
      case DType::kBool: t.i[i] = *p != 0; break;
      case DType::kUInt8: t.i[i] = *p; break;
      case DType::kInt8: t.i[i] = int8_t(*p); break;
      case DType::kInt16: { int16_t v; std::memcpy(&v, p, 2); t.i[i] = v; break; }
      case DType::kUInt16: { uint16_t v; std::memcpy(&v, p, 2); t.i[i] = v; break; }
      case DType::kUInt32: { uint32_t v; std::memcpy(&v, p, 4); t.i[i] = v; break; }
      case DType::kInt32: { int32_t v; std::memcpy(&v, p, 4); t.i[i] = v; break; }
      case DType::kInt64: { int64_t v; std::memcpy(&v, p, 8); t.i[i] = v; break; }
      case DType::kFloat16: { uint16_t v; std::memcpy(&v, p, 2); t.f[i] = ir::half_to_float(v); break; }
      case DType::kBFloat16: { uint16_t v; std::memcpy(&v, p, 2); t.f[i] = ir::bf16_to_float(v); break; }
      case DType::kFloat32: { float v; std::memcpy(&v, p, 4); t.f[i] = v; break; }
      case DType::kFloat64: { double v; std::memcpy(&v, p, 8); t.f[i] = v; break; }
    }
  }
  return t;
}

absl::StatusOr<std::shared_ptr<runtime::Buffer>> upload_host(runtime::Device* device, const ir::HostTensor& t) {
  int64_t n = t.numel(), es = dtype_size(t.dtype);
  std::vector<uint8_t> bytes(size_t(n * es));
  for (int64_t i = 0; i < n; ++i) {
    uint8_t* p = bytes.data() + i * es;
    switch (t.dtype) {
      case DType::kBool: *p = uint8_t(t.i[i] != 0); break;
      case DType::kUInt8:
      case DType::kInt8: *p = uint8_t(uint64_t(t.i[i])); break;
      case DType::kInt32: { int32_t v = int32_t(uint32_t(uint64_t(t.i[i]))); std::memcpy(p, &v, 4); break; }
      case DType::kInt64: std::memcpy(p, &t.i[i], 8); break;
      case DType::kInt16:
      case DType::kUInt16: { uint16_t v = uint16_t(uint64_t(t.i[i])); std::memcpy(p, &v, 2); break; }
      case DType::kUInt32: { uint32_t v = uint32_t(uint64_t(t.i[i])); std::memcpy(p, &v, 4); break; }
      case DType::kFloat16: { uint16_t v = ir::float_to_half(float(t.f[i])); std::memcpy(p, &v, 2); break; }
      case DType::kBFloat16: { uint16_t v = ir::float_to_bf16(float(t.f[i])); std::memcpy(p, &v, 2); break; }
      case DType::kFloat32: { float v = float(t.f[i]); std::memcpy(p, &v, 4); break; }
      case DType::kFloat64: std::memcpy(p, &t.f[i], 8); break;
    }
  }
  auto buf = device->alloc(int64_t(bytes.size()));
  if (!buf.ok()) return buf.status();
  if (!bytes.empty()) {
    absl::Status s = device->upload(buf->get(), bytes.data(), int64_t(bytes.size()));
    if (!s.ok()) return s;
  }
  return *std::move(buf);
}

void default_tolerance(DType dt, double* rtol, double* atol) {
  switch (dt) {
    case DType::kFloat16: *rtol = 1e-2; *atol = 2e-3; break;
    case DType::kBFloat16: *rtol = 2e-2; *atol = 2e-2; break;
    case DType::kFloat64: *rtol = 1e-9; *atol = 1e-10; break;
    default: *rtol = 2e-4; *atol = 2e-5; break;
  }
}

Comparison compare_host(const ir::HostTensor& want, const ir::HostTensor& got, ElementTolerance tol,
                        int max_reported) {
  Comparison c;
  int64_t n = want.numel();
  if (!is_float(want.dtype)) {
    for (int64_t i = 0; i < n; ++i) {
      if (got.i[i] == want.i[i]) continue;
      if (c.bad++ < max_reported) absl::StrAppend(&c.report, "  [", i, "] got ", got.i[i], " want ", want.i[i], "\n");
      c.worst_ratio = INFINITY;
    }
    return c;
  }
  if (std::isinf(tol.abs_tol)) return c;
  for (int64_t i = 0; i < n; ++i) {
    double a = got.f[i], b = want.f[i];
    double allowed = tol.abs_tol + tol.rel_tol * std::fabs(b);
    bool ok;
    double ratio = 0;
    if (std::isnan(b)) {
      ok = std::isnan(a);
    } else if (std::isinf(b)) {
      ok = a == b;
    } else {
      double d = std::fabs(a - b);
      ok = std::isfinite(a) && d <= allowed;
      ratio = d == 0 ? 0 : (allowed > 0 ? d / allowed : INFINITY);
    }
    if (!ok) ratio = INFINITY;
    c.worst_ratio = std::max(c.worst_ratio, ratio);
    if (!ok && c.bad++ < max_reported) absl::StrAppend(&c.report, "  [", i, "] got ", a, " want ", b, "\n");
  }
  return c;
}

}  // namespace kiln::testing
