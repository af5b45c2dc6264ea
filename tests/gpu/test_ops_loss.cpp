// nll_loss against a double-precision reference: every reduction, with and without weights,
// ignore_index (also negative), Int32 and Int64 targets, and the bad-target rules.
#include <cmath>
#include <optional>

#include "shape_test_util.h"

namespace vkgraph::testing {
namespace {

class OpsLoss : public GpuTest {};

// loss (reduction none) and the weight applied per target element, in double.
struct RefLoss {
  std::vector<double> loss, applied;
};

RefLoss ref_nll(const HostTensor& x, const HostTensor& target, const HostTensor* weight,
                std::optional<int64_t> ignore) {
  const int64_t n = x.shape[0], c = x.shape[1];
  const int64_t inner = x.numel() / (n * c);
  RefLoss r;
  for (int64_t i = 0; i < target.numel(); ++i) {
    const int64_t t = target.as_int(i);
    if (ignore && t == *ignore) {
      r.loss.push_back(0);
      r.applied.push_back(0);
      continue;
    }
    const double w = weight ? weight->data<float>()[t] : 1.0;
    const int64_t s = i / inner, k = i % inner;
    r.loss.push_back(-static_cast<double>(x.data<float>()[(s * c + t) * inner + k]) * w);
    r.applied.push_back(w);
  }
  return r;
}

HostTensor random_targets(std::mt19937& rng, DType dtype, Shape shape, int64_t classes,
                          std::optional<int64_t> ignore) {
  HostTensor t(dtype, std::move(shape));
  std::uniform_int_distribution<int64_t> d(0, classes - 1);
  std::bernoulli_distribution ignored(0.25);
  for (int64_t i = 0; i < t.numel(); ++i) {
    int64_t v = ignore && ignored(rng) ? *ignore : d(rng);
    if (dtype == DType::Int32)
      t.data<int32_t>()[i] = static_cast<int32_t>(v);
    else
      t.data<int64_t>()[i] = v;
  }
  return t;
}

TEST_F(OpsLoss, NllMatchesReference) {
  struct Case {
    Shape x;
    DType target_dtype;
    bool weighted;
    std::optional<int64_t> ignore;
  };
  const Case cases[] = {
      {{4, 5}, DType::Int64, false, std::nullopt},
      {{3, 7, 6}, DType::Int32, true, 2},
      {{2, 4, 3, 5}, DType::Int64, true, -1},
      {{2, 3, 2, 2, 2, 2, 3}, DType::Int64, false, int64_t{1} << 40},  // rank 7, wide ignore
  };
  int k = 0;
  for (const Case& c : cases) {
    for (ops::LossReduction red :
         {ops::LossReduction::None, ops::LossReduction::Sum, ops::LossReduction::Mean}) {
      SCOPED_TRACE("case " + std::to_string(k) + " reduction " +
                   std::to_string(static_cast<int>(red)));
      auto x = random_tensor(rng, DType::Float32, c.x);
      Shape ts = c.x;
      ts.erase(ts.begin() + 1);
      auto target = random_targets(rng, c.target_dtype, ts, c.x[1], c.ignore);
      auto weight = HostTensor::from(DType::Float32, {c.x[1]}, random_floats(c.x[1], 0.1f, 2.f));
      std::vector<HostTensor> inputs{x, target};
      if (c.weighted) inputs.push_back(weight);
      ops::NllLossOptions o;
      o.reduction = red;
      o.ignore_index = c.ignore;
      auto y = run_one(inputs, [&](ComputeGraph& g, auto in) {
        return ops::nll_loss(g, in[0], in[1],
                             c.weighted ? std::optional<TensorRef>(in[2]) : std::nullopt, o);
      });
      RefLoss r = ref_nll(x, target, c.weighted ? &weight : nullptr, c.ignore);
      HostTensor want;
      if (red == ops::LossReduction::None) {
        std::vector<float> f(r.loss.begin(), r.loss.end());
        want = HostTensor::from(DType::Float32, ts, f);
      } else {
        double sum = 0, wsum = 0;
        for (size_t i = 0; i < r.loss.size(); ++i) sum += r.loss[i], wsum += r.applied[i];
        float v = static_cast<float>(red == ops::LossReduction::Sum ? sum : sum / wsum);
        want = HostTensor::from(DType::Float32, {}, std::vector<float>{v});
      }
      expect_near(y, want, 1e-5f);
    }
    ++k;
  }
}

TEST_F(OpsLoss, ComputedOutOfRangeTargetGivesNaN) {
  auto x = random_tensor(rng, DType::Float32, {3, 4});
  auto target = make_tensor<int64_t>(DType::Int64, {3}, {1, 4, -2});
  ops::NllLossOptions none;
  none.reduction = ops::LossReduction::None;
  auto y = run_one({x, target}, [&](ComputeGraph& g, auto in) {
    return ops::nll_loss(g, in[0], in[1], std::nullopt, none);
  });
  EXPECT_FLOAT_EQ(y.data<float>()[0], -x.data<float>()[1]);
  EXPECT_TRUE(std::isnan(y.data<float>()[1]));
  EXPECT_TRUE(std::isnan(y.data<float>()[2]));
  auto mean = run_one({x, target},
                      [&](ComputeGraph& g, auto in) { return ops::nll_loss(g, in[0], in[1]); });
  EXPECT_TRUE(std::isnan(mean.data<float>()[0]));
}

TEST_F(OpsLoss, EmptyBatch) {
  auto x = HostTensor(DType::Float32, {0, 3});
  auto target = HostTensor(DType::Int64, {0});
  auto sum = run_ops({x, target}, [&](ComputeGraph& g, auto in) {
    ops::NllLossOptions o;
    o.reduction = ops::LossReduction::Sum;
    return std::vector<TensorRef>{ops::nll_loss(g, in[0], in[1], std::nullopt, o)};
  });
  EXPECT_EQ(sum[0].data<float>()[0], 0.f);
}

class OpsLossErrors : public OpErrorTest {};

TEST_F(OpsLossErrors, ShapesAndConstantTargets) {
  expect_error(ErrorKind::InvalidArgument, "nll_loss", "without its class dim", [&] {
    ops::nll_loss(g, input({2, 3, 4}), g.add_input({2, 3}, DType::Int64, "t"));
  });
  expect_error(ErrorKind::InvalidArgument, "nll_loss", "out of range for 3 classes", [&] {
    auto t = g.add_constant(HostTensor::from(DType::Int64, {2}, std::vector<int64_t>{0, 3}));
    ops::nll_loss(g, input({2, 3}), t);
  });
  expect_error(ErrorKind::InvalidArgument, "nll_loss", "weight", [&] {
    ops::nll_loss(g, input({2, 3}), g.add_input({2}, DType::Int64, "t2"), input({4}));
  });
}

}  // namespace
}  // namespace vkgraph::testing
