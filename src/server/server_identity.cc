#include "server/server_identity.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/crypto.h"

namespace sediment::server {
namespace {

std::string Hostname() {
  char host[256] = {0};
  ::gethostname(host, sizeof(host) - 1);
  return host;
}

// A name is "<host>-<hex>" of printable characters; anything else in the
// file (a torn write, an edit) is replaced.
bool Valid(const std::string& id) {
  if (id.empty() || id.size() > 300) return false;
  for (char c : id) {
    if (c <= ' ' || c > '~') return false;
  }
  return true;
}

std::string ReadAll(int fd) {
  std::string out;
  char buf[512];
  ssize_t n;
  while ((n = ::pread(fd, buf, sizeof(buf), static_cast<off_t>(out.size()))) > 0) out.append(buf, n);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

bool WriteAll(int fd, const std::string& text) {
  if (::ftruncate(fd, 0) != 0) return false;
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::pwrite(fd, text.data() + done, text.size() - done, static_cast<off_t>(done));
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return ::fsync(fd) == 0;
}

}  // namespace

std::unique_ptr<ServerIdentity> ServerIdentity::Claim(const std::string& data_dir) {
  const std::string path = data_dir + "/server-id";
  const std::string fresh = fmt::format("{}-{}-{}", Hostname(), ::getpid(), RandomHex(4));
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    spdlog::warn("cannot open {} ({}): this server is {} until it stops; after a crash its leases expire first", path,
                 std::strerror(errno), fresh);
    return std::unique_ptr<ServerIdentity>(new ServerIdentity(fresh, -1));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    spdlog::info("{} is held by another running server: this one is {}", path, fresh);
    return std::unique_ptr<ServerIdentity>(new ServerIdentity(fresh, -1));
  }
  std::string id = ReadAll(fd);
  if (!Valid(id)) {
    id = fmt::format("{}-{}", Hostname(), RandomHex(4));
    if (!WriteAll(fd, id + "\n")) {
      spdlog::warn("cannot write {} ({}): this server is {} until it stops", path, std::strerror(errno), fresh);
      ::close(fd);
      return std::unique_ptr<ServerIdentity>(new ServerIdentity(fresh, -1));
    }
  }
  return std::unique_ptr<ServerIdentity>(new ServerIdentity(id, fd));
}

ServerIdentity::~ServerIdentity() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace sediment::server
