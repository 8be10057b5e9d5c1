#include "server/console/console.h"

#include <fmt/format.h>
#include <httplib.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "server/http/errors.h"
#include "server/http/http_server.h"

namespace sediment::server {
namespace {

namespace fs = std::filesystem;

const char* ContentType(const std::string& path) {
  if (path.ends_with(".html")) return "text/html; charset=utf-8";
  if (path.ends_with(".js")) return "text/javascript; charset=utf-8";
  if (path.ends_with(".css")) return "text/css; charset=utf-8";
  return "application/octet-stream";
}

// A console file's bytes (Reply has checked that it is a file).
std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  if (!in.good() && !in.eof()) return std::nullopt;
  return out.str();
}

// The console's pages may only load their own files and call their own server.
constexpr const char* kPagePolicy =
    "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; frame-ancestors 'none'; "
    "base-uri 'none'; form-action 'self'";

void Reply(const std::string& path, const std::string& name, const httplib::Request& req, httplib::Response& res) {
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  auto mtime = fs::last_write_time(path, ec);
  if (ec || !fs::is_regular_file(path, ec)) {
    res.status = 404;
    res.set_content(fmt::format("no console file {}\n", name), "text/plain");
    return;
  }
  // Revalidated on every load (pages change with an upgrade); unchanged files cost a 304.
  std::string etag = fmt::format("\"{:x}-{:x}\"", static_cast<uint64_t>(mtime.time_since_epoch().count()), size);
  res.set_header("ETag", etag);
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Content-Type-Options", "nosniff");
  if (path.ends_with(".html")) res.set_header("Content-Security-Policy", kPagePolicy);
  if (req.get_header_value("If-None-Match") == etag) {
    res.status = 304;
    return;
  }
  auto bytes = ReadFile(path);
  if (!bytes) {
    res.status = 500;
    res.set_content(fmt::format("cannot read console file {}\n", name), "text/plain");
    return;
  }
  res.set_content(std::move(*bytes), ContentType(path));
}

// A file name under the console's directory: letters, digits, '-', '_', '.',
// one level of subdirectory, never "..".
bool SafeName(const std::string& name) {
  if (name.empty() || name.size() > 128 || name.find("..") != std::string::npos) return false;
  int slashes = 0;
  for (char c : name) {
    if (c == '/') {
      ++slashes;
    } else if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) {
      return false;
    }
  }
  return slashes <= 1 && name.front() != '/' && name.front() != '.';
}

}  // namespace

Result<std::string> FindConsoleDir(const std::string& configured) {
  std::error_code ec;
  if (!configured.empty()) {
    if (!fs::is_regular_file(fs::path(configured) / "index.html", ec)) {
      return InvalidArgument(fmt::format("console.dir {} has no index.html", configured));
    }
    return configured;
  }
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return NotFound(fmt::format("cannot find the sediment binary's directory: {}", ec.message()));
  for (fs::path dir : {exe.parent_path() / "console", exe.parent_path().parent_path() / "console"}) {
    if (fs::is_regular_file(dir / "index.html", ec)) return dir.lexically_normal().string();
  }
  return NotFound(
      fmt::format("no console pages beside {} (looked in ./console and ../console); set console.dir", exe.string()));
}

std::vector<Route> ConsoleRoutes(const ConsoleFiles& files) {
  static const Protocol kConsole{"console", ReplyError};
  auto serve = [files](const Call& c) {
    std::string name = c.req.matches[1];
    if (name == "vendor/chart.js") {
      Reply(files.chart_js, name, c.req, c.res);
    } else if (!SafeName(name)) {
      c.res.status = 404;
      c.res.set_content(fmt::format("no console file {}\n", name), "text/plain");
    } else {
      Reply(files.dir + "/" + name, name, c.req, c.res);
    }
    return Status::OK();
  };
  return {{"GET", "/_console/{file:.+}", "console GetFile", Access::kPublic, {}, serve, &kConsole}};
}

void ServeConsolePage(const ConsoleFiles& files, const httplib::Request& req, httplib::Response& res) {
  Reply(files.dir + "/index.html", "index.html", req, res);
}

}  // namespace sediment::server
