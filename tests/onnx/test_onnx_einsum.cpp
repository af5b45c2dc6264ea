// ONNX Einsum through the importer: one-node models built in memory, run by a Session, against
// a naive CPU einsum (every index assignment enumerated, size-1 dims broadcast).
#include <onnx/onnx_pb.h>

#include <map>
#include <string>

#include "gpu_test.h"
#include "vkgraph/error.h"
#include "vkgraph/session.h"

namespace vkgraph::testing {
namespace {

// A model with inputs x0, x1, ... of `shapes` and one Einsum node writing y.
std::string einsum_model(const std::string& equation, const std::vector<Shape>& shapes) {
  onnx::ModelProto model;
  model.set_ir_version(7);
  model.add_opset_import()->set_version(12);
  onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name("einsum");
  onnx::NodeProto* node = graph->add_node();
  node->set_op_type("Einsum");
  node->set_name("einsum0");
  onnx::AttributeProto* attr = node->add_attribute();
  attr->set_name("equation");
  attr->set_type(onnx::AttributeProto::STRING);
  attr->set_s(equation);
  for (size_t i = 0; i < shapes.size(); ++i) {
    std::string name = "x" + std::to_string(i);
    node->add_input(name);
    onnx::ValueInfoProto* in = graph->add_input();
    in->set_name(name);
    auto* tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : shapes[i]) tt->mutable_shape()->add_dim()->set_dim_value(d);
  }
  node->add_output("y");
  onnx::ValueInfoProto* out = graph->add_output();
  out->set_name("y");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  return model.SerializeAsString();
}

// Naive einsum over a letters-only equation with an explicit output.
HostTensor reference(const std::string& equation, const std::vector<HostTensor>& inputs) {
  size_t arrow = equation.find("->");
  std::vector<std::string> terms{""};
  for (char c : equation.substr(0, arrow)) {
    if (c == ',')
      terms.emplace_back();
    else
      terms.back().push_back(c);
  }
  std::string out_term = equation.substr(arrow + 2);
  std::map<char, int64_t> sizes;
  for (size_t i = 0; i < terms.size(); ++i)
    for (size_t d = 0; d < terms[i].size(); ++d)
      sizes[terms[i][d]] = std::max(sizes[terms[i][d]], inputs[i].shape[d]);
  Shape out_shape;
  for (char c : out_term) out_shape.push_back(sizes[c]);
  std::vector<double> acc(numel(out_shape), 0.0);
  std::vector<char> labels;
  for (auto& [c, n] : sizes) labels.push_back(c);
  std::map<char, int64_t> at;
  for (char c : labels) at[c] = 0;
  for (;;) {
    double prod = 1.0;
    for (size_t i = 0; i < terms.size(); ++i) {
      int64_t flat = 0;
      for (size_t d = 0; d < terms[i].size(); ++d)
        flat = flat * inputs[i].shape[d] + (inputs[i].shape[d] == 1 ? 0 : at[terms[i][d]]);
      prod *= inputs[i].data<float>()[flat];
    }
    int64_t o = 0;
    for (size_t d = 0; d < out_term.size(); ++d) o = o * out_shape[d] + at[out_term[d]];
    acc[o] += prod;
    size_t k = 0;
    for (; k < labels.size(); ++k) {
      if (++at[labels[k]] < sizes[labels[k]]) break;
      at[labels[k]] = 0;
    }
    if (k == labels.size()) break;
  }
  std::vector<float> values(acc.begin(), acc.end());
  return HostTensor::from(DType::Float32, out_shape, values);
}

class OnnxEinsum : public GpuTest {
 protected:
  // Runs `equation` on random inputs of `shapes` and compares with `letters`, the same
  // contraction written with letters only and an explicit output.
  void check(const std::string& equation, const std::vector<Shape>& shapes,
             const std::string& letters) {
    SCOPED_TRACE(equation);
    std::string bytes = einsum_model(equation, shapes);
    SessionOptions options;
    options.context = context();
    Session session(bytes.data(), bytes.size(), options);
    std::map<std::string, HostTensor> feeds;
    std::vector<HostTensor> inputs;
    for (size_t i = 0; i < shapes.size(); ++i) {
      inputs.push_back(
          HostTensor::from(DType::Float32, shapes[i], random_floats(numel(shapes[i]))));
      feeds["x" + std::to_string(i)] = inputs.back();
    }
    HostTensor got = session.run(feeds).at(0);
    HostTensor want = reference(letters, inputs);
    ASSERT_EQ(got.shape, want.shape);
    for (int64_t i = 0; i < want.numel(); ++i)
      EXPECT_NEAR(got.data<float>()[i], want.data<float>()[i],
                  1e-4 * (1 + std::abs(want.data<float>()[i])))
          << "element " << i;
  }

