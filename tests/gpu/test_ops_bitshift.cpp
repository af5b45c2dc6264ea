// BitShift on every unsigned width, against a host reference: random values and shift
// amounts that include 0, the width and beyond, values with the top bit set, and broadcasting.
#include <random>

#include "shape_test_util.h"

namespace vkgraph::testing {
namespace {

class OpsBitShift : public GpuTest {
 protected:
  // Random `bits`-bit values as their storage holds them (Int32 for 8/16, Int64 for 32/64).
  HostTensor values(const Shape& shape, uint32_t bits, bool amounts) {
    const DType dtype = bits <= 16 ? DType::Int32 : DType::Int64;
    HostTensor t(dtype, shape);
    std::uniform_int_distribution<uint64_t> any;
    for (int64_t i = 0; i < t.numel(); ++i) {
      uint64_t v = any(rng);
      if (bits < 64) v &= (uint64_t{1} << bits) - 1;
      if (amounts) v = v % (bits + 3);  // beyond the width too
      if (!amounts && i % 5 == 0) v = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
      if (dtype == DType::Int32)
        t.data<int32_t>()[i] = static_cast<int32_t>(v);
      else
        t.data<int64_t>()[i] = static_cast<int64_t>(v);
    }
    return t;
  }
};

uint64_t reference(uint64_t x, uint64_t s, bool left, uint32_t bits) {
  const uint64_t mask = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  if (s >= bits) return 0;
  return (left ? x << s : x >> s) & mask;
}

TEST_F(OpsBitShift, EveryWidthBothDirectionsBroadcast) {
  for (uint32_t bits : {8u, 16u, 32u, 64u}) {
    for (bool left : {true, false}) {
      SCOPED_TRACE(std::to_string(bits) + (left ? " left" : " right"));
      const HostTensor x = values({3, 1, 37}, bits, false);
      const HostTensor s = values({4, 1}, bits, true);
      const HostTensor y = run_one({x, s}, [&](ComputeGraph& g, auto in) {
        return ops::bit_shift(g, in[0], in[1],
                              left ? ops::ShiftDirection::Left : ops::ShiftDirection::Right, bits);
      });
      const Shape out{3, 4, 37};
      HostTensor want(x.dtype, out);
      for (int64_t i = 0; i < want.numel(); ++i) {
        const auto c = unravel(i, out);
        const uint64_t xv = static_cast<uint64_t>(x.as_int(broadcast_index(c, out, x.shape)));
        const uint64_t sv = static_cast<uint64_t>(s.as_int(broadcast_index(c, out, s.shape)));
        const uint64_t r =
            reference(bits < 64 ? xv & ((uint64_t{1} << bits) - 1) : xv, sv, left, bits);
        if (want.dtype == DType::Int32)
          want.data<int32_t>()[i] = static_cast<int32_t>(r);
        else
          want.data<int64_t>()[i] = static_cast<int64_t>(r);
      }
      expect_same(y, want);
    }
  }
}

TEST_F(OpErrorTest, BitShiftChecksWidthAndStorage) {
  TensorRef a = g.add_input({4}, DType::Int32, "a"), b = g.add_input({4}, DType::Int32, "b");
  TensorRef c = g.add_input({4}, DType::Int64, "c");
  expect_error(ErrorKind::InvalidArgument, "bit_shift_left", "width 12",
               [&] { ops::bit_shift(g, a, b, ops::ShiftDirection::Left, 12); });
  expect_error(ErrorKind::InvalidArgument, "bit_shift_right", "held in int64",
               [&] { ops::bit_shift(g, a, b, ops::ShiftDirection::Right, 32); });
  expect_error(ErrorKind::InvalidArgument, "bit_shift_left", "dtypes differ",
               [&] { ops::bit_shift(g, a, c, ops::ShiftDirection::Left, 8); });
}

}  // namespace
}  // namespace vkgraph::testing
