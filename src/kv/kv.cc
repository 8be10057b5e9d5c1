#include "kv/kv.h"

#include <fmt/format.h>

#include <algorithm>

namespace sediment::kv {

Status KvStore::SetIf(std::string_view key, std::string_view value, const std::optional<std::string>& expected) {
  Batch batch;
  batch.Require(expected ? Precondition::Equals(std::string(key), *expected) : Precondition::Absent(std::string(key)));
  batch.Put(std::string(key), std::string(value));
  return Apply(batch);
}

Status KvStore::ScanAll(std::string_view prefix, std::string_view from,
                        const std::function<Result<bool>(const KeyValue&)>& visit, size_t first_page) {
  std::string cursor(from);
  size_t page = std::max<size_t>(1, first_page);
  while (true) {
    ARROW_ASSIGN_OR_RAISE(ScanPage p, Scan(prefix, cursor, page));
    for (const auto& kv : p.items) {
      ARROW_ASSIGN_OR_RAISE(bool more, visit(kv));
      if (!more) return Status::OK();
    }
    if (!p.has_more || p.items.empty()) return Status::OK();
    // Continue just after the last key: append the smallest byte.
    cursor = p.items.back().key;
    cursor.push_back('\0');
    page = std::min<size_t>(page * 2, 8192);
  }
}

std::string PrefixEnd(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    unsigned char last = static_cast<unsigned char>(end.back());
    if (last != 0xff) {
      end.back() = static_cast<char>(last + 1);
      return end;
    }
    end.pop_back();
  }
  return end;
}

Result<std::shared_ptr<KvStore>> Open(const OpenOptions& options) {
  if (options.type == "rocksdb") return OpenRocksDb(options.rocksdb_path, options.rocksdb_sync);
  if (options.type == "mem") return NewMemoryStore();
  if (options.type == "postgres") return OpenPostgres(options.postgres_dsn, options.postgres_schema);
  return InvalidArgument(fmt::format("database.type \"{}\" is not supported by this build", options.type));
}

}  // namespace sediment::kv
