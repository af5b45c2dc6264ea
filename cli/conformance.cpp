#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include "cli.h"
#include "vkgraph/error.h"
#include "vkgraph/onnx_tensor.h"

namespace fs = std::filesystem;

namespace vkgraph::cli {

const char* status_name(CaseResult::Status s) {
  switch (s) {
    case CaseResult::Status::Pass:
      return "pass";
    case CaseResult::Status::Fail:
      return "fail";
    case CaseResult::Status::Unsupported:
      return "unsupported";
    case CaseResult::Status::Error:
      return "error";
  }
  return "?";
}

namespace {

std::vector<std::string> sorted_files(const fs::path& dir, const std::string& prefix) {
  std::vector<std::pair<int, std::string>> found;
  for (auto& e : fs::directory_iterator(dir)) {
    std::string n = e.path().filename().string();
    if (n.rfind(prefix, 0) == 0 && n.size() > prefix.size() + 3 && n.ends_with(".pb"))
      found.push_back({std::stoi(n.substr(prefix.size())), e.path().string()});
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& f : found) out.push_back(f.second);
  return out;
}

// Empty when `got` matches `want` within tolerance; otherwise what differs.
std::string compare(const HostTensor& want, const HostTensor& got, Tolerance tol) {
  if (want.shape != got.shape)
    return "shape " + shape_str(got.shape) + ", expected " + shape_str(want.shape);
  bool exact = want.dtype != DType::Float32 && want.dtype != DType::Float16;
  int64_t bad = 0, first = -1;
  double worst = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    double w = want.as_double(i), g = got.as_double(i);
    bool ok =
        exact ? w == g
              : (std::isnan(w)
                     ? std::isnan(g)
                     : (std::isinf(w) ? w == g
                                      : std::fabs(w - g) <= tol.atol + tol.rtol * std::fabs(w)));
    if (!ok) {
      if (first < 0) first = i;
      ++bad;
      if (std::isfinite(w) && std::isfinite(g)) worst = std::max(worst, std::fabs(w - g));
    }
  }
  if (!bad) return "";
  return std::to_string(bad) + "/" + std::to_string(want.numel()) + " elements differ; first at " +
         std::to_string(first) + ": got " + std::to_string(got.as_double(first)) + ", expected " +
         std::to_string(want.as_double(first)) + "; max abs diff " + std::to_string(worst);
}

// ONNX 1.12 writes bfloat16 test tensors as UINT16 (NumPy has no bfloat16), which read as
// Int32 holding the bit patterns; where the model declares the value BFLOAT16, take them as such
// (vkgraph holds bfloat16 values in float32, onnx_tensor.h).
HostTensor as_declared(HostTensor t, int32_t declared_onnx_type) {
  if (declared_onnx_type != 16 /* BFLOAT16 */ || t.dtype != DType::Int32) return t;
  HostTensor f(DType::Float32, t.shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const int32_t bits = t.data<int32_t>()[i];
    if (bits < 0 || bits > 0xffff)
      throw Error(ErrorKind::ModelFormat,
                  "bfloat16 bit pattern " + std::to_string(bits) + " out of range");
    f.data<float>()[i] = onnx_io::bfloat16_to_float(static_cast<uint16_t>(bits));
  }
  return f;
}

}  // namespace

CaseResult run_case(const std::string& dir, std::shared_ptr<vk::Context> context, Tolerance tol,
                    bool fp16, std::shared_ptr<const ops::Tuning> tuning) {
  using S = CaseResult::Status;
  try {
    fs::path model = fs::path(dir) / "model.onnx";
    if (!fs::exists(model)) return {S::Error, "no model.onnx"};
    std::vector<fs::path> sets;
    for (auto& e : fs::directory_iterator(dir))
      if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0)
        sets.push_back(e.path());
    std::sort(sets.begin(), sets.end());
    if (sets.empty()) return {S::Error, "no test_data_set_* folder"};
    SessionOptions options;
    options.context = context;
    options.fp16 = fp16;
    options.graph.tuning = tuning;
    std::unique_ptr<Session> session;
    try {
      session = std::make_unique<Session>(model.string(), options);
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::Unsupported) return {S::Unsupported, e.what()};
      throw;
    }
    for (auto& set : sets) {
      std::map<std::string, HostTensor> feeds;
      auto input_files = sorted_files(set, "input_");
      auto output_files = sorted_files(set, "output_");
      for (auto& f : input_files) {
        std::string name;
        HostTensor t = onnx_io::read_tensor_pb(f, &name);
        feeds[name] = std::move(t);
      }
      {
        // Inputs may be given positionally when the .pb files carry no names.
        const auto& ins = session->inputs();
        if (feeds.count("") || feeds.size() != ins.size()) {
          std::map<std::string, HostTensor> renamed;
          for (size_t i = 0; i < input_files.size() && i < ins.size(); ++i)
            renamed[ins[i].name] = onnx_io::read_tensor_pb(input_files[i]);
          feeds = std::move(renamed);
        }
        for (const ValueInfo& in : ins)
          if (auto it = feeds.find(in.name); it != feeds.end())
            it->second = as_declared(std::move(it->second), in.onnx_type);
      }
      std::vector<HostTensor> got;
      try {
        got = session->run(feeds);
      } catch (const Error& e) {
        if (e.kind() == ErrorKind::Unsupported) return {S::Unsupported, e.what()};
        throw;
      }
      if (got.size() < output_files.size())
        return {S::Fail, "model produced " + std::to_string(got.size()) + " outputs, expected " +
                             std::to_string(output_files.size())};
      for (size_t i = 0; i < output_files.size(); ++i) {
        const int32_t declared =
            i < session->outputs().size() ? session->outputs()[i].onnx_type : 0;
        std::string diff =
            compare(as_declared(onnx_io::read_tensor_pb(output_files[i]), declared), got[i], tol);
        if (!diff.empty())
          return {S::Fail,
                  "output " + std::to_string(i) + " (" + set.filename().string() + "): " + diff};
      }
    }
    return {S::Pass, ""};
  } catch (const Error& e) {
    return {e.kind() == ErrorKind::Unsupported ? S::Unsupported : S::Error, e.what()};
  } catch (const std::exception& e) {
    return {S::Error, e.what()};
  }
}

