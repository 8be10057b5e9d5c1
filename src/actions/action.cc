#include "actions/action.h"

#include <fmt/format.h>
#include <fnmatch.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <regex>
#include <set>

namespace sediment::actions {
namespace {

using nlohmann::json;

Status Invalid(const std::string& what) { return InvalidArgument(what + ": invalid action"); }

// A YAML node as JSON: plain scalars that read as booleans or numbers become
// those (as YAML 1.2's core schema reads them); quoted ones stay strings.
// `budget` counts nodes: aliases share nodes, so a small file could otherwise
// expand exponentially ("billion laughs").
json ToJson(const YAML::Node& node, int64_t* budget, int depth = 0) {
  if (--*budget < 0 || depth > 64) throw std::length_error("the file expands to too many values (aliases?)");
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Sequence: {
      json out = json::array();
      for (const auto& item : node) out.push_back(ToJson(item, budget, depth + 1));
      return out;
    }
    case YAML::NodeType::Map: {
      json out = json::object();
      for (const auto& kv : node) out[kv.first.as<std::string>()] = ToJson(kv.second, budget, depth + 1);
      return out;
    }
    case YAML::NodeType::Scalar:
      break;
  }
  const std::string& s = node.Scalar();
  if (node.Tag() == "!") return s;  // quoted
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  if (s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s.size() > 40) return s;  // no number is this long (and the regexes stay short)
  static const std::regex kInt(R"(^[-+]?[0-9]+$)"), kFloat(R"(^[-+]?([0-9]*\.[0-9]+|[0-9]+\.?)([eE][-+]?[0-9]+)?$)");
  if (std::regex_match(s, kInt)) {
    errno = 0;
    long long v = std::strtoll(s.c_str(), nullptr, 10);
    if (errno == 0) return v;
  }
  if (std::regex_match(s, kFloat)) return std::strtod(s.c_str(), nullptr);
  return s;
}

bool IsEvent(const std::string& e) {
  const auto& all = EventTypes();
  return std::find(all.begin(), all.end(), e) != all.end();
}

}  // namespace

const std::vector<std::string>& EventTypes() {
  static const std::vector<std::string> kEvents = {
      "prepare-commit",     "pre-commit",        "post-commit",        "pre-merge",       "post-merge",
      "pre-create-tag",     "post-create-tag",   "pre-delete-tag",     "post-delete-tag", "pre-create-branch",
      "post-create-branch", "pre-delete-branch", "post-delete-branch", "pre-revert",      "post-revert",
      "pre-cherry-pick",    "post-cherry-pick"};
  return kEvents;
}

