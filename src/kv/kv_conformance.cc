#include "kv/kv_conformance.h"

#include <atomic>
#include <barrier>
#include <map>
#include <random>
#include <thread>

namespace sediment::kv {
namespace {

std::string Val(KvStore& s, const std::string& key) {
  auto r = s.Get(key);
  return r.ok() ? *r : "<" + r.status().ToString() + ">";
}

TEST_P(KvConformanceTest, GetMissingIsNotFound) {
  auto r = store_->Get("nope");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(IsNotFound(r.status())) << r.status().ToString();
}

TEST_P(KvConformanceTest, SetGetOverwriteDelete) {
  ASSERT_TRUE(store_->Set("a", "1").ok());
  EXPECT_EQ(Val(*store_, "a"), "1");
  ASSERT_TRUE(store_->Set("a", "2").ok());
  EXPECT_EQ(Val(*store_, "a"), "2");
  ASSERT_TRUE(store_->Delete("a").ok());
  EXPECT_TRUE(IsNotFound(store_->Get("a").status()));
  EXPECT_TRUE(store_->Delete("a").ok()) << "deleting an absent key is fine";
}

TEST_P(KvConformanceTest, BinaryKeysAndValues) {
  std::string key("k\0\xff\x01", 4);
  std::string value("\0\0v\xfe", 4);
  ASSERT_TRUE(store_->Set(key, value).ok());
  EXPECT_EQ(*store_->Get(key), value);
  ASSERT_TRUE(store_->Set("", "empty key").ok());
  EXPECT_EQ(*store_->Get(""), "empty key");
  ASSERT_TRUE(store_->Set("empty value", "").ok());
  EXPECT_EQ(*store_->Get("empty value"), "");
}

TEST_P(KvConformanceTest, ScanPrefixFromAndLimit) {
  for (const char* k : {"t/b", "t/a", "t/c", "t0", "s/z", "t/", "t/a/x"}) ASSERT_TRUE(store_->Set(k, k).ok());
  auto page = store_->Scan("t/", "", 100);
  ASSERT_TRUE(page.ok());
  std::vector<std::string> keys;
  for (const auto& kv : page->items) keys.push_back(kv.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"t/", "t/a", "t/a/x", "t/b", "t/c"}));
  EXPECT_FALSE(page->has_more);

  page = store_->Scan("t/", "t/a0", 100);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->items.size(), 2u);
  EXPECT_EQ(page->items[0].key, "t/b");
  EXPECT_EQ(page->items[0].value, "t/b");

  page = store_->Scan("t/", "", 2);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->items.size(), 2u);
  EXPECT_TRUE(page->has_more);

  page = store_->Scan("t/", "", 5);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->items.size(), 5u);
  EXPECT_FALSE(page->has_more) << "exactly `limit` keys and none after";

  page = store_->Scan("t/", "a", 100);  // `from` before the prefix
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->items.size(), 5u);

  page = store_->Scan("t/", "u", 100);  // `from` after the prefix
  ASSERT_TRUE(page.ok());
  EXPECT_TRUE(page->items.empty());

  page = store_->Scan("", "", 100);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->items.size(), 7u);
  EXPECT_EQ(page->items.front().key, "s/z");
}

TEST_P(KvConformanceTest, FloorFindsTheGreatestKeyAtOrBefore) {
  for (const char* k : {"s/z", "t/b", "t/d", "t/f", "u/a"}) ASSERT_TRUE(store_->Set(k, std::string("v") + k).ok());
  auto floor = [&](const char* at) -> std::string {
    auto got = store_->Floor("t/", at);
    EXPECT_TRUE(got.ok()) << got.status().ToString();
    if (!got.ok() || !*got) return "-";
    EXPECT_EQ((*got)->value, "v" + (*got)->key);
    return (*got)->key;
  };
  EXPECT_EQ(floor("t/d"), "t/d") << "an exact key is its own floor";
  EXPECT_EQ(floor("t/e"), "t/d");
  EXPECT_EQ(floor("t/c9"), "t/b");
  EXPECT_EQ(floor("t/a"), "-") << "nothing before: not the key of another prefix";
  EXPECT_EQ(floor("t/\xff\xff"), "t/f") << "not the key after the prefix";
  auto empty = store_->Floor("x/", "x/9");
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(empty->has_value());
}

