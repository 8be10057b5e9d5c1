#include "base/config.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <functional>
#include <variant>

#include "base/ascii.h"
#include "base/config_internal.h"

extern char** environ;

namespace sediment {

std::string config_internal::EnvName(const std::string& key) {
  std::string name = "SEDIMENT_";
  for (char ch : key) name += ch == '.' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return name;
}

namespace {

using config_internal::EnvName;
using config_internal::JobOption;
using config_internal::JobOptions;
using config_internal::Option;
using config_internal::Options;

const Option* FindOption(const std::string& key) {
  for (const auto& o : Options()) {
    if (o.key == key) return &o;
  }
  return nullptr;
}

bool IsSection(const std::string& prefix) {
  for (const auto& o : Options()) {
    if (o.key.size() > prefix.size() && o.key.compare(0, prefix.size(), prefix) == 0 && o.key[prefix.size()] == '.') {
      return true;
    }
  }
  return false;
}

const char* TypeName(Option::Type t) {
  switch (t) {
    case Option::Type::kBool:
      return "a boolean (true or false)";
    case Option::Type::kInt:
      return "an integer";
    case Option::Type::kDouble:
      return "a number";
    case Option::Type::kString:
      return "a string";
    case Option::Type::kStringList:
      return "a list of strings";
  }
  return "?";
}

Status ConfigError(const std::string& origin, const std::string& key, const std::string& what) {
  return InvalidArgument(fmt::format("{}: {}: {}", origin, key, what));
}

// Stores `value` (already of the option's C++ type) after checking it.
template <typename V>
Status Store(Config* config, const Option& opt, V value, const std::string& origin) {
  std::string problem = opt.check(&value);
  if (!problem.empty()) return ConfigError(origin, opt.key, problem);
  *static_cast<V*>(opt.field(*config)) = std::move(value);
  config->origins[opt.key] = origin;
  return Status::OK();
}

// A list in text form (environment, flags): comma-separated, spaces around
// entries ignored; "" is the empty list.
std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> out;
  if (text.find_first_not_of(" \t") == std::string::npos) return out;
  size_t start = 0;
  while (true) {
    size_t end = text.find(',', start);
    std::string entry = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    size_t b = entry.find_first_not_of(" \t");
    size_t e = entry.find_last_not_of(" \t");
    out.push_back(b == std::string::npos ? std::string() : entry.substr(b, e - b + 1));
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

Status SetFromText(Config* config, const Option& opt, const std::string& text, const std::string& origin) {
  switch (opt.type) {
    case Option::Type::kBool: {
      std::string v = AsciiLower(text);
      if (v == "true" || v == "1" || v == "yes" || v == "on") return Store(config, opt, true, origin);
      if (v == "false" || v == "0" || v == "no" || v == "off") return Store(config, opt, false, origin);
      break;
    }
    case Option::Type::kInt: {
      int64_t v = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (ec == std::errc() && end == text.data() + text.size() && !text.empty()) {
        return Store(config, opt, v, origin);
      }
      break;
    }
    case Option::Type::kDouble: {
      double v = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (ec == std::errc() && end == text.data() + text.size() && !text.empty()) {
        return Store(config, opt, v, origin);
      }
      break;
    }
    case Option::Type::kString:
      return Store(config, opt, text, origin);
    case Option::Type::kStringList:
      return Store(config, opt, SplitList(text), origin);
  }
  return ConfigError(origin, opt.key, fmt::format("must be {}, got \"{}\"", TypeName(opt.type), text));
}

Status SetFromToml(Config* config, const Option& opt, const toml::node& node, const std::string& origin) {
  switch (opt.type) {
    case Option::Type::kBool:
      if (auto v = node.value_exact<bool>()) return Store(config, opt, *v, origin);
      break;
    case Option::Type::kInt:
      if (auto v = node.value_exact<int64_t>()) return Store(config, opt, *v, origin);
      break;
    case Option::Type::kDouble:
      if (node.is_integer()) return Store(config, opt, static_cast<double>(*node.value<int64_t>()), origin);
      if (auto v = node.value_exact<double>()) return Store(config, opt, *v, origin);
      break;
    case Option::Type::kString:
      if (auto v = node.value_exact<std::string>()) return Store(config, opt, *v, origin);
      break;
    case Option::Type::kStringList:
      if (const toml::array* arr = node.as_array()) {
        std::vector<std::string> v;
        for (const auto& item : *arr) {
          auto str = item.value_exact<std::string>();
          if (!str) return ConfigError(origin, opt.key, fmt::format("must be {}", TypeName(opt.type)));
          v.push_back(*str);
        }
        return Store(config, opt, std::move(v), origin);
      }
      break;
  }
  std::string shown;
  if (node.is_table()) {
    shown = "a table";
  } else if (node.is_array()) {
    shown = "an array";
  } else if (auto str = node.value_exact<std::string>()) {
    shown = "\"" + *str + "\"";
  } else if (auto i = node.value_exact<int64_t>()) {
    shown = std::to_string(*i);
  } else if (auto d = node.value_exact<double>()) {
    shown = fmt::format("{}", *d);
  } else if (auto b = node.value_exact<bool>()) {
    shown = *b ? "true" : "false";
  } else {
    shown = "a date or time";
  }
  if (opt.secret) shown = "a value of another type (not shown: it may hold a secret)";
  return ConfigError(origin, opt.key, fmt::format("must be {}, got {}", TypeName(opt.type), shown));
}

Status ParseJobs(Config* config, const toml::node& node, const std::string& file) {
  std::string origin = fmt::format("{}:{}", file, node.source().begin.line);
  const toml::array* arr = node.as_array();
  if (arr == nullptr) return ConfigError(origin, "jobs", "must be an array of tables ([[jobs]])");
  for (const auto& entry : *arr) {
    std::string entry_origin = fmt::format("{}:{}", file, entry.source().begin.line);
    const toml::table* t = entry.as_table();
    if (t == nullptr) return ConfigError(entry_origin, "jobs", "each entry must be a table ([[jobs]])");
    JobConfig job;
    job.origin = entry_origin;
    for (const auto& [k, v] : *t) {
      std::string key(k.str());
      std::string where = fmt::format("{}:{}", file, v.source().begin.line);
      const JobOption* found = nullptr;
      for (const auto& o : JobOptions()) {
        if (key == o.key) found = &o;
      }
      if (found == nullptr) return ConfigError(where, "jobs." + key, "unknown job setting");
      // Reuse the typed setters through a throwaway Option.
      Option opt{"jobs." + key, [&](Config&) -> void* { return found->field(job); }, found->type, found->check};
      opt.secret = key == "url" || key == "headers";  // a node's password or API key
      ARROW_RETURN_NOT_OK(SetFromToml(config, opt, v, where));
    }
    if (job.dataset.empty()) return ConfigError(entry_origin, "jobs", "an entry has no dataset");
    if (job.source == "evm-rpc" && job.url.empty()) {
      return ConfigError(entry_origin, "jobs.url", "an evm-rpc job needs the node's url");
    }
    for (const auto& other : config->jobs) {
      if (other.dataset == job.dataset) {
        return ConfigError(entry_origin, "jobs", fmt::format("dataset \"{}\" has two jobs", job.dataset));
      }
    }
    config->jobs.push_back(job);
  }
  return Status::OK();
}

Status WalkTable(Config* config, const toml::table& table, const std::string& prefix, const std::string& file) {
  for (const auto& [k, node] : table) {
    std::string key = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
    std::string origin = fmt::format("{}:{}", file, node.source().begin.line);
    if (key == "jobs") {
      ARROW_RETURN_NOT_OK(ParseJobs(config, node, file));
    } else if (const Option* opt = FindOption(key)) {
      ARROW_RETURN_NOT_OK(SetFromToml(config, *opt, node, origin));
    } else if (IsSection(key)) {
      if (!node.is_table()) return ConfigError(origin, key, "must be a table (a [section])");
      ARROW_RETURN_NOT_OK(WalkTable(config, *node.as_table(), key, file));
    } else {
      return ConfigError(origin, key, "unknown setting");
    }
  }
  return Status::OK();
}

}  // namespace

std::map<std::string, std::string> CurrentEnvironment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

Status ParseHostPort(const std::string& text, std::string* host, int* port) {
  auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    return InvalidArgument(fmt::format("\"{}\" is not HOST:PORT", text));
  }
  int p = -1;
  const char* b = text.data() + colon + 1;
  const char* e = text.data() + text.size();
  auto [end, ec] = std::from_chars(b, e, p);
  if (ec != std::errc() || end != e || p < 0 || p > 65535) {
    return InvalidArgument(fmt::format("\"{}\": port must be a number from 0 to 65535", text));
  }
  *host = text.substr(0, colon);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  *port = p;
  return Status::OK();
}

Result<CompressionSetting> ParseCompression(const std::string& text) {
  CompressionSetting s;
  std::string name = text;
  auto open = text.find('(');
  if (open != std::string::npos) {
    if (text.back() != ')') {
      return InvalidArgument(fmt::format("compression \"{}\": expected CODEC or CODEC(LEVEL)", text));
    }
    name = text.substr(0, open);
    std::string digits = text.substr(open + 1, text.size() - open - 2);
    int level = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), level);
    if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty()) {
      return InvalidArgument(fmt::format("compression \"{}\": level must be an integer", text));
    }
    s.level = level;
  }
  s.codec = name;
  struct Range {
    const char* codec;
    int min, max;
  };
  static const Range kLevels[] = {{"zstd", 1, 22}, {"gzip", 1, 9}, {"brotli", 0, 11}};
  for (const auto& r : kLevels) {
    if (name == r.codec) {
      if (s.level && (*s.level < r.min || *s.level > r.max)) {
        return InvalidArgument(
            fmt::format("compression \"{}\": {} level must be from {} to {}", text, name, r.min, r.max));
      }
      return s;
    }
  }
  if (name == "snappy" || name == "lz4" || name == "none") {
    if (s.level) return InvalidArgument(fmt::format("compression \"{}\": {} takes no level", text, name));
    return s;
  }
  return InvalidArgument(
      fmt::format("compression \"{}\": unknown codec (use zstd(N), snappy, lz4, gzip(N), brotli(N) or none)", text));
}

