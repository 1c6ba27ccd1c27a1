// Tensor creation: host data, constants, ranges, random numbers.
#include <array>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "frontend/fast_tls.h"
#include "frontend/lazy.h"
#include "ir/half.h"
#include "runtime/device.h"

namespace kiln {
namespace {

template <typename T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return DType::kFloat32;
  else if constexpr (std::is_same_v<T, double>) return DType::kFloat64;
  else if constexpr (std::is_same_v<T, int32_t>) return DType::kInt32;
  else if constexpr (std::is_same_v<T, int64_t>) return DType::kInt64;
  else if constexpr (std::is_same_v<T, int8_t>) return DType::kInt8;
  else if constexpr (std::is_same_v<T, uint8_t>) return DType::kUInt8;
  else if constexpr (std::is_same_v<T, int16_t>) return DType::kInt16;
  else if constexpr (std::is_same_v<T, uint16_t>) return DType::kUInt16;
  else if constexpr (std::is_same_v<T, uint32_t>) return DType::kUInt32;
  else return DType::kBool;
}

// Converts one host value to the bytes of `dt` (float -> int saturates, as cast does).
template <typename T>
void store_element(DType dt, T v, uint8_t* p) {
  Scalar s = std::is_floating_point_v<T> ? Scalar::from_double(double(v)) : Scalar::from_int(int64_t(v));
  Scalar c = s.cast_to(dt);
  switch (dt) {
    case DType::kBool: *p = uint8_t(c.i != 0); break;
    case DType::kUInt8: *p = uint8_t(c.i); break;
    case DType::kInt8: *p = uint8_t(int8_t(c.i)); break;
    case DType::kInt32: { int32_t x = int32_t(c.i); std::memcpy(p, &x, 4); break; }
    case DType::kInt64: std::memcpy(p, &c.i, 8); break;
    case DType::kFloat16: { uint16_t x = ir::float_to_half(float(c.f)); std::memcpy(p, &x, 2); break; }
    case DType::kBFloat16: { uint16_t x = ir::float_to_bf16(float(c.f)); std::memcpy(p, &x, 2); break; }
    case DType::kFloat32: { float x = float(c.f); std::memcpy(p, &x, 4); break; }
    case DType::kFloat64: std::memcpy(p, &c.f, 8); break;
    case DType::kInt16: { int16_t x = int16_t(c.i); std::memcpy(p, &x, 2); break; }
    case DType::kUInt16: { uint16_t x = uint16_t(c.i); std::memcpy(p, &x, 2); break; }
    case DType::kUInt32: { uint32_t x = uint32_t(c.i); std::memcpy(p, &x, 4); break; }
  }
}

template <typename T>
Tensor upload(const T* data, int64_t count, Shape shape, DType dtype, const Device& device) {
  int64_t numel = shape_numel(shape);
  if (numel < 0) detail::fail("from_vector", absl::StrCat("invalid shape ", shape_str(shape)));
  if (numel != count)
    detail::fail("from_vector", absl::StrCat(count, " values do not fill shape ", shape_str(shape), " (",
                                             numel, " elements)"));
  int64_t es = dtype_size(dtype);
  runtime::Device* dev = detail::impl_of(device);
  auto buf = dev->alloc(numel * es);
  if (!buf.ok()) throw Error(buf.status());
  if (numel == 0) return detail::from_buffer(*std::move(buf), dtype, std::move(shape));
  if (dtype == dtype_of<T>() && dtype != DType::kBool) {  // the data as it is: no host copy
    throw_if_error(dev->upload(buf->get(), data, numel * es));
  } else {
    std::vector<uint8_t> bytes(size_t(numel * es));
    for (int64_t i = 0; i < numel; ++i) store_element<T>(dtype, data[i], bytes.data() + i * es);
    throw_if_error(dev->upload(buf->get(), bytes.data(), int64_t(bytes.size())));
  }
  return detail::from_buffer(*std::move(buf), dtype, std::move(shape));
}

}  // namespace

template <typename T>
Tensor from_vector(const std::vector<T>& data, Shape shape, const Device& device) {
  return from_vector<T>(data, std::move(shape), dtype_of<T>(), device);
}

template <typename T>
Tensor from_vector(const std::vector<T>& data, Shape shape, DType dtype, const Device& device) {
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> tmp(data.begin(), data.end());
    return upload<uint8_t>(tmp.data(), int64_t(tmp.size()), std::move(shape), dtype, device);
  } else {
    return upload<T>(data.data(), int64_t(data.size()), std::move(shape), dtype, device);
  }
}

template <typename T>
Tensor from_data(const T* data, Shape shape, const Device& device) {
  int64_t n = shape_numel(shape);
  if (!data && n > 0) detail::fail("from_data", "null data pointer");
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> tmp(data, data + n);
    return upload<uint8_t>(tmp.data(), n, std::move(shape), DType::kBool, device);
  } else {
    return upload<T>(data, n, std::move(shape), dtype_of<T>(), device);
  }
}