  void expect_unsupported(const std::string& equation, const std::vector<Shape>& shapes,
                          const std::string& text) {
    std::string bytes = einsum_model(equation, shapes);
    SessionOptions options;
    options.context = context();
    try {
      Session session(bytes.data(), bytes.size(), options);
      ADD_FAILURE() << equation << ": loaded; expected an error containing " << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Unsupported) << e.what();
      std::string m = e.what();
      EXPECT_NE(m.find("Einsum node 'einsum0'"), std::string::npos) << m;
      EXPECT_NE(m.find("'" + equation + "'"), std::string::npos) << m;
      EXPECT_NE(m.find(text), std::string::npos) << m;
    }
  }
};

TEST_F(OnnxEinsum, MatmulsAndBatchedMatmuls) {
  check("ij,jk", {{3, 4}, {4, 5}}, "ij,jk->ik");
  check("bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}, "bij,bjk->bik");
  check("bhqd,bhkd->bhqk", {{2, 3, 5, 4}, {2, 3, 6, 4}}, "bhqd,bhkd->bhqk");
  check("Ab,bC", {{3, 7}, {7, 2}}, "Ab,bC->AC");  // implicit output: ASCII order
}

TEST_F(OnnxEinsum, InnerOuterAndElementwiseProducts) {
  check("i,i", {{7}, {7}}, "i,i->");
  check("i,j->ij", {{3}, {4}}, "i,j->ij");
  check("bi,bj->bij", {{2, 3}, {2, 5}}, "bi,bj->bij");
  check("ij,ij->ij", {{3, 4}, {3, 4}}, "ij,ij->ij");
  check("ab,cb->", {{3, 4}, {5, 4}}, "ab,cb->");
}

TEST_F(OnnxEinsum, OneOperandTransposesAndSums) {
  check("ij->ji", {{3, 5}}, "ij->ji");
  check("ji", {{3, 5}}, "ji->ij");
  check("ij->i", {{3, 5}}, "ij->i");
  check("ijk->", {{2, 3, 4}}, "ijk->");
  check("ij->ij", {{2, 3}}, "ij->ij");
  check("i j k -> k i", {{2, 3, 4}}, "ijk->ki");
}

TEST_F(OnnxEinsum, EllipsisBroadcastAndSummedIndices) {
  check("...ij,...jk->...ik", {{2, 3, 4, 5}, {3, 5, 6}}, "abij,bjk->abik");
  check("...ij,...jk->...ik", {{2, 1, 4, 5}, {3, 5, 2}}, "abij,bjk->abik");
  check("...ij,...jk", {{4, 5}, {2, 5, 3}}, "ij,ajk->aik");
  check("b...i->...b", {{2, 3, 4, 5}}, "bxyi->xyb");
  check("abc,cd->ad", {{2, 3, 4}, {4, 5}}, "abc,cd->ad");
  check("ij,ik->j", {{1, 3}, {4, 5}}, "ij,ik->j");  // i: 1 against 4
}

TEST_F(OnnxEinsum, Diagonals) {
  check("ii->i", {{4, 4}}, "ii->i");
  check("bii->bi", {{2, 3, 3}}, "bii->bi");
  check("ii", {{3, 3}}, "ii->");  // the trace
  check("iji,jk->ik", {{3, 2, 3}, {2, 4}}, "iji,jk->ik");
}

TEST_F(OnnxEinsum, ThreeOperandsAreUnsupported) {
  expect_unsupported("i,i,i", {{3}, {3}, {3}}, "3 operands");
}

}  // namespace
}  // namespace vkgraph::testing
