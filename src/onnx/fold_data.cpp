// Host evaluators of the ops whose output size depends on their input values:
// NonMaxSuppression and Unique. The importer runs them once their inputs are known at load
// (constants, or model inputs the graph is specialised to); on values computed on the device
// they need a run-time readback.
#include <numeric>

#include "onnx/fold_eval.h"

namespace vkgraph::fold::detail {
namespace {

// ---------------------------------------------------------------------------------------------
// NonMaxSuppression (opset 10/11), as ONNX specifies it and onnxruntime implements it.

struct Box {
  double y1, x1, y2, x2;  // min corner, max corner
  double area() const { return (y2 - y1) * (x2 - x1); }
};

// center_point_box 0: [y1, x1, y2, x2] of any diagonal pair; 1: [x_center, y_center, w, h].
Box box_at(const HostTensor& boxes, int64_t first, bool center_point) {
  const double a = boxes.as_double(first), b = boxes.as_double(first + 1);
  const double c = boxes.as_double(first + 2), d = boxes.as_double(first + 3);
  if (center_point) return {b - d / 2, a - c / 2, b + d / 2, a + c / 2};
  return {std::min(a, c), std::min(b, d), std::max(a, c), std::max(b, d)};
}

// Whether `b` overlaps an already selected `a` by more than the threshold. Degenerate boxes
// (no area) never suppress or get suppressed.
bool suppresses(const Box& a, const Box& b, double iou_threshold) {
  const double area_a = a.area(), area_b = b.area();
  if (area_a <= 0 || area_b <= 0) return false;
  const double h = std::min(a.y2, b.y2) - std::max(a.y1, b.y1);
  const double w = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
  if (h <= 0 || w <= 0) return false;
  const double intersection = h * w;
  return intersection / (area_a + area_b - intersection) > iou_threshold;
}

double optional_scalar(const Node& n, size_t i, const char* what, double fallback) {
  if (!n.opt(i)) return fallback;
  return n.scalar(i, what).as_double(0);
}

HostTensor eval_non_max_suppression(const Node& n) {
  const HostTensor& boxes = n.in(0);
  const HostTensor& scores = n.in(1);
  n.require(boxes.shape.size() == 3 && boxes.shape[2] == 4,
            "boxes must be [num_batches, spatial_dimension, 4], got " + shape_str(boxes.shape));
  n.require(scores.shape.size() == 3,
            "scores must be [num_batches, num_classes, spatial_dimension], got " +
                shape_str(scores.shape));
  n.require(is_float(boxes.dtype) && is_float(scores.dtype), "boxes and scores must be float");
  const int64_t batches = boxes.shape[0], spatial = boxes.shape[1], classes = scores.shape[1];
  n.require(scores.shape[0] == batches && scores.shape[2] == spatial,
            "scores " + shape_str(scores.shape) + " do not match boxes " + shape_str(boxes.shape));
  int64_t max_per_class = 0;
  if (n.opt(2))
    max_per_class =
        n.int_values(n.scalar(2, "max_output_boxes_per_class"), "max_output_boxes_per_class")[0];
  const double iou_threshold = optional_scalar(n, 3, "iou_threshold", 0.0);
  n.require(iou_threshold >= 0 && iou_threshold <= 1,
            "iou_threshold must be in [0, 1], got " + std::to_string(iou_threshold));
  const bool has_score_threshold = n.opt(4) != nullptr;
  const double score_threshold = optional_scalar(n, 4, "score_threshold", 0.0);
  const int64_t center = n.attrs.get_int("center_point_box", 0);
  n.require(center == 0 || center == 1,
            "center_point_box must be 0 or 1, got " + std::to_string(center));

  std::vector<int64_t> selected;  // triples (batch, class, box)
  for (int64_t b = 0; max_per_class > 0 && b < batches; ++b) {
    std::vector<Box> all(static_cast<size_t>(spatial));
    for (int64_t i = 0; i < spatial; ++i) all[i] = box_at(boxes, (b * spatial + i) * 4, center);
    for (int64_t c = 0; c < classes; ++c) {
      const int64_t base = (b * classes + c) * spatial;
      std::vector<int64_t> order;
      for (int64_t i = 0; i < spatial; ++i)
        if (!has_score_threshold || scores.as_double(base + i) > score_threshold)
          order.push_back(i);
      // Highest score first; equal scores keep box order.
      std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
        return scores.as_double(base + x) > scores.as_double(base + y);
      });
      std::vector<int64_t> kept;
      for (int64_t i : order) {
        if (static_cast<int64_t>(kept.size()) >= max_per_class) break;
        bool suppressed = false;
        for (int64_t k : kept) suppressed = suppressed || suppresses(all[k], all[i], iou_threshold);
        if (suppressed) continue;
        kept.push_back(i);
        selected.insert(selected.end(), {b, c, i});
      }
    }
  }
  HostTensor out = n.output(DType::Int64, {static_cast<int64_t>(selected.size() / 3), 3});
  std::copy(selected.begin(), selected.end(), out.data<int64_t>());
  return out;
}

