// The tables of settings behind Config (config.cc): every [section] key and
// every [[jobs]] key, with its type and its check. Private to src/base.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "base/config.h"

namespace sediment::config_internal {

// A setting's check, and what it allows in words (what `sediment options`
// prints and docs/configuration.md must say: tests/test_docs.py holds them to it).
struct Rule {
  // Returns an empty string if the value is fine, else what is wrong.
  std::function<std::string(const void*)> check;
  std::string bound = {};                 // numbers: "≥ 1024", "> 0", "16 to 1073741824"; else ""
  std::vector<std::string> choices = {};  // the allowed values of a setting that is one of a few
  std::string operator()(const void* v) const { return check(v); }
};

// One setting: its dotted key, a typed pointer into Config, and a check.
struct Option {
  std::string key;
  std::function<void*(Config&)> field;
  enum class Type { kBool, kInt, kDouble, kString, kStringList } type;
  Rule check;
  std::vector<std::string> env_aliases = {};
  bool secret = false;
};

// [[jobs]] entries: their own small option table over JobConfig.
struct JobOption {
  const char* key;
  std::function<void*(JobConfig&)> field;
  Option::Type type;
  Rule check;
};

// SEDIMENT_ + the key in upper case, dots as underscores.
std::string EnvName(const std::string& key);

// Every setting, in the order docs/configuration.md lists them.
const std::vector<Option>& Options();
const std::vector<JobOption>& JobOptions();

}  // namespace sediment::config_internal