namespace {

// The action file's YAML as JSON; InvalidArgument with lakeFS's message.
Result<json> LoadYaml(std::string_view text) {
  try {
    int64_t budget = 100000;
    return ToJson(YAML::Load(std::string(text)), &budget);
  } catch (const YAML::Exception& e) {
    return InvalidArgument(fmt::format("yaml: line {}: {}", e.mark.line + 1, e.msg));
  } catch (const std::exception& e) {
    return InvalidArgument(fmt::format("yaml: {}: invalid action", e.what()));
  }
}

// `on`: each event the action runs on and the branch globs it runs for.
Status ParseOn(const json& on, Action* a) {
  for (const auto& [event, spec] : on.items()) {
    if (!IsEvent(event)) return Invalid(fmt::format("event '{}' is not supported", event));
    std::vector<std::string> branches;
    if (spec.is_object() && spec.contains("branches") && !spec["branches"].is_null()) {
      const json& b = spec["branches"];
      if (!b.is_array()) return Invalid(fmt::format("event '{}': 'branches' must be a list", event));
      for (const auto& g : b) {
        if (!g.is_string()) return Invalid(fmt::format("event '{}': each of 'branches' must be a string", event));
        branches.push_back(g.get<std::string>());
      }
    } else if (!spec.is_null() && !spec.is_object()) {
      return Invalid(fmt::format("event '{}' must be a mapping (branches) or empty", event));
    }
    if (event.ends_with("-tag") && !branches.empty()) {
      return InvalidArgument("'branches' is not supported in tag event types. invalid event parameter");
    }
    for (const auto& g : branches) {
      // A pattern fnmatch cannot read is refused now rather than never matching.
      if (g.empty() || g.size() > 256 || std::count(g.begin(), g.end(), '*') > 8 ||
          std::count(g.begin(), g.end(), '[') != std::count(g.begin(), g.end(), ']')) {
        return Invalid(fmt::format("event '{}': branch pattern \"{}\" is malformed", event, g));
      }
    }
    a->on[event] = std::move(branches);
  }
  return Status::OK();
}

// hook[i]'s condition ("if"), when it has one.
Status ParseIf(const json& h, size_t i, Hook* hook) {
  if (!h.contains("if") || h["if"].is_null()) return Status::OK();
  if (!h["if"].is_string()) return Invalid(fmt::format("hook[{}] 'if' must be a string", i));
  hook->if_expr = h["if"].get<std::string>();
  if (hook->if_expr.size() > 64) return Invalid(fmt::format("hook[{}] 'if' expression is too long", i));
  static const std::regex kIf(R"(^\s*!?\s*(success\(\)|failure\(\)|always\(\)|true|false)\s*$)");
  if (!std::regex_match(hook->if_expr, kIf)) {
    return Invalid(
        fmt::format("hook[{}] 'if' expression \"{}\" is not supported (success(), failure(), always(), true or false, "
                    "optionally negated with '!')",
                    i, hook->if_expr));
  }
  return Status::OK();
}

// hook[i]'s properties: what its type needs.
Status CheckProperties(const Hook& hook, size_t i) {
  const json& p = hook.properties;
  if (hook.type == "webhook" && (!p.contains("url") || !p["url"].is_string() || p["url"].get<std::string>().empty())) {
    return Invalid(fmt::format("hook[{}] type 'webhook': 'url' must be supplied in properties", i));
  }
  if (hook.type == "lua") {
    bool script = p.contains("script") && p["script"].is_string() && !p["script"].get<std::string>().empty();
    bool path =
        p.contains("script_path") && p["script_path"].is_string() && !p["script_path"].get<std::string>().empty();
    if (script == path) {
      return Invalid(fmt::format("hook[{}] type 'lua': either 'script' or 'script_path' must be supplied", i));
    }
    if (p.contains("args") && !p["args"].is_null() && !p["args"].is_object()) {
      return Invalid(fmt::format("hook[{}] type 'lua': 'args' should be a map", i));
    }
  }
  return Status::OK();
}

// hooks[i]: its id (unique among `ids`), type, condition and properties.
Result<Hook> ParseHook(const json& h, size_t i, std::set<std::string>* ids) {
  static const std::regex kHookId(R"(^[_a-zA-Z][\-_a-zA-Z0-9]{1,255}$)");
  if (!h.is_object()) return Invalid(fmt::format("hook[{}] must be a mapping", i));
  Hook hook;
  if (!h.contains("id") || !h["id"].is_string() || h["id"].get<std::string>().empty()) {
    return Invalid(fmt::format("hook[{}] missing ID", i));
  }
  hook.id = h["id"].get<std::string>();
  if (hook.id.size() > 256 || !std::regex_match(hook.id, kHookId))
    return Invalid(fmt::format("hook[{}] ID '{}' is invalid", i, hook.id));
  if (!ids->insert(hook.id).second) return Invalid(fmt::format("hook[{}] duplicate ID '{}'", i, hook.id));
  hook.type = h.contains("type") && h["type"].is_string() ? h["type"].get<std::string>() : "";
  if (hook.type != "webhook" && hook.type != "lua") {
    return Invalid(fmt::format("hook[{}] type '{}' unknown (webhook or lua)", i, hook.type));
  }
  ARROW_RETURN_NOT_OK(ParseIf(h, i, &hook));
  if (!h.contains("properties") || !h["properties"].is_object()) {
    return Invalid(fmt::format("hook[{}] type '{}': missing hook properties", i, hook.type));
  }
  hook.properties = h["properties"];
  ARROW_RETURN_NOT_OK(CheckProperties(hook, i));
  return hook;
}

}  // namespace

Result<Action> ParseAction(std::string_view text) {
  ARROW_ASSIGN_OR_RAISE(json doc, LoadYaml(text));
  if (!doc.is_object()) return InvalidArgument("an action file must be a YAML mapping: invalid action");
  Action a;
  if (!doc.contains("name") || !doc["name"].is_string() || doc["name"].get<std::string>().empty()) {
    return Invalid("'name' is required");
  }
  a.name = doc["name"].get<std::string>();
  static const std::regex kName(R"(^\w[\w\-. ]+$)");
  if (a.name.size() > 256 || !std::regex_match(a.name, kName)) return Invalid("'name' is invalid");
  const json& on = doc.contains("on") ? doc["on"] : json();
  if (!on.is_object() || on.empty()) return Invalid("'on' is required");
  ARROW_RETURN_NOT_OK(ParseOn(on, &a));
  const json& hooks = doc.contains("hooks") ? doc["hooks"] : json::array();
  if (!hooks.is_null() && !hooks.is_array()) return Invalid("'hooks' must be a list");
  std::set<std::string> ids;
  for (size_t i = 0; hooks.is_array() && i < hooks.size(); ++i) {
    ARROW_ASSIGN_OR_RAISE(Hook hook, ParseHook(hooks[i], i, &ids));
    a.hooks.push_back(std::move(hook));
  }
  return a;
}

bool Matches(const Action& action, const std::string& event, const std::string& branch) {
  auto it = action.on.find(event);
  if (it == action.on.end()) return false;
  if (it->second.empty()) return true;
  for (const auto& glob : it->second) {
    if (fnmatch(glob.c_str(), branch.c_str(), FNM_PATHNAME) == 0) return true;
  }
  return false;
}

