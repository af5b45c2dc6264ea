// External data: tensors stored beside the model (location, offset, length), read from the
// model's folder and confined to it; bad files are clear errors.
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "gpu_test.h"
#include "vkgraph/session.h"

namespace vkgraph::testing {
namespace {

namespace fs = std::filesystem;

struct Weight {
  std::string name;
  Shape shape;
  std::vector<float> values;
};

// X [2,3] -> MatMul W1 [3,4] -> Add B [4] -> MatMul W2 [4,5] -> Y, with random weights.
class ExternalData : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    dir_ = fs::temp_directory_path() /
           ("vkgraph_external_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::mt19937 rng(15);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    auto random = [&](const std::string& name, Shape shape) {
      Weight w{name, shape, std::vector<float>(static_cast<size_t>(numel(shape)))};
      for (float& v : w.values) v = u(rng);
      return w;
    };
    weights_ = {random("W1", {3, 4}), random("B", {4}), random("W2", {4, 5})};
    x_ = HostTensor(DType::Float32, {2, 3});
    for (int i = 0; i < 6; ++i) x_.data<float>()[i] = u(rng);
  }
  void TearDown() override {
    fs::remove_all(dir_);
    GpuTest::TearDown();
  }

  // The model with every weight embedded.
  onnx::ModelProto model() const {
    onnx::ModelProto m;
    m.set_ir_version(8);
    m.add_opset_import()->set_version(13);
    onnx::GraphProto& g = *m.mutable_graph();
    g.set_name("external");
    auto value = [](onnx::ValueInfoProto& v, const std::string& name, Shape dims) {
      v.set_name(name);
      auto* tt = v.mutable_type()->mutable_tensor_type();
      tt->set_elem_type(onnx::TensorProto::FLOAT);
      for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
    };
    value(*g.add_input(), "X", {2, 3});
    value(*g.add_output(), "Y", {2, 5});
    for (const Weight& w : weights_) {
      onnx::TensorProto& t = *g.add_initializer();
      t.set_name(w.name);
      t.set_data_type(onnx::TensorProto::FLOAT);
      for (int64_t d : w.shape) t.add_dims(d);
      t.set_raw_data(w.values.data(), w.values.size() * sizeof(float));
    }
    auto node = [&](const char* op, std::vector<std::string> in, const std::string& out) {
      onnx::NodeProto& n = *g.add_node();
      n.set_op_type(op);
      n.set_name(out);
      for (auto& i : in) n.add_input(i);
      n.add_output(out);
    };
    node("MatMul", {"X", "W1"}, "h");
    node("Add", {"h", "B"}, "hb");
    node("MatMul", {"hb", "W2"}, "Y");
    return m;
  }

  // Moves initializer `name` into `file` at `offset` (onnx.save_model's layout: location,
  // offset, length); returns the tensor so a test can spoil its entries.
  onnx::TensorProto& externalize(onnx::ModelProto& m, const std::string& name,
                                 const std::string& file, size_t offset) {
    for (onnx::TensorProto& t : *m.mutable_graph()->mutable_initializer()) {
      if (t.name() != name) continue;
      fs::create_directories((dir_ / file).parent_path());
      std::fstream out(dir_ / file, std::ios::binary | std::ios::in | std::ios::out);
      if (!out.is_open()) out.open(dir_ / file, std::ios::binary | std::ios::out);
      out.seekp(static_cast<std::streamoff>(offset));
      out.write(t.raw_data().data(), static_cast<std::streamsize>(t.raw_data().size()));
      auto entry = [&](const char* key, const std::string& value) {
        auto* e = t.add_external_data();
        e->set_key(key);
        e->set_value(value);
      };
      entry("location", file);
      entry("offset", std::to_string(offset));
      entry("length", std::to_string(t.raw_data().size()));
      t.clear_raw_data();
      t.set_data_location(onnx::TensorProto::EXTERNAL);
      return t;
    }
    throw std::runtime_error("no initializer " + name);
  }

  // W1 alone in one file, B and W2 in another (W2 at a page offset), as several files.
  onnx::ModelProto split_model() {
    onnx::ModelProto m = model();
    externalize(m, "W1", "w1.bin", 0);
    externalize(m, "B", "weights/rest.bin", 0);
    externalize(m, "W2", "weights/rest.bin", 4096);
    return m;
  }

  std::string save(const onnx::ModelProto& m, const std::string& name = "model.onnx") const {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << m.SerializeAsString();
    return path;
  }

  SessionOptions options() const {
    SessionOptions o;
    o.context = context();
    return o;
  }

  std::vector<float> run(Session& s) const {
    HostTensor y = s.run({{"X", x_}})[0];
    return std::vector<float>(y.data<float>(), y.data<float>() + y.numel());
  }

