// Private to actions/: an action file parsed and checked, the hooks that run
// it (webhook.cc, lua_hook.cc) and what they share.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "actions/actions.h"
#include "base/clock.h"
#include "base/status.h"

namespace sediment::actions {

struct Hook {
  std::string id;
  std::string type;     // webhook | lua
  std::string if_expr;  // "" = run unless an earlier hook of the action failed
  nlohmann::json properties;
};

struct Action {
  std::string name;
  // event -> branch globs; none (or an empty list) = every branch.
  std::map<std::string, std::vector<std::string>> on;
  std::vector<Hook> hooks;
};

// Parses and checks an action file (YAML). InvalidArgument with lakeFS's
// message ("'name' is required: invalid action", ...).
Result<Action> ParseAction(std::string_view text);

// Whether `action` runs on `event` for `branch` (tag events: any).
bool Matches(const Action& action, const std::string& event, const std::string& branch);

// Whether a hook with `if_expr` runs, given whether an earlier hook of its
// action failed. Expressions: success(), failure(), always(), true, false,
// each optionally negated with '!'.
bool ShouldRun(const std::string& if_expr, bool failed_before);

// A Go duration ("2s", "1m30s", "250ms"), in milliseconds.
Result<int64_t> ParseGoDuration(std::string_view text);

// lakeFS's secure strings: "{{ ENV.NAME }}" replaced from the environment
// (names starting with `prefix` only; others become ""). `secret` is set when
// anything was replaced, so logs show "*******"; the values read are added to
// `secrets` (when given), so wherever they turn up they can be masked.
Result<std::string> ExpandEnv(const std::string& value, const std::string& prefix, bool* secret,
                              std::vector<std::string>* secrets = nullptr);

// The hook output, cut at a limit (the cut is marked once). The secrets added
// are masked wherever they appear in it, also across two appends.
class OutputLog {
 public:
  explicit OutputLog(int64_t limit) : limit_(limit) {}
  void Append(std::string_view text);
  // Past the limit too (up to 4 KiB): the line that says why the hook failed.
  void AppendAlways(std::string_view text);
  // A value never to show (shorter than 3 bytes: it would mask everything).
  void AddSecret(std::string value);
  // `text` with every secret replaced by "*******".
  std::string Mask(std::string_view text) const;
  std::string text() const { return Mask(text_); }

 private:
  int64_t limit_;
  bool cut_ = false;
  std::string text_;
  std::vector<std::string> secrets_;
};

// The webhook body: lakeFS's EventInfo, fields in its order, empty ones left out.
std::string EventJson(const HookRecord& record, const std::string& action_name, const std::string& hook_id,
                      int64_t now_micros);

class AddressPolicy;

struct HookEnv {
  const ActionsOptions* options;
  const AddressPolicy* address_policy;  // where webhooks may connect
  const Clock* clock = nullptr;         // the event's time (webhooks' event_time)
  ApiClient* api;                       // may be null (Lua's lakefs calls then fail)
  std::string run_id;
  std::string action_name;
  std::string storage_namespace;
  int64_t deadline_micros = 0;  // the hook's time limit, on the steady clock
  int64_t timeout_ms = 0;       // the same, as a duration (for messages)
};

// Each hook appends what it did to `log` and fails with the reason lakeFS gives.
Status RunWebhook(const Hook& hook, const HookRecord& record, const HookEnv& env, OutputLog* log);
Status RunLua(const Hook& hook, const HookRecord& record, const HookEnv& env, OutputLog* log);

// Microseconds on the steady clock (deadlines).
int64_t SteadyMicros();

}  // namespace sediment::actions
