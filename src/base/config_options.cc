// The tables of settings (config_internal.h): names, types, checks and
// defaults' homes in Config. A data table: one row per setting.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "base/config_internal.h"
#include "base/net_address.h"

namespace sediment::config_internal {
namespace {

template <typename T>
Rule Check(std::function<std::string(const T&)> f, std::string bound = {}) {
  return Rule{[f](const void* v) { return f(*static_cast<const T*>(v)); }, std::move(bound)};
}

// A bound as docs/configuration.md writes it: integers in full, numbers as short as they go.
std::string Num(double v) { return fmt::format("{}", v); }

Rule IntAtLeast(int64_t min) {
  return Check<int64_t>(
      [min](const int64_t& v) { return v >= min ? std::string() : fmt::format("must be at least {}, got {}", min, v); },
      fmt::format("≥ {}", min));
}

Rule IntBetween(int64_t min, int64_t max) {
  return Check<int64_t>(
      [min, max](const int64_t& v) {
        return v >= min && v <= max ? std::string() : fmt::format("must be from {} to {}, got {}", min, max, v);
      },
      fmt::format("{} to {}", min, max));
}

// HOST:PORT, or "" for no listener.
Rule ListenOrNone() {
  return Check<std::string>([](const std::string& v) {
    if (v.empty()) return std::string();
    std::string host;
    int port;
    Status st = ParseHostPort(v, &host, &port);
    return st.ok() ? std::string() : st.message();
  });
}

Rule DoubleAtLeast(double min, bool exclusive = false) {
  return Check<double>(
      [min, exclusive](const double& v) {
        if (!std::isfinite(v)) return std::string("must be a finite number");
        if (exclusive ? v > min : v >= min) return std::string();
        return fmt::format("must be {} {}, got {}", exclusive ? "greater than" : "at least", min, v);
      },
      (exclusive ? "> " : "≥ ") + Num(min));
}

Rule DoubleBetween(double min, double max) {
  return Check<double>(
      [min, max](const double& v) {
        if (std::isfinite(v) && v >= min && v <= max) return std::string();
        return fmt::format("must be from {} to {}, got {}", min, max, v);
      },
      Num(min) + " to " + Num(max));
}

Rule OneOf(std::vector<std::string> allowed) {
  Rule rule = Check<std::string>([allowed](const std::string& v) {
    for (const auto& a : allowed) {
      if (v == a) return std::string();
    }
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    return fmt::format("must be one of {}, got \"{}\"", list, v);
  });
  rule.choices = std::move(allowed);
  return rule;
}

// A list setting whose every entry passes `f`.
Rule EachEntry(std::function<std::string(const std::string&)> f) {
  return Check<std::vector<std::string>>([f](const std::vector<std::string>& v) {
    for (const auto& entry : v) {
      if (entry.empty()) return std::string("an entry is empty");
      std::string problem = f(entry);
      if (!problem.empty()) return problem;
    }
    return std::string();
  });
}

std::string AbsoluteDirectory(const std::string& v) {
  if (v.front() != '/' || v.find('\0') != std::string::npos) {
    return fmt::format("\"{}\" is not an absolute directory", v);
  }
  return std::string();
}

std::string S3Prefix(const std::string& v) {
  return ParseS3Uri(v).ok() ? std::string() : fmt::format("\"{}\" is not s3://bucket or s3://bucket/prefix", v);
}

Rule Any() {
  return Rule{[](const void*) { return std::string(); }};
}

#define FIELD(path) [](Config& c) -> void* { return &c.path; }

}  // namespace

const std::vector<Option>& Options() {
  using T = Option::Type;
  static const std::vector<Option> options = {
      {"server.listen", FIELD(server.listen), T::kString, Check<std::string>([](const std::string& v) {
         std::string host;
         int port;
         Status st = ParseHostPort(v, &host, &port);
         return st.ok() ? std::string() : st.message();
       })},
      {"server.max_body_bytes", FIELD(server.max_body_bytes), T::kInt, IntAtLeast(1024)},
      {"server.header_timeout_secs", FIELD(server.header_timeout_secs), T::kDouble, DoubleAtLeast(0, true)},
      {"server.allowed_hosts", FIELD(server.allowed_hosts), T::kStringList, EachEntry([](const std::string& v) {
         return v.find_first_of(" /\t") != std::string::npos ? fmt::format("\"{}\" is not a host name", v)
                                                             : std::string();
       })},
      {"gateway.listen", FIELD(gateway.listen), T::kString, ListenOrNone()},
      {"gateway.domain_names", FIELD(gateway.domain_names), T::kStringList, EachEntry([](const std::string& v) {
         for (char c : v) {
           if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-')) {
             return fmt::format("\"{}\" is not a host name", v);
           }
         }
         return std::string();
       })},
      {"gateway.region", FIELD(gateway.region), T::kString, Check<std::string>([](const std::string& v) {
         return v.empty() ? std::string("must not be empty") : std::string();
       })},
      {"console.enabled", FIELD(console.enabled), T::kBool, Any()},
      {"console.dir", FIELD(console.dir), T::kString,
       Check<std::string>([](const std::string& v) { return v.empty() ? std::string() : AbsoluteDirectory(v); })},
      {"console.chart_js", FIELD(console.chart_js), T::kString, Check<std::string>([](const std::string& v) {
         return v.empty() || v.front() != '/' ? fmt::format("\"{}\" is not an absolute file path", v) : std::string();
       })},
      {"auth.encrypt_secret_key",
       FIELD(auth.encrypt_secret_key),
       T::kString,
       Check<std::string>([](const std::string& v) {
         // The AES and session-signing keys are derived from it: a short one is guessable.
         return v.empty() || v.size() >= 32
                    ? std::string()
                    : fmt::format(
                          "must be at least 32 bytes of key material (it has {}), or empty for a key kept in "
                          "the store",
                          v.size());
       }),
       {},
       true},
      {"storage.data_dir", FIELD(storage.data_dir), T::kString, Check<std::string>([](const std::string& v) {
         return v.empty() ? std::string("must not be empty") : std::string();
       })},
      {"storage.objects", FIELD(storage.objects), T::kString, Check<std::string>([](const std::string& v) {
         auto pos = v.find("://");
         if (pos == std::string::npos) return std::string();
         std::string scheme = v.substr(0, pos);
         if (scheme == "file" || scheme == "local" || scheme == "s3") return std::string();
         return fmt::format("unsupported scheme \"{}://\" (use a path, file://, local:// or s3://)", scheme);
       })},
      {"storage.s3.endpoint", FIELD(storage.s3.endpoint), T::kString, Any()},
      {"storage.s3.region", FIELD(storage.s3.region), T::kString, Any()},
      {"storage.s3.access_key_id", FIELD(storage.s3.access_key_id), T::kString, Any()},
      {"storage.s3.secret_access_key", FIELD(storage.s3.secret_access_key), T::kString, Any(), {}, true},
      {"storage.s3.scheme", FIELD(storage.s3.scheme), T::kString, OneOf({"http", "https"})},
      {"storage.s3.path_style", FIELD(storage.s3.path_style), T::kBool, Any()},
      {"database.type", FIELD(database.type), T::kString, OneOf({"rocksdb", "postgres", "mem"})},
      {"database.rocksdb_path", FIELD(database.rocksdb_path), T::kString, Any()},
      {"database.rocksdb_sync", FIELD(database.rocksdb_sync), T::kBool, Any()},
      {"database.postgres_dsn", FIELD(database.postgres_dsn), T::kString, Any(), {}, true},
      {"database.postgres_schema", FIELD(database.postgres_schema), T::kString,
       Check<std::string>([](const std::string& v) {
         bool ok = !v.empty() && v.size() <= 63;
         for (char c : v) ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_');
         return ok ? std::string() : fmt::format("\"{}\" must be [a-z0-9_]+, at most 63 characters", v);
       })},
      {"log.level", FIELD(log.level), T::kString, OneOf({"trace", "debug", "info", "warn", "error", "off"})},
      {"log.format", FIELD(log.format), T::kString, OneOf({"text", "json"})},
      {"writer.bytes", FIELD(writer.bytes), T::kInt, IntAtLeast(1)},
      {"writer.rows", FIELD(writer.rows), T::kInt, IntAtLeast(0)},
      {"writer.overflow", FIELD(writer.overflow), T::kDouble, DoubleAtLeast(1.0)},
      {"writer.compression", FIELD(writer.compression), T::kString, Check<std::string>([](const std::string& v) {
         auto r = ParseCompression(v);
         return r.ok() ? std::string() : r.status().message();
       })},
      {"writer.max_row_group_mb", FIELD(writer.max_row_group_mb), T::kInt, IntAtLeast(1)},
      {"writer.max_row_group_rows", FIELD(writer.max_row_group_rows), T::kInt, IntAtLeast(1024)},
      {"writer.store_incompressible", FIELD(writer.store_incompressible), T::kBool, Any()},
      {"writer.bloom_filter_columns", FIELD(writer.bloom_filter_columns), T::kStringList,
       EachEntry([](const std::string&) { return std::string(); })},  // EachEntry refuses empty entries
      {"writer.max_reorg_depth", FIELD(writer.max_reorg_depth), T::kInt, IntAtLeast(1)},
      {"writer.compactor.active", FIELD(writer.compactor.active), T::kBool, Any()},
      {"writer.compactor.min_interval", FIELD(writer.compactor.min_interval), T::kDouble, DoubleAtLeast(0)},
      {"writer.compactor.skip_latest_segments", FIELD(writer.compactor.skip_latest_segments), T::kInt, IntAtLeast(0)},
      {"writer.compactor.cooldown_duration", FIELD(writer.compactor.cooldown_duration), T::kDouble, DoubleAtLeast(0)},
      {"writer.compactor.max_eager_bytes", FIELD(writer.compactor.max_eager_bytes), T::kInt, IntAtLeast(0)},
      {"writer.compactor.metadata_concurrency", FIELD(writer.compactor.metadata_concurrency), T::kInt, IntAtLeast(1)},
      {"writer.compactor.write_concurrency", FIELD(writer.compactor.write_concurrency), T::kInt, IntAtLeast(1)},
      {"writer.compactor.gc_manifest_grace_period", FIELD(writer.compactor.gc_manifest_grace_period), T::kDouble,
       DoubleAtLeast(0)},
      {"worker.poll_interval_secs", FIELD(worker.poll_interval_secs), T::kDouble, DoubleAtLeast(0.01)},
      {"writer.compactor.policy", FIELD(writer.compactor.policy), T::kString, OneOf({"adjacent", "tiered"})},
      {"writer.compactor.size_ratio", FIELD(writer.compactor.size_ratio), T::kDouble, DoubleAtLeast(0, true)},
      {"writer.compactor.lease_ttl", FIELD(writer.compactor.lease_ttl), T::kDouble, DoubleAtLeast(1)},
      {"catalog.cache_dir", FIELD(catalog.cache_dir), T::kString, Any()},
      {"catalog.cache_bytes", FIELD(catalog.cache_bytes), T::kInt, IntAtLeast(1 << 20)},
      {"catalog.range_min_bytes", FIELD(catalog.range_min_bytes), T::kInt, IntAtLeast(1)},
      {"catalog.range_max_bytes", FIELD(catalog.range_max_bytes), T::kInt, IntAtLeast(1024)},
      {"catalog.range_split_modulus", FIELD(catalog.range_split_modulus), T::kInt, IntAtLeast(1)},
      {"catalog.local_namespace_roots", FIELD(catalog.local_namespace_roots), T::kStringList,
       EachEntry(AbsoluteDirectory)},
      {"catalog.s3_namespace_prefixes", FIELD(catalog.s3_namespace_prefixes), T::kStringList, EachEntry(S3Prefix)},
      {"catalog.dropped_token_grace", FIELD(catalog.dropped_token_grace), T::kDouble, DoubleAtLeast(0)},
      {"catalog.gc_interval", FIELD(catalog.gc_interval), T::kDouble, DoubleAtLeast(0)},
      {"catalog.gc_retention_days", FIELD(catalog.gc_retention_days), T::kDouble, DoubleAtLeast(0)},
      {"catalog.link_address_ttl_secs", FIELD(catalog.link_address_ttl_secs), T::kDouble, DoubleAtLeast(0, true)},
      {"catalog.gc_grace", FIELD(catalog.gc_grace), T::kDouble, DoubleAtLeast(60)},
      {"iceberg.enabled", FIELD(iceberg.enabled), T::kBool, Any()},
      {"iceberg.token_ttl_secs", FIELD(iceberg.token_ttl_secs), T::kDouble, DoubleAtLeast(60)},
      {"iceberg.max_manifest_files", FIELD(iceberg.max_manifest_files), T::kInt, IntAtLeast(4)},
      {"iceberg.s3_endpoint", FIELD(iceberg.s3_endpoint), T::kString, Any()},
      {"iceberg.s3_access_key_id", FIELD(iceberg.s3_access_key_id), T::kString, Any()},
      {"iceberg.s3_secret_access_key", FIELD(iceberg.s3_secret_access_key), T::kString, Any(), {}, true},
      {"iceberg.repository_credentials", FIELD(iceberg.repository_credentials), T::kString, OneOf({"sts", "none"})},
      {"iceberg.sts_role_arn", FIELD(iceberg.sts_role_arn), T::kString, Any()},
      {"iceberg.vended_credentials_secs", FIELD(iceberg.vended_credentials_secs), T::kDouble,
       Check<double>(
           [](const double& v) {
             return v >= 900 && v <= 43200 ? std::string()
                                           : fmt::format("must be from 900 to 43200 (STS's bounds), got {}", v);
           },
           "900 to 43200")},
      {"query.enabled", FIELD(query.enabled), T::kBool, Any()},
      {"query.flight_listen", FIELD(query.flight_listen), T::kString, ListenOrNone()},
      {"query.jsonl_listen", FIELD(query.jsonl_listen), T::kString, ListenOrNone()},
      {"query.memory_limit_mib", FIELD(query.memory_limit_mib), T::kInt, IntBetween(16, int64_t{1} << 30)},
      {"query.timeout_secs", FIELD(query.timeout_secs), T::kDouble, DoubleBetween(0.1, 86400)},
      {"query.threads", FIELD(query.threads), T::kInt, IntBetween(1, 256)},
      {"query.max_concurrent", FIELD(query.max_concurrent), T::kInt, IntBetween(1, 1024)},
      {"query.max_streams", FIELD(query.max_streams), T::kInt, IntBetween(0, 100000)},
      {"query.microbatch_max_blocks", FIELD(query.microbatch_max_blocks), T::kInt, IntAtLeast(1)},
      {"query.keep_alive_secs", FIELD(query.keep_alive_secs), T::kDouble, DoubleBetween(0.1, 3600)},
      {"query.poll_interval_secs", FIELD(query.poll_interval_secs), T::kDouble, DoubleBetween(0.01, 60)},
      {"actions.enabled", FIELD(actions.enabled), T::kBool, Any(), {"LAKEFS_ACTIONS_ENABLED"}},
      {"actions.env_prefix", FIELD(actions.env_prefix), T::kString, Any()},
      {"actions.hook_timeout_secs", FIELD(actions.hook_timeout_secs), T::kDouble, DoubleAtLeast(0.1)},
      {"actions.lua_memory_mib", FIELD(actions.lua_memory_mib), T::kInt, IntAtLeast(4)},
      {"actions.hook_workers", FIELD(actions.hook_workers), T::kInt, IntAtLeast(2)},
      {"actions.hook_runs_per_repository", FIELD(actions.hook_runs_per_repository), T::kInt, IntAtLeast(1)},
      {"actions.lua_sandbox", FIELD(actions.lua_sandbox), T::kString, Any()},
      {"actions.webhook_allowed_hosts", FIELD(actions.webhook_allowed_hosts), T::kStringList,
       EachEntry([](const std::string& v) {
         if (v.find('/') != std::string::npos || ParseIp(v)) {
           return ParseCidr(v) ? std::string()
                               : fmt::format("\"{}\" is not a CIDR block (bits past its length must be 0)", v);
         }
         bool name =
             !v.empty() && v.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-*") ==
                               std::string::npos;
         return name ? std::string() : fmt::format("\"{}\" is neither a host name nor a CIDR block", v);
       })},
      {"graveler.compaction.auto_trigger",
       FIELD(graveler.compaction.auto_trigger),
       T::kBool,
       Any(),
       {"LAKEFS_GRAVELER_COMPACTION_AUTO_TRIGGER"}},
      {"graveler.compaction.threshold",
       FIELD(graveler.compaction.threshold),
       T::kInt,
       IntAtLeast(1),
       {"LAKEFS_GRAVELER_COMPACTION_THRESHOLD"}},
      {"graveler.compaction.workers", FIELD(graveler.compaction.workers), T::kInt, IntAtLeast(1)},
  };
  return options;
}