int run_check(const std::string& dir, const Common& common) {
  const CaseResult r =
      run_case(dir, vk::Context::create(common.context), common.fp16 ? kFp16Tolerance : Tolerance{},
               common.fp16, common.tuning);
  // A pass is the command's output; anything else is its error.
  const bool pass = r.status == CaseResult::Status::Pass;
  std::fprintf(pass ? stdout : stderr, "%s: %s%s%s\n", dir.c_str(), status_name(r.status),
               r.detail.empty() ? "" : ": ", r.detail.c_str());
  return pass ? 0 : 1;
}

int run_conformance(const ConformanceArgs& args, const Common& common) {
  const std::string& expect_file = args.expect;
  const std::string& filter = args.filter;
  const bool fp16 = common.fp16;
  auto context = vk::Context::create(common.context);
  std::set<std::string> expected;
  if (!expect_file.empty()) {
    std::ifstream in(expect_file);
    if (!in) throw Error(ErrorKind::Io, "cannot read " + expect_file);
    for (std::string line; std::getline(in, line);)
      if (!line.empty() && line[0] != '#') expected.insert(line);
  }
  std::vector<std::string> passes, regressions;
  std::map<std::string, std::string> unsupported_reasons;
  std::cout << "folder                       pass  fail  unsupported  error  total\n";
  for (auto& root : args.roots) {
    std::vector<fs::path> cases;
    for (auto& e : fs::directory_iterator(root))
      if (e.is_directory() && e.path().filename().string().find(filter) != std::string::npos)
        cases.push_back(e.path());
    std::sort(cases.begin(), cases.end());
    std::map<CaseResult::Status, int> counts;
    std::string label = fs::path(root).filename().string();
    for (auto& c : cases) {
      std::string id = label + "/" + c.filename().string();
      size_t before = context->validation_messages().size();
      CaseResult r =
          run_case(c.string(), context, fp16 ? kFp16Tolerance : Tolerance{}, fp16, common.tuning);
      auto messages = context->validation_messages();
      if (messages.size() > before) {
        r = {CaseResult::Status::Error, "validation: " + messages[before]};
        context->clear_validation_messages();
      }
      counts[r.status]++;
      if (r.status == CaseResult::Status::Pass)
        passes.push_back(id);
      else if (expected.count(id))
        regressions.push_back(id + ": " + r.detail);
      if (args.verbose && r.status != CaseResult::Status::Pass)
        std::cout << "  " << status_name(r.status) << " " << id << ": " << r.detail << "\n";
    }
    std::printf("%-28s %5d %5d %12d %6d %6zu\n", label.c_str(), counts[CaseResult::Status::Pass],
                counts[CaseResult::Status::Fail], counts[CaseResult::Status::Unsupported],
                counts[CaseResult::Status::Error], cases.size());
    std::fflush(stdout);
  }
  if (!args.write_passes.empty()) {
    std::ofstream out(args.write_passes);
    out << "# Conformance cases that must pass (vkgraph conformance --expect). Regenerate with\n"
           "# vkgraph conformance --write-passes FILE DIR...\n";
    for (auto& p : passes) out << p << "\n";
  }
  for (auto& id : expected)
    if (id.find(filter) != std::string::npos &&
        std::find(passes.begin(), passes.end(), id) == passes.end() &&
        std::none_of(regressions.begin(), regressions.end(),
                     [&](auto& r) { return r.rfind(id + ":", 0) == 0; }))
      regressions.push_back(id + ": not found");
  for (auto& r : regressions) std::cout << "REGRESSION " << r << "\n";
  std::cout << passes.size() << " passed, " << regressions.size() << " of " << expected.size()
            << " expected passes missing\n";
  return regressions.empty() ? 0 : 1;
}

}  // namespace vkgraph::cli