TEST_P(KvConformanceTest, ScanPrefixEndingInFF) {
  std::string p("p\xff", 2);
  ASSERT_TRUE(store_->Set(p + "a", "1").ok());
  ASSERT_TRUE(store_->Set(p + "\xff", "2").ok());
  ASSERT_TRUE(store_->Set("q", "3").ok());
  auto page = store_->Scan(p, "", 10);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->items.size(), 2u);
}

TEST_P(KvConformanceTest, ScanAllPagesThroughManyKeys) {
  Batch batch;
  for (int i = 0; i < 5000; ++i) {
    char key[32];
    std::snprintf(key, sizeof(key), "many/%06d", i);
    batch.Put(key, std::to_string(i));
  }
  ASSERT_TRUE(store_->Apply(batch).ok());
  ASSERT_TRUE(store_->Set("manz", "outside").ok());
  int n = 0;
  bool ordered = true;
  std::string last;
  Status st = store_->ScanAll("many/", "", [&](const KeyValue& kv) -> Result<bool> {
    if (!last.empty() && kv.key <= last) ordered = false;
    last = kv.key;
    if (kv.value != std::to_string(n)) ordered = false;
    ++n;
    return true;
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(n, 5000);
  EXPECT_TRUE(ordered);

  n = 0;
  st = store_->ScanAll("many/", "many/004990", [&](const KeyValue&) -> Result<bool> { return ++n < 3; });
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(n, 3) << "visit returning false stops the scan";
}

TEST_P(KvConformanceTest, SetIfAbsentAndEquals) {
  ASSERT_TRUE(store_->SetIf("k", "1", std::nullopt).ok());
  Status st = store_->SetIf("k", "2", std::nullopt);
  EXPECT_TRUE(IsPreconditionFailed(st)) << st.ToString();
  EXPECT_EQ(Val(*store_, "k"), "1");
  st = store_->SetIf("k", "2", std::string("0"));
  EXPECT_TRUE(IsPreconditionFailed(st));
  EXPECT_EQ(Val(*store_, "k"), "1");
  ASSERT_TRUE(store_->SetIf("k", "2", std::string("1")).ok());
  EXPECT_EQ(Val(*store_, "k"), "2");
  st = store_->SetIf("absent", "x", std::string("y"));
  EXPECT_TRUE(IsPreconditionFailed(st));
  EXPECT_TRUE(IsNotFound(store_->Get("absent").status()));
}

TEST_P(KvConformanceTest, BatchAppliesAllOrNothing) {
  ASSERT_TRUE(store_->Set("live/a", "1").ok());
  ASSERT_TRUE(store_->Set("live/b", "1").ok());

  // Precondition fails on the last check: nothing of the batch is applied.
  Batch bad;
  bad.Require(Precondition::Present("live/a"))
      .Require(Precondition::Equals("live/b", "1"))
      .Require(Precondition::Absent("live/a"))
      .Put("live/c", "new")
      .Delete("live/a")
      .Put("live/b", "changed");
  Status st = store_->Apply(bad);
  EXPECT_TRUE(IsPreconditionFailed(st)) << st.ToString();
  EXPECT_NE(st.message().find("live/a"), std::string::npos) << "names the key: " << st.message();
  EXPECT_EQ(Val(*store_, "live/a"), "1");
  EXPECT_EQ(Val(*store_, "live/b"), "1");
  EXPECT_TRUE(IsNotFound(store_->Get("live/c").status()));

  Batch good;
  good.Require(Precondition::Present("live/a"))
      .Require(Precondition::Equals("live/b", "1"))
      .Require(Precondition::Absent("live/c"))
      .Put("live/c", "new")
      .Delete("live/a")
      .Put("live/b", "changed")
      .Put("live/d", "first")
      .Delete("live/d")
      .Put("live/e", "x")
      .Put("live/e", "y");
  ASSERT_TRUE(store_->Apply(good).ok());
  EXPECT_TRUE(IsNotFound(store_->Get("live/a").status()));
  EXPECT_EQ(Val(*store_, "live/b"), "changed");
  EXPECT_EQ(Val(*store_, "live/c"), "new");
  EXPECT_TRUE(IsNotFound(store_->Get("live/d").status())) << "mutations apply in order";
  EXPECT_EQ(Val(*store_, "live/e"), "y");

  EXPECT_TRUE(store_->Apply(Batch{}).ok()) << "an empty batch is fine";
}

TEST_P(KvConformanceTest, ConcurrentSetIfExactlyOneWinsEachRound) {
  constexpr int kThreads = 6;
  constexpr int kRounds = 60;
  ASSERT_TRUE(store_->Set("counter", "0").ok());
  std::vector<std::array<std::atomic<int>, 1>> wins(kRounds);
  for (auto& w : wins) w[0] = 0;
  std::atomic<int> errors{0};
  std::barrier sync(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        sync.arrive_and_wait();
        Status st = store_->SetIf("counter", std::to_string(r + 1), std::to_string(r));
        if (st.ok()) {
          wins[r][0]++;
        } else if (!IsPreconditionFailed(st)) {
          errors++;
        }
        sync.arrive_and_wait();
        (void)t;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  for (int r = 0; r < kRounds; ++r) EXPECT_EQ(wins[r][0].load(), 1) << "round " << r;
  EXPECT_EQ(Val(*store_, "counter"), std::to_string(kRounds));
}

TEST_P(KvConformanceTest, ConcurrentTransfersPreserveTheTotal) {
  // Accounts hold balances; each transfer is one batch whose preconditions are
  // the balances it read. Lost updates or partial batches would change the sum.
  constexpr int kAccounts = 8;
  constexpr int kThreads = 4;
  constexpr int kTransfers = 300;
  for (int i = 0; i < kAccounts; ++i) ASSERT_TRUE(store_->Set("acct/" + std::to_string(i), "100").ok());
  std::atomic<int> applied{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      for (int n = 0; n < kTransfers; ++n) {
        int a = rng() % kAccounts, b = rng() % kAccounts;
        if (a == b) continue;
        std::string ka = "acct/" + std::to_string(a), kb = "acct/" + std::to_string(b);
        auto va = store_->Get(ka);
        auto vb = store_->Get(kb);
        if (!va.ok() || !vb.ok()) {
          errors++;
          continue;
        }
        int x = std::stoi(*va), y = std::stoi(*vb);
        Batch batch;
        batch.Require(Precondition::Equals(ka, *va))
            .Require(Precondition::Equals(kb, *vb))
            .Put(ka, std::to_string(x - 1))
            .Put(kb, std::to_string(y + 1));
        Status st = store_->Apply(batch);
        if (st.ok()) {
          applied++;
        } else if (!IsPreconditionFailed(st)) {
          errors++;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_GT(applied.load(), 0);
  int total = 0;
  auto page = store_->Scan("acct/", "", 100);
  ASSERT_TRUE(page.ok());
  for (const auto& kv : page->items) total += std::stoi(kv.value);
  EXPECT_EQ(total, kAccounts * 100);
}

TEST_P(KvConformanceTest, MatchesAModelUnderRandomOperations) {
  std::map<std::string, std::string> model;
  std::mt19937 rng(42);
  auto key = [&] { return "r/" + std::to_string(rng() % 40); };
  for (int step = 0; step < 2000; ++step) {
    std::string k = key();
    switch (rng() % 4) {
      case 0:
        ASSERT_TRUE(store_->Set(k, std::to_string(step)).ok());
        model[k] = std::to_string(step);
        break;
      case 1:
        ASSERT_TRUE(store_->Delete(k).ok());
        model.erase(k);
        break;
      case 2: {
        std::optional<std::string> expected;
        if (rng() % 2 && model.count(k)) expected = model[k];
        bool should = expected ? model.count(k) && model[k] == *expected : !model.count(k);
        Status st = store_->SetIf(k, "c" + std::to_string(step), expected);
        ASSERT_EQ(st.ok(), should) << st.ToString();
        if (should) model[k] = "c" + std::to_string(step);
        break;
      }
      case 3: {
        auto page = store_->Scan("r/", k, 5);
        ASSERT_TRUE(page.ok());
        auto it = model.lower_bound(k);
        for (const auto& kv : page->items) {
          ASSERT_NE(it, model.end());
          EXPECT_EQ(kv.key, it->first);
          EXPECT_EQ(kv.value, it->second);
          ++it;
        }
        EXPECT_EQ(page->has_more, it != model.end());
        break;
      }
    }
  }
}

}  // namespace
}  // namespace sediment::kv
