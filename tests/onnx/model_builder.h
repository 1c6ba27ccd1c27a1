// Small ONNX models written in C++ for the importer's tests, with the schema libkiln carries.
//
//   ModelBuilder b(17);
//   b.input("x", kiln_onnx::FLOAT, {2, 3});
//   b.initializer("w", {3, 4}, std::vector<float>(12, 0.5f));
//   b.node("MatMul", {"x", "w"}, {"y"}, "mm");
//   b.output("y", kiln_onnx::FLOAT, {2, 4});
//   std::string bytes = b.bytes();
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln_onnx.pb.h"

namespace kiln::testing {

namespace onnx_pb = kiln::onnx_proto;

class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset = 17) {
    m_.set_ir_version(8);
    auto* o = m_.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
  }
  // dims: -1 for a symbolic dimension.
  ModelBuilder& input(const std::string& name, int elem_type, const std::vector<int64_t>& dims) {
    value_info(m_.mutable_graph()->add_input(), name, elem_type, dims);
    return *this;
  }
  ModelBuilder& output(const std::string& name, int elem_type, const std::vector<int64_t>& dims) {
    value_info(m_.mutable_graph()->add_output(), name, elem_type, dims);
    return *this;
  }
  ModelBuilder& initializer(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v) {
    auto* t = m_.mutable_graph()->add_initializer();
    fill(t, name, dims, v);
    return *this;
  }
  ModelBuilder& initializer_i64(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int64_t>& v) {
    auto* t = m_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx_pb::TensorProto::INT64);
    for (int64_t d : dims) t->add_dims(d);
    for (int64_t x : v) t->add_int64_data(x);
    return *this;
  }
  onnx_pb::NodeProto* node(const std::string& op, const std::vector<std::string>& in, const std::vector<std::string>& out,
                           const std::string& name = "") {
    auto* n = m_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const auto& s : in) n->add_input(s);
    for (const auto& s : out) n->add_output(s);
    return n;
  }
  static void attr_int(onnx_pb::NodeProto* n, const std::string& name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx_pb::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr_ints(onnx_pb::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx_pb::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void attr_string(onnx_pb::NodeProto* n, const std::string& name, const std::string& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx_pb::AttributeProto::STRING);
    a->set_s(v);
  }
  onnx_pb::ModelProto& proto() { return m_; }
  std::string bytes() const { return m_.SerializeAsString(); }

 private:
  static void value_info(onnx_pb::ValueInfoProto* v, const std::string& name, int elem_type, const std::vector<int64_t>& dims) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(elem_type);
    auto* s = t->mutable_shape();
    for (int64_t d : dims) {
      auto* dim = s->add_dim();
      if (d >= 0) dim->set_dim_value(d);
      else dim->set_dim_param("n");
    }
  }
  static void fill(onnx_pb::TensorProto* t, const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v) {
    t->set_name(name);
    t->set_data_type(onnx_pb::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float x : v) t->add_float_data(x);
  }
  onnx_pb::ModelProto m_;
};

}  // namespace kiln::testing