bool IsS3BucketName(std::string_view b) {
  if (b.size() < 3 || b.size() > 63) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(b.front()) || !alnum(b.back()) || b.find("..") != std::string_view::npos) return false;
  return std::all_of(b.begin(), b.end(), [&](char c) { return alnum(c) || c == '.' || c == '-'; });
}

Result<S3Uri> ParseS3Uri(const std::string& text) {
  auto bad = [&] { return InvalidArgument(fmt::format("\"{}\" is not s3://bucket or s3://bucket/prefix", text)); };
  if (text.rfind("s3://", 0) != 0 || text.find('\0') != std::string::npos) return bad();
  std::string rest = text.substr(5);
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  S3Uri uri;
  size_t slash = rest.find('/');
  uri.bucket = rest.substr(0, slash);
  if (!IsS3BucketName(uri.bucket)) {
    return InvalidArgument(fmt::format(
        "\"{}\": \"{}\" is no S3 bucket name (3-63 lower-case letters, digits, '.' and '-', starting and ending "
        "with a letter or digit)",
        text, uri.bucket));
  }
  if (slash == std::string::npos) return uri;
  uri.prefix = rest.substr(slash + 1);
  for (size_t start = 0; start <= uri.prefix.size();) {
    size_t end = std::min(uri.prefix.find('/', start), uri.prefix.size());
    std::string_view part(uri.prefix.data() + start, end - start);
    if (part.empty() || part == "." || part == "..") return bad();
    start = end + 1;
  }
  return uri;
}