#undef FIELD

const std::vector<JobOption>& JobOptions() {
  using T = Option::Type;
#define JF(f) [](JobConfig& j) -> void* { return &j.f; }
  static const std::vector<JobOption> options = {
      {"dataset", JF(dataset), T::kString, Check<std::string>([](const std::string& v) {
         bool ok = !v.empty() && v.size() <= 63 && v[0] >= 'a' && v[0] <= 'z';
         for (char c : v) ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_');
         return ok ? std::string() : fmt::format("\"{}\" is not a dataset name ([a-z][a-z0-9_]*)", v);
       })},
      {"source", JF(source), T::kString, OneOf({"synthetic", "evm-rpc"})},
      {"url", JF(url), T::kString, Check<std::string>([](const std::string& v) {
         bool ok = (v.rfind("http://", 0) == 0 && v.size() > 7) || (v.rfind("https://", 0) == 0 && v.size() > 8);
         // Not echoed: a node URL may carry a password or an API key.
         return ok ? std::string() : "is not an http:// or https:// URL";
       })},
      {"ca_file", JF(ca_file), T::kString, Check<std::string>([](const std::string& v) {
         return v.empty() || std::filesystem::is_regular_file(v) ? std::string()
                                                                 : fmt::format("\"{}\" is not a file", v);
       })},
      {"headers", JF(headers), T::kStringList, EachEntry([](const std::string& v) {
         auto colon = v.find(':');
         return colon != std::string::npos && colon > 0 && v.find_first_of("\r\n") == std::string::npos
                    ? std::string()
                    : fmt::format("\"{}…\" is not \"Name: value\"", v.substr(0, v.find_first_of(":= \t")));
       })},
      {"finality", JF(finality), T::kString, Check<std::string>([](const std::string& v) {
         bool digits = !v.empty() && v.size() <= 6;
         for (char c : v) digits = digits && c >= '0' && c <= '9';
         return v == "latest" || v == "safe" || v == "finalized" || digits
                    ? std::string()
                    : fmt::format("\"{}\" must be latest, safe, finalized or a number of confirmations", v);
       })},
      {"batch_size", JF(batch_size), T::kInt, IntAtLeast(1)},
      {"concurrency", JF(concurrency), T::kInt, IntAtLeast(1)},
      {"rate_limit", JF(rate_limit), T::kDouble, DoubleAtLeast(0)},
      {"timeout", JF(timeout), T::kDouble, DoubleAtLeast(0.001)},
      {"tables", JF(tables), T::kStringList, Rule{[](const void* p) -> std::string {
         const auto& v = *static_cast<const std::vector<std::string>*>(p);
         if (v.empty()) return "must name at least one of blocks, transactions, logs";
         std::set<std::string> seen;
         for (const auto& t : v) {
           if (t != "blocks" && t != "transactions" && t != "logs") {
             return fmt::format("\"{}\" is not a table of the source (blocks, transactions, logs)", t);
           }
           if (!seen.insert(t).second) return fmt::format("\"{}\" is named twice", t);
         }
         return std::string();
       }}},
      {"logs_from", JF(logs_from), T::kString, OneOf({"auto", "receipts", "eth_getLogs"})},
      {"logs_range", JF(logs_range), T::kInt, IntAtLeast(1)},
      {"seed", JF(seed), T::kInt, IntAtLeast(0)},
      {"start_block", JF(start_block), T::kInt, IntAtLeast(0)},
      {"history_blocks", JF(history_blocks), T::kInt, IntAtLeast(0)},
      {"block_time", JF(block_time), T::kDouble, DoubleAtLeast(0.001)},
      {"txs_per_block", JF(txs_per_block), T::kInt, IntAtLeast(0)},
      {"logs_per_tx", JF(logs_per_tx), T::kDouble, DoubleAtLeast(0)},
      {"reorg_probability", JF(reorg_probability), T::kDouble,
       Check<double>(
           [](const double& v) {
             return v >= 0 && v <= 1 ? std::string() : fmt::format("must be from 0 to 1, got {}", v);
           },
           "0 to 1")},
      {"max_reorg_depth", JF(max_reorg_depth), T::kInt, IntAtLeast(1)},
      {"autostart", JF(autostart), T::kBool, Any()},
  };
#undef JF
  return options;
}

}  // namespace sediment::config_internal