bool ShouldRun(const std::string& if_expr, bool failed_before) {
  if (if_expr.empty()) return !failed_before;
  bool negate = if_expr.find('!') != std::string::npos;
  bool value = if_expr.find("success()") != std::string::npos   ? !failed_before
               : if_expr.find("failure()") != std::string::npos ? failed_before
               : if_expr.find("false") != std::string::npos     ? false
                                                                : true;  // always(), true
  return negate ? !value : value;
}

Result<int64_t> ParseGoDuration(std::string_view text) {
  auto bad = [&] { return InvalidArgument(fmt::format("time: invalid duration \"{}\"", text)); };
  if (text.empty()) return bad();
  double total_ms = 0;
  size_t i = 0;
  if (text == "0") return 0;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
    if (i == start) return bad();
    double value = std::strtod(std::string(text.substr(start, i - start)).c_str(), nullptr);
    size_t unit_start = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    std::string_view unit = text.substr(unit_start, i - unit_start);
    double scale = unit == "h"                    ? 3600e3
                   : unit == "m"                  ? 60e3
                   : unit == "s"                  ? 1e3
                   : unit == "ms"                 ? 1
                   : unit == "us" || unit == "µs" ? 1e-3
                   : unit == "ns"                 ? 1e-6
                                                  : -1;
    if (scale < 0) return bad();
    total_ms += value * scale;
  }
  if (total_ms > 24 * 3600e3) return InvalidArgument(fmt::format("duration \"{}\" is longer than a day", text));
  return static_cast<int64_t>(total_ms);
}

Result<std::string> ExpandEnv(const std::string& value, const std::string& prefix, bool* secret,
                              std::vector<std::string>* secrets) {
  // "{{", an optional space, "ENV.", the name (up to the nearest "}}", less
  // one space before it), "}}".
  std::string out;
  size_t pos = 0;
  while (true) {
    size_t open = value.find("{{", pos);
    if (open == std::string::npos) break;
    size_t name_at = open + 2;
    if (name_at < value.size() && value[name_at] == ' ') ++name_at;
    size_t close = value.find("}}", name_at);
    if (value.compare(name_at, 4, "ENV.") != 0 || close == std::string::npos) {
      out.append(value, pos, open + 2 - pos);
      pos = open + 2;
      continue;
    }
    std::string name = value.substr(name_at + 4, close - name_at - 4);
    if (!name.empty() && name.back() == ' ') name.pop_back();
    out.append(value, pos, open - pos);
    pos = close + 2;
    *secret = true;
    if (prefix.empty() || name.rfind(prefix, 0) != 0) continue;  // not readable: ""
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return InvalidArgument(fmt::format("{} not found: missing env var", name));
    out += v;
    if (secrets != nullptr && *v != '\0') secrets->emplace_back(v);
  }
  out.append(value, pos, std::string::npos);
  return out;
}

void OutputLog::AppendAlways(std::string_view text) { text_.append(Mask(text).substr(0, 4096)); }

void OutputLog::AddSecret(std::string value) {
  if (value.size() >= 3) secrets_.push_back(std::move(value));
}

std::string OutputLog::Mask(std::string_view text) const {
  std::string out(text);
  for (const auto& s : secrets_) {
    for (size_t at = out.find(s); at != std::string::npos; at = out.find(s, at + 7))
      out.replace(at, s.size(), "*******");
  }
  return out;
}

void OutputLog::Append(std::string_view raw) {
  if (cut_) return;
  // Masked before the cut too, so no secret shows its first bytes at the limit.
  const std::string masked = secrets_.empty() ? std::string() : Mask(raw);
  std::string_view text = secrets_.empty() ? raw : std::string_view(masked);
  int64_t room = limit_ - static_cast<int64_t>(text_.size());
  if (static_cast<int64_t>(text.size()) <= room) {
    text_.append(text);
    return;
  }
  text_.append(text.substr(0, std::max<int64_t>(room, 0)));
  text_ += fmt::format("\n[output cut at {} bytes]\n", limit_);
  cut_ = true;
}

std::string EventJson(const HookRecord& r, const std::string& action_name, const std::string& hook_id,
                      int64_t now_micros) {
  // nlohmann's ordered_json keeps lakeFS's field order.
  nlohmann::ordered_json j;
  std::time_t secs = static_cast<std::time_t>(now_micros / 1000000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  j["event_type"] = r.event_type;
  j["event_time"] = fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                                tm.tm_hour, tm.tm_min, tm.tm_sec);
  j["action_name"] = action_name;
  j["hook_id"] = hook_id;
  j["repository_id"] = r.repository_id;
  auto opt = [&](const char* key, const std::string& v) {
    if (!v.empty()) j[key] = v;
  };
  opt("branch_id", r.branch_id);
  opt("source_ref", r.source_ref);
  opt("tag_id", r.tag_id);
  opt("commit_id", r.commit_id);
  opt("commit_message", r.commit_message);
  opt("committer", r.committer);
  if (!r.commit_metadata.empty()) j["commit_metadata"] = r.commit_metadata;
  opt("merge_source", r.merge_source);
  return j.dump();
}

int64_t SteadyMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace sediment::actions