Result<Config> Config::Load(const std::string& path, const std::map<std::string, std::string>& env) {
  Config config;
  if (!path.empty()) {
    toml::table table;
    try {
      table = toml::parse_file(path);
    } catch (const toml::parse_error& e) {
      const auto& src = e.source();
      if (src.begin.line == 0) {
        return InvalidArgument(fmt::format("{}: cannot read config file: {}", path, e.description()));
      }
      return InvalidArgument(fmt::format("{}:{}:{}: {}", path, src.begin.line, src.begin.column, e.description()));
    }
    ARROW_RETURN_NOT_OK(WalkTable(&config, table, "", path));
    std::error_code ec;
    config.source_path = std::filesystem::absolute(path, ec).string();
  }
  // Environment: every setting has SEDIMENT_<KEY>. A SEDIMENT_ variable that
  // starts like a section but names no setting is a typo worth stopping for.
  for (const auto& opt : Options()) {
    std::vector<std::string> names = {EnvName(opt.key)};
    names.insert(names.end(), opt.env_aliases.begin(), opt.env_aliases.end());
    for (const auto& name : names) {
      auto it = env.find(name);
      if (it == env.end()) continue;
      ARROW_RETURN_NOT_OK(SetFromText(&config, opt, it->second, "environment variable " + name));
      break;  // the SEDIMENT_ name wins over an alias
    }
  }
  for (const auto& [name, value] : env) {
    if (name.rfind("SEDIMENT_", 0) != 0) continue;
    bool known = false, in_section = false;
    for (const auto& opt : Options()) {
      if (EnvName(opt.key) == name) known = true;
      std::string section = EnvName(opt.key.substr(0, opt.key.find('.'))) + "_";
      if (name.rfind(section, 0) == 0) in_section = true;
    }
    if (!known && in_section) {
      return InvalidArgument(fmt::format("environment variable {}: unknown setting", name));
    }
  }
  ARROW_RETURN_NOT_OK(config.Validate());
  return config;
}