#define KILN_INSTANTIATE(T)                                                               \
  template Tensor from_vector<T>(const std::vector<T>&, Shape, const Device&);            \
  template Tensor from_vector<T>(const std::vector<T>&, Shape, DType, const Device&);     \
  template Tensor from_data<T>(const T*, Shape, const Device&);
KILN_INSTANTIATE(float)
KILN_INSTANTIATE(double)
KILN_INSTANTIATE(int32_t)
KILN_INSTANTIATE(int64_t)
KILN_INSTANTIATE(int8_t)
KILN_INSTANTIATE(uint8_t)
KILN_INSTANTIATE(bool)
KILN_INSTANTIATE(int16_t)
KILN_INSTANTIATE(uint16_t)
KILN_INSTANTIATE(uint32_t)
#undef KILN_INSTANTIATE

namespace detail {
Tensor constant(double value, DType dtype, const Shape& shape, runtime::Device* device) {
  Scalar s = (is_float(dtype) ? Scalar::from_double(value) : Scalar::from_int(Scalar::from_double(value).as_int()));
  s = s.cast_to(dtype);
  if (is_float(dtype) && !s.is_int) s = Scalar::from_double(s.f);
  if (!device) device = detail::impl_of(Device());
  // Loops record the same few constants over and over (x * 1.0001 + 0.001): the last ones
  // recorded on this thread are shared rather than recorded again. A constant node is pure, so
  // sharing it changes nothing but the recording's cost (Scalar's == is bitwise: -0.0 is not 0.0).
  struct Recent {
    NodePtr node;
    Scalar scalar;
  };
  static KILN_FAST_TLS std::array<Recent, 8> recent;
  static KILN_FAST_TLS size_t next = 0;
  for (const Recent& r : recent)
    if (r.scalar == s && r.node && r.node->device == device && r.node->dtype == dtype && r.node->shape == shape)
      return Access::tensor(r.node);
  Tensor t = record("full", ir::Op::kConst, dtype, shape, {}, {}, s, device);
  recent[next] = Recent{node_of(t), s};
  next = (next + 1) % recent.size();
  return t;
}
}  // namespace detail

Tensor full(Shape shape, double value, DType dtype, const Device& device) {
  return detail::constant(value, dtype, shape, detail::impl_of(device));
}
Tensor scalar(double value, DType dtype, const Device& device) { return full({}, value, dtype, device); }
Tensor zeros(Shape shape, DType dtype, const Device& device) { return full(std::move(shape), 0.0, dtype, device); }
Tensor ones(Shape shape, DType dtype, const Device& device) { return full(std::move(shape), 1.0, dtype, device); }
Tensor zeros_like(const Tensor& t) { return full(t.shape(), 0.0, t.dtype(), t.device()); }
Tensor ones_like(const Tensor& t) { return full(t.shape(), 1.0, t.dtype(), t.device()); }
Tensor full_like(const Tensor& t, double value) { return full(t.shape(), value, t.dtype(), t.device()); }

Tensor arange(int64_t n, DType dtype, const Device& device) {
  if (n < 0) detail::fail("arange", absl::StrCat("negative length ", n));
  if (dtype == DType::kBool) detail::fail("arange", "dtype cannot be bool");
  return detail::record("arange", ir::Op::kIota, dtype, {n}, {}, {}, {}, detail::impl_of(device));
}

Tensor arange(double start, double stop, double step, DType dtype, const Device& device) {
  if (step == 0 || !std::isfinite(step) || !std::isfinite(start) || !std::isfinite(stop))
    detail::fail("arange", "start, stop and step must be finite and step non-zero");
  double count = std::ceil((stop - start) / step);
  int64_t n = count > 0 ? int64_t(count) : 0;
  // Compute in f64 (or i64) and cast once, so integer ranges stay exact.
  DType work = is_float(dtype) ? DType::kFloat64 : DType::kInt64;
  Tensor i = arange(n, work, device);
  Tensor r = i * step + start;
  if (!is_float(dtype) && (start != std::floor(start) || step != std::floor(step)))
    r = cast(i, DType::kFloat64) * step + start;
  return cast(r, dtype);
}

Tensor rand(Shape shape, uint64_t seed, DType dtype, const Device& device) {
  if (!is_float(dtype)) detail::fail("rand", absl::StrCat("needs a float dtype, got ", dtype_name(dtype)));
  DType work = dtype == DType::kFloat64 ? dtype : DType::kFloat32;
  Tensor t = detail::record("rand", ir::Op::kRand, work, std::move(shape), {}, {int64_t(seed)}, {}, detail::impl_of(device));
  return work == dtype ? t : cast(t, dtype);
}

Tensor randn(Shape shape, uint64_t seed, DType dtype, const Device& device) {
  if (!is_float(dtype)) detail::fail("randn", absl::StrCat("needs a float dtype, got ", dtype_name(dtype)));
  DType work = dtype == DType::kFloat64 ? dtype : DType::kFloat32;
  Tensor t = detail::record("randn", ir::Op::kRandn, work, std::move(shape), {}, {int64_t(seed)}, {}, detail::impl_of(device));
  return work == dtype ? t : cast(t, dtype);
}

}  // namespace kiln
