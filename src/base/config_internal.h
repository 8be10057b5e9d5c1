// The tables of settings behind Config (config.cc): every [section] key and
// every [[jobs]] key, with its type and its check. Private to src/base.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "base/config.h"

namespace sediment::config_internal {

// One setting: its dotted key, a typed pointer into Config, and a check.
struct Option {
  std::string key;
  std::function<void*(Config&)> field;
  enum class Type { kBool, kInt, kDouble, kString, kStringList } type;
  // Returns an empty string if the value is fine, else what is wrong.
  std::function<std::string(const void*)> check;
  std::vector<std::string> env_aliases = {};
  bool secret = false;
};

// [[jobs]] entries: their own small option table over JobConfig.
struct JobOption {
  const char* key;
  std::function<void*(JobConfig&)> field;
  Option::Type type;
  std::function<std::string(const void*)> check;
};

// Every setting, in the order docs/configuration.md lists them.
const std::vector<Option>& Options();
const std::vector<JobOption>& JobOptions();

}  // namespace sediment::config_internal
