#include "query/stream.h"

#include <map>

#include "query/query_test_fixture_internal.h"

namespace sediment::query {
namespace {

using std::chrono::milliseconds;

class QueryStreamTest : public QueryTest {
 protected:
  Result<std::unique_ptr<QueryStream>> Open(const std::string& sql, std::optional<StreamCursor> cursor = {}) {
    ARROW_ASSIGN_OR_RAISE(auto parsed, engine_->Parse(sql));
    StreamOptions options;
    options.max_blocks = 15;
    options.keep_alive = milliseconds(50);
    options.poll = milliseconds(10);
    return QueryStream::Open(engine_.get(), service_.get(), &watch_, parsed, std::move(cursor), options);
  }

  // The next microbatch; its rows (block -> values) applied to `client_` as a
  // client applies them: a reorg drops every block from its start first.
  Microbatch Apply(QueryStream& stream) {
    auto next = stream.Next([] { return false; });
    EXPECT_TRUE(next.ok()) << next.status().ToString();
    if (!next.ok() || next->run == nullptr) return next.ok() ? std::move(*next) : Microbatch{};
    if (next->reorg) client_.erase(client_.lower_bound(next->span.start), client_.end());
    while (true) {
      auto batch = next->run->Next();
      EXPECT_TRUE(batch.ok()) << batch.status().ToString();
      if (!batch.ok() || *batch == nullptr) break;
      auto conformed = *Conform(*batch, stream.schema());
      auto blocks = std::static_pointer_cast<arrow::UInt64Array>(conformed->column(0));
      auto values = std::static_pointer_cast<arrow::Int64Array>(conformed->column(1));
      for (int64_t i = 0; i < conformed->num_rows(); ++i) {
        EXPECT_GE(blocks->Value(i), next->span.start);
        EXPECT_LE(blocks->Value(i), next->span.end);
        client_[blocks->Value(i)].push_back(values->Value(i));
      }
    }
    return std::move(*next);
  }

  // Every block's values as a batch query sees them.
  std::map<uint64_t, std::vector<int64_t>> Batch() {
    std::map<uint64_t, std::vector<int64_t>> out;
    auto run = *engine_->Run(*engine_->Parse("SELECT block_num, value FROM eth.logs"));
    while (true) {
      auto batch = *run->Next();
      if (batch == nullptr) break;
      auto blocks = std::static_pointer_cast<arrow::UInt64Array>(batch->column(0));
      auto values = std::static_pointer_cast<arrow::Int64Array>(batch->column(1));
      for (int64_t i = 0; i < batch->num_rows(); ++i) out[blocks->Value(i)].push_back(values->Value(i));
    }
    return out;
  }

  static void Sorted(std::map<uint64_t, std::vector<int64_t>>* rows) {
    for (auto& [block, values] : *rows) std::sort(values.begin(), values.end());
  }

