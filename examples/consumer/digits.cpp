// Classifies the bundled held-out digits through vkgraph::Session and prints the accuracy:
// proof that an installed vkgraph is usable from a project outside its tree.
#include <vkgraph/error.h>
#include <vkgraph/session.h>
#include <vkgraph/tensor_io.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s MODEL.onnx IMAGES.npy LABELS.npy\n", argv[0]);
    return 2;
  }
  try {
    vkgraph::Session session(argv[1]);
    vkgraph::HostTensor images = vkgraph::read_npy(argv[2]);
    vkgraph::HostTensor labels = vkgraph::read_npy(argv[3]);
    std::vector<vkgraph::HostTensor> out = session.run({{session.inputs()[0].name, images}});
    const vkgraph::HostTensor& logits = out.at(0);
    const int64_t n = logits.shape.at(0), classes = logits.shape.at(1);
    int64_t correct = 0;
    for (int64_t i = 0; i < n; ++i) {
      int64_t best = 0;
      for (int64_t c = 1; c < classes; ++c)
        if (logits.data<float>()[i * classes + c] > logits.data<float>()[i * classes + best])
          best = c;
      correct += best == labels.as_int(i);
    }
    std::printf("device: %s\naccuracy: %lld/%lld\n", session.context().properties().deviceName,
                static_cast<long long>(correct), static_cast<long long>(n));
    return 0;
  } catch (const vkgraph::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
