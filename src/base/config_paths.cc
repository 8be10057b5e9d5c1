// Config's checks of the machine it runs on (CheckPaths), and its settings
// as text: Dump, and the option table for `sediment options` (DescribeOptions).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>

#include "base/config.h"
#include "base/config_internal.h"

namespace sediment {
namespace {

namespace fs = std::filesystem;
using config_internal::Option;

Status PathError(const Config& c, const std::string& key, const std::string& what) {
  return InvalidArgument(fmt::format("{}: {}: {}", c.OriginOf(key), key, what));
}

// `path` (set by `key`, or derived from it) must be a directory if it exists:
// the server creates it otherwise.
Status DirectoryOrAbsent(const Config& c, const std::string& key, const std::string& path) {
  std::error_code ec;
  auto st = fs::status(path, ec);
  if (ec || !fs::exists(st) || fs::is_directory(st)) return Status::OK();
  return PathError(c, key, fmt::format("{} exists and is not a directory", path));
}

// A local objects root as a path ("" for s3://).
std::string LocalObjects(const Config& c) {
  std::string uri = c.ObjectsUri();
  if (uri.rfind("s3://", 0) == 0) return "";
  for (const char* scheme : {"file://", "local://"}) {
    if (uri.rfind(scheme, 0) == 0) return uri.substr(std::string(scheme).size());
  }
  return uri;
}

const char* TypeWord(Option::Type t) {
  switch (t) {
    case Option::Type::kBool:
      return "bool";
    case Option::Type::kInt:
      return "int";
    case Option::Type::kDouble:
      return "number";
    case Option::Type::kString:
      return "string";
    case Option::Type::kStringList:
      return "list";
  }
  return "?";
}

std::string Quoted(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "\"";
}

// A value of the option's type in TOML.
std::string TomlValue(Option::Type type, const void* field) {
  switch (type) {
    case Option::Type::kBool:
      return *static_cast<const bool*>(field) ? "true" : "false";
    case Option::Type::kInt:
      return std::to_string(*static_cast<const int64_t*>(field));
    case Option::Type::kDouble:
      return fmt::format("{}", *static_cast<const double*>(field));
    case Option::Type::kString:
      return Quoted(*static_cast<const std::string*>(field));
    case Option::Type::kStringList: {
      std::string items;
      for (const auto& s : *static_cast<const std::vector<std::string>*>(field)) {
        items += (items.empty() ? "" : ", ") + Quoted(s);
      }
      return "[" + items + "]";
    }
  }
  return "";
}

// [actions]: at most half the HTTP workers wait for hooks, and the Lua sandbox can be run.
Status CheckActions(const Config& c) {
  if (!c.actions.enabled) return Status::OK();
  if (static_cast<size_t>(c.actions.hook_workers) > HttpWorkerCount() / 2) {
    return PathError(c, "actions.hook_workers",
                     fmt::format("{} is more than half this machine's {} HTTP workers: requests waiting for hooks "
                                 "could take every worker",
                                 c.actions.hook_workers, HttpWorkerCount()));
  }
  std::string sandbox = c.LuaSandboxPath();
  if (::access(sandbox.c_str(), X_OK) != 0) {
    return PathError(c, "actions.lua_sandbox",
                     fmt::format("the Lua sandbox program {} cannot be run: {} (or set actions.enabled = false)",
                                 sandbox, std::strerror(errno)));
  }
  return Status::OK();
}

}  // namespace

size_t HttpWorkerCount() { return std::max(16u, std::thread::hardware_concurrency() * 4); }

std::string Config::LuaSandboxPath() const {
  if (!actions.lua_sandbox.empty()) return actions.lua_sandbox;
  std::error_code ec;
  return (fs::read_symlink("/proc/self/exe", ec).parent_path() / "sediment-lua").string();
}

Result<std::vector<std::string>> Config::CheckPaths() const {
  std::vector<std::string> warnings;
  ARROW_RETURN_NOT_OK(DirectoryOrAbsent(*this, "storage.data_dir", storage.data_dir));
  ARROW_RETURN_NOT_OK(
      DirectoryOrAbsent(*this, catalog.cache_dir.empty() ? "storage.data_dir" : "catalog.cache_dir", RangeCacheDir()));
  if (database.type == "rocksdb") {
    ARROW_RETURN_NOT_OK(DirectoryOrAbsent(
        *this, database.rocksdb_path.empty() ? "storage.data_dir" : "database.rocksdb_path", RocksDbPath()));
  }
  if (std::string objects = LocalObjects(*this); !objects.empty()) {
    ARROW_RETURN_NOT_OK(
        DirectoryOrAbsent(*this, storage.objects.empty() ? "storage.data_dir" : "storage.objects", objects));
  }
  ARROW_RETURN_NOT_OK(CheckActions(*this));
  if (!console.enabled) return warnings;
  std::error_code ec;
  if (!console.dir.empty() && !fs::is_regular_file(fs::path(console.dir) / "index.html", ec)) {
    return PathError(*this, "console.dir",
                     fmt::format("{} has no index.html (the console's pages; leave it empty for the built-in "
                                 "console, or set console.enabled = false)",
                                 console.dir));
  }
  if (!fs::is_regular_file(console.chart_js, ec)) {
    std::string what = fmt::format("{} is not a file", console.chart_js);
    if (origins.count("console.chart_js")) {
      return PathError(*this, "console.chart_js", what + " (Debian's libjs-chart.js installs one)");
    }
    warnings.push_back(fmt::format(
        "console.chart_js: {}: the console shows no charts (apt-get install libjs-chart.js, or set console.chart_js)",
        what));
  }
  return warnings;
}

std::string Config::Dump() const {
  std::string out;
  Config copy = *this;
  for (const auto& opt : config_internal::Options()) {
    const void* field = opt.field(copy);
    bool masked = opt.secret && !static_cast<const std::string*>(field)->empty();
    out += opt.key + " = " + (masked ? std::string("\"***\"") : TomlValue(opt.type, field)) + "\n";
  }
  return out;
}

std::vector<OptionInfo> DescribeOptions() {
  std::vector<OptionInfo> out;
  Config defaults;
  for (const auto& opt : config_internal::Options()) {
    OptionInfo info{opt.key,         TypeWord(opt.type), TomlValue(opt.type, opt.field(defaults)),
                    opt.check.bound, opt.check.choices,  {config_internal::EnvName(opt.key)}};
    info.env.insert(info.env.end(), opt.env_aliases.begin(), opt.env_aliases.end());
    out.push_back(std::move(info));
  }
  JobConfig job;
  for (const auto& opt : config_internal::JobOptions()) {
    out.push_back(OptionInfo{std::string("jobs.") + opt.key,
                             TypeWord(opt.type),
                             TomlValue(opt.type, opt.field(job)),
                             opt.check.bound,
                             opt.check.choices,
                             {}});
  }
  return out;
}

}  // namespace sediment