Status Config::Set(const std::string& key, const std::string& value, const std::string& origin) {
  const Option* opt = FindOption(key);
  if (opt == nullptr) return ConfigError(origin, key, "unknown setting");
  return SetFromText(this, *opt, value, origin);
}

std::string Config::OriginOf(const std::string& key) const {
  auto it = origins.find(key);
  return it == origins.end() ? "built-in default" : it->second;
}

Status Config::Validate() const {
  if (database.type == "postgres" && database.postgres_dsn.empty()) {
    return ConfigError(OriginOf("database.type"), "database.type",
                       "is \"postgres\" but database.postgres_dsn is empty (set it or "
                       "SEDIMENT_DATABASE_POSTGRES_DSN)");
  }
  if (storage.objects.rfind("s3://", 0) == 0 && storage.objects.size() <= 5) {
    return ConfigError(OriginOf("storage.objects"), "storage.objects",
                       "\"s3://\" needs a bucket, as in s3://bucket/prefix");
  }
  if (catalog.range_max_bytes < catalog.range_min_bytes) {
    // Named where one of the two was set (range_max_bytes if it was), and both origins said.
    const char* key = origins.count("catalog.range_max_bytes") ? "catalog.range_max_bytes" : "catalog.range_min_bytes";
    return ConfigError(OriginOf(key), key,
                       fmt::format("catalog.range_max_bytes ({}) must be at least catalog.range_min_bytes ({}) "
                                   "(range_max_bytes set at {}, range_min_bytes at {})",
                                   catalog.range_max_bytes, catalog.range_min_bytes,
                                   OriginOf("catalog.range_max_bytes"), OriginOf("catalog.range_min_bytes")));
  }
  return Status::OK();
}

std::string Config::ObjectsUri() const {
  if (!storage.objects.empty()) return storage.objects;
  return storage.data_dir + "/objects";
}

std::string Config::RocksDbPath() const {
  if (!database.rocksdb_path.empty()) return database.rocksdb_path;
  return storage.data_dir + "/kv";
}

std::string Config::RangeCacheDir() const {
  if (!catalog.cache_dir.empty()) return catalog.cache_dir;
  return storage.data_dir + "/range-cache";
}

std::vector<std::string> Config::LocalNamespaceRoots() const {
  if (!catalog.local_namespace_roots.empty()) return catalog.local_namespace_roots;
  std::error_code ec;  // absolute() only reads the working directory; on failure keep the path as it is
  std::filesystem::path data = std::filesystem::absolute(storage.data_dir, ec);
  if (ec) data = storage.data_dir;
  std::string root = (data / "namespaces").lexically_normal().string();
  return {root};
}

}  // namespace sediment
