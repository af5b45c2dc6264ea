#include "vkgraph/chrome_trace.h"

#include <fstream>
#include <sstream>

#include "vkgraph/error.h"

namespace vkgraph {

namespace {
// Node labels come from model files: quote and drop control characters so any label is valid
// JSON.
std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) o += c;
  }
  return o;
}
}  // namespace

std::string chrome_trace_json(const std::vector<TraceRun>& runs) {
  std::ostringstream f;
  f << "{\"traceEvents\":[\n";
  bool first = true;
  for (size_t r = 0; r < runs.size(); ++r) {
    double t = runs[r].start_us;
    const std::vector<NodeTime>& nodes = runs[r].nodes;
    for (size_t i = 0; i < nodes.size(); ++i) {
      double us = nodes[i].gpu_ms * 1000;
      f << (first ? "" : ",\n") << "{\"name\":\"" << json_escape(nodes[i].label)
        << "\",\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":" << t << ",\"dur\":" << us
        << ",\"args\":{\"index\":" << i << ",\"run\":" << r << "}}";
      first = false;
      t += us;
    }
  }
  f << "\n],\"displayTimeUnit\":\"ms\"}\n";
  return f.str();
}

void write_chrome_trace(const std::string& path, const std::vector<TraceRun>& runs) {
  std::ofstream f(path);
  if (!f) throw Error(ErrorKind::Io, "cannot write " + path);
  f << chrome_trace_json(runs);
  if (!f.flush()) throw Error(ErrorKind::Io, "cannot write " + path);
}

}  // namespace vkgraph
