#include "vkgraph/file_io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "vkgraph/error.h"

namespace vkgraph {

std::vector<uint8_t> read_file_bytes(const std::string& path) {
  // Checked first because opening a directory "succeeds" and then reports a bogus size.
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw Error(ErrorKind::Io, "cannot read " + path + ": " +
                                   (ec ? ec.message() : std::string("not a regular file")));
  }
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw Error(ErrorKind::Io, "cannot open " + path + ": " + std::strerror(errno));
  const std::streamoff size = in.tellg();
  check(size >= 0, ErrorKind::Io, "cannot determine the size of " + path);
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(bytes.data()), size);
  check(in.gcount() == size, ErrorKind::Io, "cannot read " + path + " (short read)");
  return bytes;
}

MappedFile::MappedFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw Error(ErrorKind::Io, "cannot read " + path + ": " +
                                   (ec ? ec.message() : std::string("not a regular file")));
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(ErrorKind::Io, "cannot open " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw Error(ErrorKind::Io, "cannot determine the size of " + path + ": " + std::strerror(err));
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    // MAP_POPULATE reads the file in now, in large pieces, instead of one fault per page.
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    const int err = errno;
    ::close(fd);
    if (p == MAP_FAILED)
      throw Error(ErrorKind::Io, "cannot map " + path + ": " + std::strerror(err));
    data_ = p;
  } else {
    ::close(fd);
  }
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(data_, size_);
}

void write_file_bytes(const std::string& path, std::span<const uint8_t> bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error(ErrorKind::Io, "cannot create " + path + ": " + std::strerror(errno));
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  out.close();
  check(!out.fail(), ErrorKind::Io, "cannot write " + path);
}

}  // namespace vkgraph