  TableWatch watch_;
  std::map<uint64_t, std::vector<int64_t>> client_;
};

TEST_F(QueryStreamTest, DeliversEveryBlockOnceInRangesEndingAtSegmentEnds) {
  auto stream = Open("SELECT block_num, value FROM eth.logs SETTINGS stream = true");
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  std::string prev;
  for (uint64_t end : {9, 19, 29, 39}) {
    auto mb = Apply(**stream);
    ASSERT_NE(mb.run, nullptr);
    EXPECT_EQ(mb.span.network, "eth");
    EXPECT_EQ(mb.span.start, end - 9);
    EXPECT_EQ(mb.span.end, end) << "at most 15 blocks, ending where a segment of the first table ends";
    EXPECT_EQ(mb.span.hash, ForkHash(end, 0));
    if (end > 9) EXPECT_EQ(mb.span.prev_hash, ForkHash(end - 10, 0));
    EXPECT_FALSE(mb.reorg);
  }
  EXPECT_EQ((*stream)->Next([] { return false; })->run, nullptr) << "nothing new: a keep-alive";
  Append(40, 44);
  auto mb = Apply(**stream);
  EXPECT_EQ(mb.span.start, 40u);
  EXPECT_EQ(mb.span.end, 44u);
  auto expected = Batch();
  Sorted(&client_);
  Sorted(&expected);
  EXPECT_EQ(client_, expected);
}

TEST_F(QueryStreamTest, AReorgRestartsAfterTheLastDeliveredBlockBothChainsShare) {
  auto stream = *Open("SELECT block_num, value FROM eth.logs SETTINGS stream = true");
  for (int i = 0; i < 4; ++i) Apply(*stream);
  Append(35, 41, /*fork=*/1, /*parent_fork=*/0);  // blocks 35.. replaced
  auto mb = Apply(*stream);
  ASSERT_NE(mb.run, nullptr);
  EXPECT_TRUE(mb.reorg);
  EXPECT_EQ(mb.span.start, 30u) << "29 was delivered and is still canonical; 39 is not";
  EXPECT_EQ(mb.span.prev_hash, ForkHash(29, 0));
  while (client_.rbegin()->first < 41) Apply(*stream);
  auto expected = Batch();
  Sorted(&client_);
  Sorted(&expected);
  EXPECT_EQ(client_, expected) << "every canonical row exactly once, the abandoned fork's gone";
  EXPECT_EQ(client_[36], (std::vector<int64_t>{1360, 1361}));
}

TEST_F(QueryStreamTest, AResumeGoesOnAfterTheCursorOrIsToldOfTheReorg) {
  auto canonical =
      *Open("SELECT block_num FROM eth.logs SETTINGS stream = true", StreamCursor{"eth", 29, ForkHash(29, 0)});
  auto mb = *canonical->Next([] { return false; });
  EXPECT_EQ(mb.span.start, 30u);
  EXPECT_FALSE(mb.reorg);

  Append(35, 41, 1, 0);
  auto abandoned =
      *Open("SELECT block_num FROM eth.logs SETTINGS stream = true", StreamCursor{"eth", 39, ForkHash(39, 0)});
  mb = *abandoned->Next([] { return false; });
  EXPECT_TRUE(mb.reorg) << "the cursor's block 39 is on the abandoned fork";
  EXPECT_EQ(mb.span.start, 35u) << "the chains part after block 34 (the reorg's record)";
  EXPECT_EQ(mb.span.prev_hash, ForkHash(34, 0));
}

TEST_F(QueryStreamTest, ACursorOnAForkTwiceAbandonedGoesBackToWhereItParted) {
  Append(35, 41, 1, 0);  // fork 1 from block 35 (a cursor at 39 of fork 0 would go on from 35)
  Append(32, 42, 2, 0);  // fork 2 from 32: 34 of fork 0, fork 0's ancestor, is gone too
  auto stream =
      *Open("SELECT block_num FROM eth.logs SETTINGS stream = true", StreamCursor{"eth", 39, ForkHash(39, 0)});
  auto mb = *stream->Next([] { return false; });
  EXPECT_TRUE(mb.reorg);
  EXPECT_EQ(mb.span.start, 32u);
  EXPECT_EQ(mb.span.prev_hash, ForkHash(31, 0));
}

TEST_F(QueryStreamTest, RefusesWhatCannotStream) {
  auto aggregate = Open("SELECT count(*) FROM eth.logs");
  EXPECT_TRUE(IsInvalidArgument(aggregate.status()));
  EXPECT_NE(aggregate.status().message().find("non-incremental operation: Aggregate"), std::string::npos)
      << aggregate.status().message();
  table::TableId other{"base", "logs"};
  ASSERT_TRUE(service_->CreateTable(other, LogSchema()).ok());
  auto cross = Open("SELECT * FROM eth.logs a JOIN base.logs b USING (block_num)");
  EXPECT_NE(cross.status().message().find("cross-network"), std::string::npos) << cross.status().ToString();
  auto wrong = Open("SELECT * FROM eth.logs", StreamCursor{"base", 3, ForkHash(3, 0)});
  EXPECT_TRUE(IsInvalidArgument(wrong.status())) << wrong.status().ToString();
  EXPECT_TRUE(IsInvalidArgument(Open("SELECT 1").status()));
}

TEST_F(QueryStreamTest, OpenStreamsAreLimited) {
  limits_.max_streams = 1;
  engine_ = std::make_unique<QueryEngine>(service_.get(), limits_, &metrics_);
  auto first = Open("SELECT block_num FROM eth.logs");
  ASSERT_TRUE(first.ok());
  auto second = Open("SELECT block_num FROM eth.logs");
  EXPECT_TRUE(IsBusy(second.status())) << second.status().ToString();
  first->reset();
  EXPECT_TRUE(Open("SELECT block_num FROM eth.logs").ok());
}

TEST_F(QueryStreamTest, ACancelledClientEndsTheStream) {
  auto stream = *Open("SELECT block_num FROM eth.logs");
  EXPECT_TRUE(stream->Next([] { return true; }).status().IsCancelled());
}

}  // namespace
}  // namespace sediment::query