  std::vector<float> embedded_result() const {
    const std::string bytes = model().SerializeAsString();
    Session s(bytes.data(), bytes.size(), options());
    return run(s);
  }

  fs::path dir_;
  std::vector<Weight> weights_;
  HostTensor x_;
};

TEST_F(ExternalData, LoadsFromTheModelsFolderAcrossSeveralFiles) {
  const std::vector<float> want = embedded_result();
  Session s(save(split_model()), options());
  EXPECT_EQ(run(s), want);
  // The reference itself is the matmul chain, not zeros.
  double sum = 0;
  for (float v : want) sum += std::abs(v);
  EXPECT_GT(sum, 0.1);
}

TEST_F(ExternalData, OffsetWithoutLengthReadsTheTensorsSize) {
  onnx::ModelProto m = split_model();
  for (onnx::TensorProto& t : *m.mutable_graph()->mutable_initializer())
    if (t.name() == "W2") t.mutable_external_data()->RemoveLast();  // drop "length"
  Session s(save(m), options());
  EXPECT_EQ(run(s), embedded_result());
}

TEST_F(ExternalData, BytesNeedTheDataFolder) {
  const std::string bytes = split_model().SerializeAsString();
  expect_error([&] { Session(bytes.data(), bytes.size(), options()); }, ErrorKind::InvalidArgument,
               {"tensor 'W1'", "external data", "external_data_dir"});
  SessionOptions o = options();
  o.external_data_dir = dir_.string();
  Session s(bytes.data(), bytes.size(), o);
  EXPECT_EQ(run(s), embedded_result());
}

TEST_F(ExternalData, MissingAndTruncatedFilesAreClearErrors) {
  const std::string path = save(split_model());
  fs::resize_file(dir_ / "weights/rest.bin", 4096 + 40);  // W2 needs 80 bytes
  expect_error([&] { Session(path, options()); }, ErrorKind::ModelFormat,
               {"tensor 'W2'", "rest.bin is truncated", "needs 80 from offset 4096"});
  fs::remove(dir_ / "w1.bin");
  expect_error([&] { Session(path, options()); }, ErrorKind::Io,
               {"tensor 'W1'", "w1.bin", "does not exist"});
}

TEST_F(ExternalData, ALengthOtherThanTheTensorsIsAnError) {
  onnx::ModelProto m = model();
  onnx::TensorProto& t = externalize(m, "B", "b.bin", 0);
  t.mutable_external_data(2)->set_value("12");
  expect_error([&] { Session(save(m), options()); }, ErrorKind::ModelFormat,
               {"tensor 'B'", "length 12", "16 bytes"});
  t.mutable_external_data(1)->set_value("-4");
  expect_error([&] { Session(save(m), options()); }, ErrorKind::ModelFormat,
               {"tensor 'B'", "offset '-4'"});
}

TEST_F(ExternalData, LocationsStayInsideTheModelsFolder) {
  fs::create_directories(dir_ / "model");
  onnx::ModelProto m = model();
  onnx::TensorProto& t = externalize(m, "B", "b.bin", 0);  // dir_/b.bin: outside dir_/model
  t.mutable_external_data(0)->set_value("../b.bin");
  expect_error([&] { Session(save(m, "model/model.onnx"), options()); }, ErrorKind::ModelFormat,
               {"tensor 'B'", "'../b.bin'", "leads out of the model's folder"});
  t.mutable_external_data(0)->set_value((dir_ / "b.bin").string());
  expect_error([&] { Session(save(m, "model/model.onnx"), options()); }, ErrorKind::ModelFormat,
               {"tensor 'B'", "is absolute"});
  // A symlink inside the folder that leads out of it.
  fs::create_symlink(dir_ / "b.bin", dir_ / "model" / "link.bin");
  t.mutable_external_data(0)->set_value("link.bin");
  expect_error([&] { Session(save(m, "model/model.onnx"), options()); }, ErrorKind::ModelFormat,
               {"tensor 'B'", "'link.bin'", "outside the model's folder"});
  // A folder is not a data file.
  fs::create_directories(dir_ / "model" / "sub");
  t.mutable_external_data(0)->set_value("sub");
  expect_error([&] { Session(save(m, "model/model.onnx"), options()); }, ErrorKind::ModelFormat,
               {"tensor 'B'", "not a regular file"});
}

TEST_F(ExternalData, UnknownKeysAreErrors) {
  onnx::ModelProto m = model();
  onnx::TensorProto& t = externalize(m, "B", "b.bin", 0);
  auto* e = t.add_external_data();
  e->set_key("basepath");
  e->set_value("/");
  expect_error([&] { Session(save(m), options()); }, ErrorKind::ModelFormat,
               {"tensor 'B'", "unknown external data key 'basepath'"});
}

}  // namespace
}  // namespace vkgraph::testing
