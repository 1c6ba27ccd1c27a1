// HostTensor element access in kiln's device layout.
#include "frontend/onnx/host_tensor.h"

#include <cmath>
#include <cstring>

#include "ir/half.h"

namespace kiln::onnx {

Scalar HostTensor::at(int64_t i) const {
  const char* p = bytes.data() + i * dtype_size(dtype);
  switch (dtype) {
    case DType::kBool: return Scalar::from_int(*reinterpret_cast<const uint8_t*>(p) != 0);
    case DType::kUInt8: return Scalar::from_int(*reinterpret_cast<const uint8_t*>(p));
    case DType::kInt8: return Scalar::from_int(*reinterpret_cast<const int8_t*>(p));
    case DType::kInt32: { int32_t v; std::memcpy(&v, p, 4); return Scalar::from_int(v); }
    case DType::kInt64: { int64_t v; std::memcpy(&v, p, 8); return Scalar::from_int(v); }
    case DType::kFloat16: { uint16_t v; std::memcpy(&v, p, 2); return Scalar::from_double(ir::half_to_float(v)); }
    case DType::kBFloat16: { uint16_t v; std::memcpy(&v, p, 2); return Scalar::from_double(ir::bf16_to_float(v)); }
    case DType::kFloat32: { float v; std::memcpy(&v, p, 4); return Scalar::from_double(v); }
    case DType::kFloat64: { double v; std::memcpy(&v, p, 8); return Scalar::from_double(v); }
    case DType::kInt16: { int16_t v; std::memcpy(&v, p, 2); return Scalar::from_int(v); }
    case DType::kUInt16: { uint16_t v; std::memcpy(&v, p, 2); return Scalar::from_int(v); }
    case DType::kUInt32: { uint32_t v; std::memcpy(&v, p, 4); return Scalar::from_int(v); }
  }
  return {};
}

void HostTensor::set(int64_t i, const Scalar& value) {
  char* p = bytes.data() + i * dtype_size(dtype);
  Scalar c = value.cast_to(dtype);
  switch (dtype) {
    case DType::kBool: *reinterpret_cast<uint8_t*>(p) = uint8_t(c.as_int() != 0); break;
    case DType::kUInt8: *reinterpret_cast<uint8_t*>(p) = uint8_t(c.i); break;
    case DType::kInt8: *reinterpret_cast<int8_t*>(p) = int8_t(c.i); break;
    case DType::kInt32: { int32_t v = int32_t(c.i); std::memcpy(p, &v, 4); break; }
    case DType::kInt64: std::memcpy(p, &c.i, 8); break;
    case DType::kFloat16: { uint16_t v = ir::float_to_half(float(c.f)); std::memcpy(p, &v, 2); break; }
    case DType::kBFloat16: { uint16_t v = ir::float_to_bf16(float(c.f)); std::memcpy(p, &v, 2); break; }
    case DType::kFloat32: { float v = float(c.f); std::memcpy(p, &v, 4); break; }
    case DType::kFloat64: std::memcpy(p, &c.f, 8); break;
    case DType::kInt16: { int16_t v = int16_t(c.i); std::memcpy(p, &v, 2); break; }
    case DType::kUInt16: { uint16_t v = uint16_t(c.i); std::memcpy(p, &v, 2); break; }
    case DType::kUInt32: { uint32_t v = uint32_t(c.i); std::memcpy(p, &v, 4); break; }
  }
}

int64_t HostTensor::int_at(int64_t i) const {
  Scalar s = at(i);
  if (s.is_int) return s.i;
  double d = std::trunc(s.f);
  if (!(d > -9.2e18 && d < 9.2e18)) return d > 0 ? INT64_MAX : INT64_MIN;  // NaN lands here too
  return int64_t(d);
}
double HostTensor::double_at(int64_t i) const { return at(i).as_double(); }
void HostTensor::set_int(int64_t i, int64_t v) { set(i, Scalar::from_int(v)); }
void HostTensor::set_double(int64_t i, double v) { set(i, Scalar::from_double(v)); }

std::vector<int64_t> HostTensor::to_ints() const {
  std::vector<int64_t> r(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) r[size_t(i)] = int_at(i);
  return r;
}

HostTensor HostTensor::zeros(DType dtype, Shape shape) {
  HostTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.bytes.assign(size_t(t.numel() * dtype_size(dtype)), '\0');
  return t;
}

HostTensor HostTensor::from_ints(const std::vector<int64_t>& v, Shape shape, DType dtype) {
  HostTensor t = zeros(dtype, std::move(shape));
  for (size_t i = 0; i < v.size(); ++i) t.set_int(int64_t(i), v[i]);
  return t;
}

}  // namespace kiln::onnx
