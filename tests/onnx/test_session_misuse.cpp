// Misuse of the Session API: wrong, missing and extra feeds and unreadable models are named in
// the error, and the session stays usable after them.
#include "load_test_util.h"

namespace vkgraph::testing {
namespace {

class SessionMisuse : public GpuTest {
 protected:
  Session open() {
    SessionOptions options;
    options.context = context();
    return Session(kDigitsModel, options);
  }
  std::map<std::string, HostTensor> good_feeds(const Session& s) {
    std::map<std::string, HostTensor> feeds;
    for (auto& in : s.inputs()) {
      Shape shape = in.shape;
      for (auto& d : shape) d = d < 0 ? 1 : d;
      feeds[in.name] = random_input(in, shape, rng64);
    }
    return feeds;
  }
  Rng rng64{7};
};

TEST_F(SessionMisuse, GoodFeedsRun) {
  Session s = open();
  EXPECT_EQ(s.run(good_feeds(s)).size(), s.outputs().size());
}

TEST_F(SessionMisuse, WrongMissingAndExtraInputsAreNamed) {
  Session s = open();
  const std::string name = s.inputs().at(0).name;
  auto feeds = good_feeds(s);

  auto renamed = feeds;
  renamed["no_such_input"] = renamed.at(name);
  renamed.erase(name);
  expect_error([&] { s.run(renamed); }, ErrorKind::InvalidArgument,
               "unknown input 'no_such_input'");
  expect_error([&] { s.run({}); }, ErrorKind::InvalidArgument, "missing input '" + name + "'");
  auto extra = feeds;
  extra["extra"] = feeds.at(name);
  expect_error([&] { s.run(extra); }, ErrorKind::InvalidArgument, "unknown input 'extra'");
  expect_error([&] { s.run(feeds, {"no_such_output"}); }, ErrorKind::InvalidArgument,
               "unknown output 'no_such_output'");
}

TEST_F(SessionMisuse, WrongShapeDtypeAndSizeAreNamed) {
  Session s = open();
  const ValueInfo& in = s.inputs().at(0);
  auto feeds = good_feeds(s);
  const HostTensor good = feeds.at(in.name);

  Shape bigger = good.shape;
  bigger.back() += 1;
  feeds[in.name] = HostTensor(in.dtype, bigger);
  expect_error([&] { s.run(feeds); }, ErrorKind::InvalidArgument, "'" + in.name + "' has shape");
  Shape deeper = good.shape;
  deeper.push_back(1);
  feeds[in.name] = HostTensor(in.dtype, deeper);
  expect_error([&] { s.run(feeds); }, ErrorKind::InvalidArgument, "'" + in.name + "' has shape");
  feeds[in.name] = HostTensor(DType::Int32, good.shape);
  expect_error([&] { s.run(feeds); }, ErrorKind::InvalidArgument, "must be");
  feeds[in.name] = good;
  feeds[in.name].bytes.resize(good.bytes.size() - 1);
  expect_error([&] { s.run(feeds); }, ErrorKind::InvalidArgument, "bytes for shape");
  // Still usable after the errors.
  feeds[in.name] = good;
  EXPECT_EQ(s.run(feeds).size(), s.outputs().size());
}

TEST_F(SessionMisuse, UnreadableModels) {
  SessionOptions options;
  options.context = context();
  expect_error([&] { Session("/no/such/model.onnx", options); }, ErrorKind::Io,
               "/no/such/model.onnx");
  expect_error([&] { Session(nullptr, 0, options); }, ErrorKind::ModelFormat, "no graph");
  const std::string junk = "this is not a model";
  expect_error([&] { Session(junk.data(), junk.size(), options); }, ErrorKind::ModelFormat,
               "protobuf parse failed");
}

}  // namespace
}  // namespace vkgraph::testing
