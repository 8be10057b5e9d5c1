// Helpers the catalog's tests share: MakeEntry, and CatalogFixture, the one
// set-up of a catalog test (a catalog on an in-memory store, a manual clock,
// repository "repo"). Test-only; header-only.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/test_util.h"
#include "catalog/catalog.h"
#include "catalog/entry.h"
#include "kv/hooked_kv_testing.h"
#include "kv/kv.h"

namespace sediment::catalog::fixtures {

// An entry whose checksum is `checksum`, `size` bytes long, with its data at data/<checksum>.
inline Entry MakeEntry(const std::string& checksum, int64_t size) {
  Entry e;
  e.address = "data/" + checksum;
  e.checksum = checksum;
  e.size = size;
  e.mtime = 1700000000;
  e.content_type = "application/octet-stream";
  return e;
}
// The same, as long as its checksum.
inline Entry MakeEntry(const std::string& checksum) {
  return MakeEntry(checksum, static_cast<int64_t>(checksum.size()));
}

// A catalog on kv_ and clock_ with repository "repo" (default branch main).
// A test file derives a small fixture of its own for the helpers only it uses
// and overrides SetUp where its set-up differs, building on Options() and
// NewCatalog().
class CatalogFixture : public ::testing::Test {
 protected:
  // Options every catalog test starts from: the range cache under dir_ (a
  // fresh directory per call, so a second catalog on the same kv has its own),
  // namespaces under dir_, small ranges so a few hundred keys span many of
  // them, and no grace for retired staging tokens (the tests watch the dropper
  // work at once).
  CatalogOptions Options() {
    CatalogOptions opts;
    opts.cache_dir = dir_.Sub("cache" + std::to_string(caches_++));
    opts.namespaces.local_roots = {dir_.path()};
    opts.ranges = {512, 4096, 8};
    opts.dropped_token_grace = Duration::zero();
    return opts;
  }

  // A catalog on kv_ and clock_, started (with its background work only if
  // asked); a failed start is a test failure.
  std::unique_ptr<Catalog> NewCatalog(CatalogOptions opts, bool background = false) {
    auto catalog = std::make_unique<Catalog>(kv_, clock_, std::move(opts));
    Status st = catalog->Start(background);
    if (!st.ok()) ADD_FAILURE() << "the catalog did not start: " << st.ToString();
    return catalog;
  }
  std::unique_ptr<Catalog> NewCatalog() { return NewCatalog(Options()); }

  // Creates repository "repo" at `storage_namespace`, default branch main.
  void CreateRepo(const std::string& storage_namespace) {
    ASSERT_OK(catalog_->CreateRepository("repo", storage_namespace, "main", false).status());
  }

  void SetUp() override {
    catalog_ = NewCatalog();
    CreateRepo(dir_.Sub("ns"));
  }

  // Stages MakeEntry(checksum) at `path`.
  void Put(const std::string& path, const std::string& checksum, const std::string& branch = "main") {
    ASSERT_OK(catalog_->PutEntry("repo", branch, path, MakeEntry(checksum)));
  }
  void Commit(const std::string& msg, const std::string& branch = "main") {
    CommitParams p;
    p.message = msg;
    ASSERT_OK(catalog_->CommitBranch("repo", branch, p).status());
  }
  // Every item of `ref`'s listing after o.after, read o.amount at a time; on
  // an error, what was read before it.
  std::vector<ListItem> ListPaged(const std::string& ref, ListOptions o) {
    std::vector<ListItem> out;
    while (true) {
      auto page = catalog_->ListEntries("repo", ref, o);
      EXPECT_TRUE(page.ok()) << page.status().ToString();
      if (!page.ok()) return out;
      for (const auto& item : page->items) out.push_back(item);
      if (!page->has_more) return out;
      o.after = page->items.back().path;
    }
  }

  sediment::testing::TempDir dir_;
  // Hooks and read counters unused unless a test sets them.
  std::shared_ptr<kv::HookedKv> kv_ = std::make_shared<kv::HookedKv>(kv::NewMemoryStore());
  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>();
  std::unique_ptr<Catalog> catalog_;

 private:
  int caches_ = 0;  // cache directories Options() handed out
};

}  // namespace sediment::catalog::fixtures