// ---------------------------------------------------------------------------------------------
// Unique (opset 11): with an axis, the items are the slices along it; without, the elements
// of the flattened input. Items compare by value, element by element in row-major order.

std::vector<HostTensor> eval_unique(const Node& n) {
  const HostTensor& x = n.in(0);
  const bool sorted = n.attrs.get_int("sorted", 1) != 0;
  const auto axis_it = n.attrs.ints.find("axis");
  const bool has_axis = axis_it != n.attrs.ints.end();
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  const int64_t axis = has_axis ? n.axis(axis_it->second, rank) : 0;
  const Shape shape = has_axis ? x.shape : Shape{x.numel()};
  // The input as [outer, items, inner]: item j is outer x inner elements.
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t items = shape[axis];
  const bool exact_int = !is_float(x.dtype);
  auto element = [&](int64_t item, int64_t k) {  // k-th element of an item, row-major
    return (k / inner * items + item) * inner + k % inner;
  };
  const int64_t item_size = outer * inner;
  // -1, 0, 1 as item a sorts before, equal to, after item b (NaN compares equal to NaN).
  auto compare = [&](int64_t a, int64_t b) {
    for (int64_t k = 0; k < item_size; ++k) {
      const int64_t ea = element(a, k), eb = element(b, k);
      if (exact_int) {
        const int64_t va = x.as_int(ea), vb = x.as_int(eb);
        if (va != vb) return va < vb ? -1 : 1;
      } else {
        const double va = x.as_double(ea), vb = x.as_double(eb);
        if (va == vb || (std::isnan(va) && std::isnan(vb))) continue;
        if (std::isnan(va)) return 1;  // NaN sorts last, as NumPy
        if (std::isnan(vb)) return -1;
        return va < vb ? -1 : 1;
      }
    }
    return 0;
  };
  // Items in sorted order (stable: equal items keep their first occurrence first).
  std::vector<int64_t> order(static_cast<size_t>(items));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return compare(a, b) < 0; });
  std::vector<int64_t> firsts;  // the first occurrence of each distinct item, sorted by value
  std::vector<int64_t> group(static_cast<size_t>(items));  // item -> index into firsts
  for (size_t i = 0; i < order.size(); ++i) {
    if (i == 0 || compare(order[i - 1], order[i]) != 0) firsts.push_back(order[i]);
    group[order[i]] = static_cast<int64_t>(firsts.size()) - 1;
  }
  // Output order: by value when sorted, else by first occurrence.
  std::vector<int64_t> rank_of(firsts.size());  // index into firsts -> output position
  std::iota(rank_of.begin(), rank_of.end(), 0);
  if (!sorted) {
    std::vector<int64_t> by_first(firsts.size());
    std::iota(by_first.begin(), by_first.end(), 0);
    std::sort(by_first.begin(), by_first.end(),
              [&](int64_t a, int64_t b) { return firsts[a] < firsts[b]; });
    for (size_t p = 0; p < by_first.size(); ++p) rank_of[by_first[p]] = static_cast<int64_t>(p);
  }
  const int64_t unique = static_cast<int64_t>(firsts.size());
  Shape y_shape = shape;
  y_shape[axis] = unique;
  HostTensor y = n.output(x.dtype, y_shape);
  HostTensor indices = n.output(DType::Int64, {unique});
  HostTensor inverse = n.output(DType::Int64, {items});
  HostTensor counts = n.output(DType::Int64, {unique});
  for (int64_t g = 0; g < unique; ++g) {
    const int64_t pos = rank_of[g];
    indices.data<int64_t>()[pos] = firsts[g];
    for (int64_t k = 0; k < item_size; ++k)
      copy_element(x, element(firsts[g], k), y, (k / inner * unique + pos) * inner + k % inner);
  }
  for (int64_t j = 0; j < items; ++j) {
    const int64_t pos = rank_of[group[j]];
    inverse.data<int64_t>()[j] = pos;
    ++counts.data<int64_t>()[pos];
  }
  return {std::move(y), std::move(indices), std::move(inverse), std::move(counts)};
}

}  // namespace

void add_data_dependent_evaluators(MultiEvaluatorTable& table) {
  table["NonMaxSuppression"] = [](const Node& n) {
    return std::vector<HostTensor>{eval_non_max_suppression(n)};
  };
  table["Unique"] = eval_unique;
}

}  // namespace vkgraph::fold::detail
