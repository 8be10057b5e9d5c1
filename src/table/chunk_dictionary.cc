// Dictionaries of column chunks (chunk_values_internal.h).
#include <parquet/types.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "table/chunk_values_internal.h"

namespace sediment::table::chunk_encoding {
namespace {

// A value's hash for the dictionary. Chain data's binary values are hashes
// and addresses, random from their first byte: their first and last eight
// bytes are hash enough. Other binary (strings with a common prefix and
// suffix) collides more and costs compares, never correctness.
uint64_t HashBytes(const uint8_t* p, size_t n) {
  uint64_t a = 0, b = 0;
  if (n >= 8) {
    std::memcpy(&a, p, 8);
    std::memcpy(&b, p + n - 8, 8);
  } else {
    std::memcpy(&a, p, n);
  }
  uint64_t h = (a ^ (b * 0x9FB21C651E98DF25ull) ^ n) * 0xD6E8FEB86659FD93ull;
  return h ^ (h >> 32);
}

uint64_t KeyOf(std::string_view value) {
  uint64_t key = 0;
  std::memcpy(&key, value.data(), std::min<size_t>(8, value.size()));
  return key;
}

// Arrow's statistics of a dictionary-encoded page from its distinct
// entries: the same bounds as from every value, from far fewer compares.
template <typename DType>
void UpdateDistinct(const Dictionary& d, const std::vector<uint32_t>& entries, int64_t nulls, int64_t valid,
                    parquet::Statistics* page) {
  using T = typename DType::c_type;
  std::vector<T> values(entries.size());
  for (size_t k = 0; k < entries.size(); ++k) {
    const std::string_view s = d.Value(entries[k]);
    if constexpr (std::is_same_v<T, parquet::ByteArray>) {
      values[k] = parquet::ByteArray(static_cast<uint32_t>(s.size()), reinterpret_cast<const uint8_t*>(s.data()));
    } else if constexpr (std::is_same_v<T, parquet::FLBA>) {
      values[k].ptr = reinterpret_cast<const uint8_t*>(s.data());
    } else {
      std::memcpy(&values[k], s.data(), sizeof(T));
    }
  }
  auto* stats = static_cast<parquet::TypedStatistics<DType>*>(page);
  stats->Update(values.data(), static_cast<int64_t>(values.size()), 0);
  stats->IncrementNullCount(nulls);
  stats->IncrementNumValues(valid - static_cast<int64_t>(values.size()));
}

}  // namespace

void UpdateFromDictionary(const Dictionary& d, int64_t at, int64_t valid, int64_t nulls, uint32_t page_no,
                          std::vector<uint32_t>* stamp, std::vector<uint32_t>* entries, parquet::Statistics* page) {
  entries->clear();
  for (int64_t k = at; k < at + valid; ++k) {
    const uint32_t e = d.indices[static_cast<size_t>(k)];
    if ((*stamp)[e] != page_no) {
      (*stamp)[e] = page_no;
      entries->push_back(e);
    }
  }
  switch (page->physical_type()) {
    case parquet::Type::INT32:
      return UpdateDistinct<parquet::Int32Type>(d, *entries, nulls, valid, page);
    case parquet::Type::INT64:
      return UpdateDistinct<parquet::Int64Type>(d, *entries, nulls, valid, page);
    case parquet::Type::FLOAT:
      return UpdateDistinct<parquet::FloatType>(d, *entries, nulls, valid, page);
    case parquet::Type::DOUBLE:
      return UpdateDistinct<parquet::DoubleType>(d, *entries, nulls, valid, page);
    case parquet::Type::BYTE_ARRAY:
      return UpdateDistinct<parquet::ByteArrayType>(d, *entries, nulls, valid, page);
    case parquet::Type::FIXED_LEN_BYTE_ARRAY:
      return UpdateDistinct<parquet::FLBAType>(d, *entries, nulls, valid, page);
    default:
      return;
  }
}

int BitWidth(size_t entries) {
  int w = 1;
  while (w < 32 && (uint64_t{1} << w) < entries) ++w;
  return w;
}

uint32_t Dictionary::Insert(const Values& v, int64_t i, std::string_view value, uint64_t key) {
  const bool whole = v.width > 0 && v.width <= 8;  // the key is the value
  const uint64_t h = whole ? (key * 0x9E3779B97F4A7C15ull) ^ (key >> 29)
                           : HashBytes(reinterpret_cast<const uint8_t*>(value.data()), value.size());
  const size_t mask = slots_.size() - 1;
  for (size_t s = (h ^ (h >> 32)) & mask;; s = (s + 1) & mask) {
    Slot& slot = slots_[s];
    if (slot.entry == 0) {
      const auto entry = static_cast<uint32_t>(first.size());
      slot = {h, key, entry + 1};
      first.push_back(i);
      arena_.append(value);
      arena_at_.push_back(static_cast<uint32_t>(arena_.size()));
      bytes += v.PlainSize(i);
      if (first.size() * 2 > slots_.size()) Grow();
      return entry;
    }
    if (slot.hash == h && slot.key == key) {
      if (whole) return slot.entry - 1;
      const std::string_view known = Value(slot.entry - 1);
      if (known.size() == value.size() && std::memcmp(known.data(), value.data(), value.size()) == 0) {
        return slot.entry - 1;
      }
    }
  }
}

void Dictionary::Grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.size() * 2, Slot());
  const size_t mask = slots_.size() - 1;
  for (const Slot& slot : old) {
    if (slot.entry == 0) continue;
    size_t t = (slot.hash ^ (slot.hash >> 32)) & mask;
    while (slots_[t].entry != 0) t = (t + 1) & mask;
    slots_[t] = slot;
  }
}

bool Dictionary::Build(const Values& v, int64_t n, int64_t limit) {
  limit = std::min<int64_t>(limit, INT32_MAX);  // the arena's offsets are 32-bit
  slots_.assign(1024, Slot());
  indices.reserve(static_cast<size_t>(n));
  std::string_view last;
  uint64_t last_key = 0;
  uint32_t last_index = 0;
  int64_t hashed = 0;
  const bool whole = v.width > 0 && v.width <= 8;  // the key is the value
  for (int64_t i = 0; i < n; ++i) {
    if (!v.Valid(i)) continue;
    const std::string_view value = v.Get(i);
    const uint64_t key = KeyOf(value);
    // Block numbers, block hashes and timestamps come in runs: no hash for a repeat.
    if (hashed == 0 || key != last_key || (!whole && value != last)) {
      last_index = Insert(v, i, value, key);
      if (bytes > limit) return false;
      // 4,096 values hashed and nearly every one new: the rest will be too,
      // and if the entries so far, scaled from the rows read to all rows,
      // outgrow the limit, the dictionary will.
      if (++hashed == 4096 && first.size() * 20 >= 19 * 4096 && bytes * n / (i + 1) > limit) return false;
      last = value;
      last_key = key;
    }
    indices.push_back(last_index);
  }
  return true;
}

}  // namespace sediment::table::chunk_encoding
