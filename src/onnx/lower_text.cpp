// TfIdfVectorizer over integer token ids (ops/tfidf.h); string tokens are not supported.
#include "onnx/importer.h"
#include "onnx/lower_util.h"

namespace vkgraph::onnx_import {
namespace {

std::vector<Value> lower_tfidf(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  im.require_inputs(node, 1, 1);
  for (const onnx::AttributeProto& attr : node.attribute())
    if (attr.name() == "pool_strings")
      im.fail(node, "string tokens (pool_strings) are not supported");
  auto ints = [&](const char* name) {
    const std::vector<int64_t>* v = a.find_ints(name);
    if (!v) im.fail(node, std::string("missing attribute '") + name + "'");
    return *v;
  };
  auto required = [&](const char* name) {
    if (!a.ints.count(name)) im.fail(node, std::string("missing attribute '") + name + "'");
    return a.ints.at(name);
  };
  ops::NgramPool p;
  p.pool = a.find_ints("pool_int64s") ? *a.find_ints("pool_int64s") : std::vector<int64_t>{};
  p.level_starts = ints("ngram_counts");
  p.columns = ints("ngram_indexes");
  if (auto w = a.float_lists.find("weights"); w != a.float_lists.end()) p.weights = w->second;
  p.min_gram_length = required("min_gram_length");
  p.max_gram_length = required("max_gram_length");
  p.max_skip_count = required("max_skip_count");
  auto mode = a.strings.find("mode");
  if (mode == a.strings.end()) im.fail(node, "missing attribute 'mode'");
  if (mode->second == "TF")
    p.mode = ops::TfIdfMode::TF;
  else if (mode->second == "IDF")
    p.mode = ops::TfIdfMode::IDF;
  else if (mode->second == "TFIDF")
    p.mode = ops::TfIdfMode::TFIDF;
  else
    throw Error(ErrorKind::InvalidArgument,
                im.where(node) + ": mode must be TF, IDF or TFIDF, got '" + mode->second + "'");
  return with_node(im, node, [&] {
    return std::vector<Value>{device(im, ops::tfidf_vectorize(im.graph(), im.tensor(node, 0), p))};
  });
}

}  // namespace

void register_text(LoweringTable& t) {
  t["TfIdfVectorizer"] = lower_tfidf;
}

}  // namespace vkgraph::onnx_import
