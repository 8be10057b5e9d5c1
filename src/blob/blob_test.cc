#include "blob/blob.h"

#include <arpa/inet.h>
#include <arrow/buffer.h>
#include <arrow/io/interfaces.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <map>
#include <optional>
#include <thread>

#include "base/test_util.h"
#include "blob/fault_injection.h"
#include "blob/s3_sign_internal.h"

namespace sediment::blob {
namespace {

namespace fs = std::filesystem;

// S3 tests run against the MinIO that scripts/test.sh starts; they need
// SEDIMENT_TEST_S3_ENDPOINT (host:port), _ACCESS_KEY, _SECRET_KEY and _BUCKET.
std::optional<S3Config> TestS3Config(std::string* bucket) {
  const char* endpoint = std::getenv("SEDIMENT_TEST_S3_ENDPOINT");
  if (endpoint == nullptr) return std::nullopt;
  S3Config c;
  c.endpoint = endpoint;
  c.scheme = "http";
  c.access_key_id = std::getenv("SEDIMENT_TEST_S3_ACCESS_KEY");
  c.secret_access_key = std::getenv("SEDIMENT_TEST_S3_SECRET_KEY");
  *bucket = std::getenv("SEDIMENT_TEST_S3_BUCKET");
  return c;
}

// Arrow wants S3 finalized before exit.
class S3Finalizer : public ::testing::Environment {
 public:
  void TearDown() override { FinalizeS3(); }
};
[[maybe_unused]] auto* const kS3Finalizer = ::testing::AddGlobalTestEnvironment(new S3Finalizer);

// The same tests on local disk and on S3.
class BlobStoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "s3") {
      std::string bucket;
      auto config = TestS3Config(&bucket);
      if (!config) GTEST_SKIP() << "no S3 configured (scripts/test.sh starts MinIO)";
      // A fresh prefix per test: the bucket is shared.
      auto s = OpenBlobStore("s3://" + bucket + "/" + fs::path(dir_.path()).filename().string(), *config);
      ASSERT_TRUE(s.ok()) << s.status().ToString();
      store_ = *s;
      local_ = false;
    } else {
      auto s = OpenBlobStore(dir_.Sub("objects"), S3Config{});
      ASSERT_TRUE(s.ok()) << s.status().ToString();
      store_ = *s;
    }
  }

  std::string Read(const std::string& path) {
    auto buf = store_->Get(path);
    return buf.ok() ? (*buf)->ToString() : "<" + buf.status().ToString() + ">";
  }

  // Everything stored: on local disk every file under the root (temp files
  // included); on S3 every object (an unfinished multipart upload is none).
  std::vector<std::string> FilesOnDisk() {
    std::vector<std::string> out;
    if (!local_) {
      for (const auto& o : *store_->List("")) out.push_back(o.path);
      return out;
    }
    for (const auto& e : fs::recursive_directory_iterator(dir_.Sub("objects"))) {
      if (e.is_regular_file()) out.push_back(fs::relative(e.path(), dir_.Sub("objects")).string());
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  testing::TempDir dir_;
  std::shared_ptr<BlobStore> store_;
  bool local_ = true;
};

INSTANTIATE_TEST_SUITE_P(Backends, BlobStoreTest, ::testing::Values("local", "s3"),
                         [](const auto& info) { return info.param; });

TEST_P(BlobStoreTest, PutGetOverwriteDelete) {
  ASSERT_TRUE(store_->Put("a/b/c.parquet", "hello").ok());
  EXPECT_EQ(Read("a/b/c.parquet"), "hello");
  ASSERT_TRUE(store_->Put("a/b/c.parquet", "world!").ok());
  EXPECT_EQ(Read("a/b/c.parquet"), "world!");
  auto info = store_->Stat("a/b/c.parquet");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->size, 6);
  EXPECT_GT(ToUnixMicros(info->mtime), 0);
  ASSERT_TRUE(store_->Delete("a/b/c.parquet").ok());
  EXPECT_TRUE(IsNotFound(store_->Stat("a/b/c.parquet").status()));
  EXPECT_TRUE(IsNotFound(store_->OpenReader("a/b/c.parquet").status()));
  EXPECT_TRUE(store_->Delete("a/b/c.parquet").ok()) << "deleting an absent object is fine";
}

TEST_P(BlobStoreTest, EmptyAndBinaryObjects) {
  ASSERT_TRUE(store_->Put("empty", "").ok());
  EXPECT_EQ(Read("empty"), "");
  std::string bin("\0\x01\xff\0", 4);
  ASSERT_TRUE(store_->Put("bin", bin).ok());
  EXPECT_EQ(Read("bin"), bin);
}

TEST_P(BlobStoreTest, ReadRange) {
  ASSERT_TRUE(store_->Put("r", "0123456789").ok());
  EXPECT_EQ((*store_->ReadRange("r", 2, 3))->ToString(), "234");
  EXPECT_EQ((*store_->ReadRange("r", 8, 100))->ToString(), "89");
  EXPECT_EQ((*store_->ReadRange("r", 10, 5))->ToString(), "");
  EXPECT_TRUE(IsInvalidArgument(store_->ReadRange("r", 11, 1).status()));
  EXPECT_TRUE(IsInvalidArgument(store_->ReadRange("r", -1, 1).status()));
}

TEST_P(BlobStoreTest, ReadSizedReadsWhatItNamesInOneRequest) {
  // On S3 this is Sediment's own signed GET (s3_sign_internal.h): a key
  // with spaces, '+', '=' and UTF-8 must be signed as it is sent.
  const std::string key = "dir/a b+c=d/caf\xc3\xa9 %41.parquet";
  std::string data(300000, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7 % 251);
  ASSERT_TRUE(store_->Put(key, data).ok());
  auto whole = store_->ReadSized(key, 0, static_cast<int64_t>(data.size()), static_cast<int64_t>(data.size()));
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  EXPECT_TRUE((*whole)->ToString() == data);
  auto part = store_->ReadSized(key, 1000, 10, static_cast<int64_t>(data.size()));
  ASSERT_TRUE(part.ok()) << part.status().ToString();
  EXPECT_EQ((*part)->ToString(), data.substr(1000, 10));
  EXPECT_TRUE(IsInvalidArgument(store_->ReadSized(key, 299999, 2, 300000).status())) << "past the stated size";
  auto missing = store_->ReadSized("dir/none", 0, 10, 10);
  EXPECT_TRUE(IsNotFound(missing.status())) << missing.status().ToString();
  // A size the object does not have (a stale record): an error, never other bytes.
  auto larger = store_->ReadSized(key, 0, 300010, 300010);
  EXPECT_FALSE(larger.ok());
  auto smaller = store_->ReadSized(key, 0, 10, 299990);
  EXPECT_FALSE(smaller.ok()) << "a prefix of a larger object";
  EXPECT_NE(smaller.status().message().find("300000 bytes"), std::string::npos) << smaller.status().ToString();
}

TEST_P(BlobStoreTest, ListByPrefix) {
  for (const char* p : {"t/eth/logs/000000001-a.parquet", "t/eth/logs/000000100-b.parquet",
                        "t/eth/blocks/000000001-c.parquet", "t/eth/logsx", "u/other"}) {
    ASSERT_TRUE(store_->Put(p, p).ok());
  }
  auto list = store_->List("t/eth/logs/");
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].path, "t/eth/logs/000000001-a.parquet");
  EXPECT_EQ((*list)[1].path, "t/eth/logs/000000100-b.parquet");
  EXPECT_EQ((*list)[0].size, 30);

  list = store_->List("t/eth/logs");  // a partial name matches both
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->size(), 3u);

  list = store_->List("");
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->size(), 5u);

  list = store_->List("nothing/here/");
  ASSERT_TRUE(list.ok());
  EXPECT_TRUE(list->empty());
  EXPECT_TRUE(IsInvalidArgument(store_->List("../x").status()));
}

TEST_P(BlobStoreTest, WriterPublishesOnlyOnClose) {
  auto w = store_->OpenWriter("stream/obj");
  ASSERT_TRUE(w.ok());
  for (int i = 0; i < 100; ++i) ASSERT_TRUE((*w)->Write("0123456789", 10).ok());
  EXPECT_EQ(*(*w)->Tell(), 1000);
  EXPECT_TRUE(IsNotFound(store_->Stat("stream/obj").status())) << "not visible before Close";
  EXPECT_TRUE(store_->List("stream/")->empty()) << "temp files are never listed";
  ASSERT_TRUE((*w)->Close().ok());
  EXPECT_EQ(store_->Stat("stream/obj")->size, 1000);
  EXPECT_EQ(Read("stream/obj").substr(0, 20), "01234567890123456789");
  EXPECT_EQ(FilesOnDisk(), std::vector<std::string>{"stream/obj"});
}

// A large object's writer (O_DIRECT locally): pieces of any size and alignment, several buffers'
// worth and a tail shorter than a block, read back byte for byte; aborted, nothing is left.
TEST_P(BlobStoreTest, LargeWriterWritesEveryByteOfAnySizeOfPiece) {
  std::string expect;
  auto w = store_->OpenLargeWriter("large/obj");
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  uint64_t x = 88172645463325252ull;
  for (int64_t piece : {1, 4095, 4097, 3 << 20, 7, 6 << 20, 123457, 1}) {
    std::string bytes(static_cast<size_t>(piece), '\0');
    for (auto& c : bytes) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      c = static_cast<char>(x);
    }
    ASSERT_TRUE((*w)->Write(bytes.data(), piece).ok());
    expect += bytes;
  }
  EXPECT_EQ(*(*w)->Tell(), static_cast<int64_t>(expect.size()));
  EXPECT_TRUE(IsNotFound(store_->Stat("large/obj").status())) << "not visible before Close";
  ASSERT_TRUE((*w)->Close().ok());
  EXPECT_EQ(store_->Stat("large/obj")->size, static_cast<int64_t>(expect.size()));
  EXPECT_TRUE(Read("large/obj") == expect) << "the bytes read back differ from those written";
  auto aborted = store_->OpenLargeWriter("large/aborted");
  ASSERT_TRUE(aborted.ok());
  ASSERT_TRUE((*aborted)->Write(expect.data(), 5 << 20).ok());
  ASSERT_TRUE((*aborted)->Abort().ok());
  EXPECT_TRUE(IsNotFound(store_->Stat("large/aborted").status()));
  EXPECT_EQ(FilesOnDisk(), std::vector<std::string>{"large/obj"});
}

TEST_P(BlobStoreTest, DroppedOrAbortedWriterLeavesNothing) {
  {
    auto w = store_->OpenWriter("x/dropped");
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Write("partial", 7).ok());
  }
  auto w = store_->OpenWriter("x/aborted");
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Write("partial", 7).ok());
  ASSERT_TRUE((*w)->Abort().ok());
  EXPECT_TRUE(FilesOnDisk().empty());
}

TEST_P(BlobStoreTest, BadPathsAreRejected) {
  for (const std::string& p :
       {std::string(""), std::string("/abs"), std::string("a//b"), std::string("a/../b"), std::string("./a"),
        std::string("a/"), std::string("a\\b"), std::string("a\0b", 3), std::string(".sediment-tmp-x")}) {
    EXPECT_TRUE(IsInvalidArgument(store_->Put(p, "x"))) << "path: " << p;
    EXPECT_TRUE(IsInvalidArgument(store_->Stat(p).status())) << "path: " << p;
  }
  EXPECT_TRUE(FilesOnDisk().empty());
}

TEST_P(BlobStoreTest, ConcurrentWriters) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        std::string p = "c/" + std::to_string(t) + "/" + std::to_string(i);
        EXPECT_TRUE(store_->Put(p, p).ok());
      }
    });
  }
  for (auto& t : threads) t.join();
  auto list = store_->List("c/");
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->size(), 100u);
  for (const auto& o : *list) EXPECT_EQ(Read(o.path), o.path);
}

TEST_P(BlobStoreTest, FailedWriteLeavesNoPartialObject) {
  auto faulty = std::make_shared<FaultInjectingBlobStore>(store_);
  ASSERT_TRUE(faulty->Put("seg/old", "previous version").ok());
  faulty->FailNth(BlobOp::kWrite, 2);
  auto w = faulty->OpenWriter("seg/old");
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Write("first half ", 11).ok());
  Status st = (*w)->Write("second half", 11);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("injected write failure"), std::string::npos) << st.ToString();
  w->reset();  // the caller gives up
  EXPECT_EQ(Read("seg/old"), "previous version") << "the old object is untouched";
  EXPECT_EQ(FilesOnDisk(), std::vector<std::string>{"seg/old"}) << "no temp file left";
}

TEST_P(BlobStoreTest, FailedPublishLeavesNoPartialObject) {
  auto faulty = std::make_shared<FaultInjectingBlobStore>(store_);
  faulty->FailNth(BlobOp::kPublish, 1);
  Status st = faulty->Put("seg/new", "content");
  EXPECT_FALSE(st.ok());
  EXPECT_TRUE(IsNotFound(faulty->Stat("seg/new").status()));
  EXPECT_TRUE(FilesOnDisk().empty());
  // The fault was one-shot: the retry publishes.
  ASSERT_TRUE(faulty->Put("seg/new", "content").ok());
  EXPECT_EQ(Read("seg/new"), "content");
  EXPECT_EQ(faulty->Count(BlobOp::kPublish), 2);
  EXPECT_EQ(faulty->Injected(), 1);
}

TEST_P(BlobStoreTest, FailedDeleteKeepsObjectUntilRetried) {
  auto faulty = std::make_shared<FaultInjectingBlobStore>(store_);
  ASSERT_TRUE(faulty->Put("g/x", "x").ok());
  faulty->FailAlways(BlobOp::kDelete);
  EXPECT_FALSE(faulty->Delete("g/x").ok());
  EXPECT_FALSE(faulty->Delete("g/x").ok());
  EXPECT_TRUE(faulty->Stat("g/x").ok());
  faulty->Reset();
  EXPECT_TRUE(faulty->Delete("g/x").ok());
  EXPECT_TRUE(IsNotFound(faulty->Stat("g/x").status()));
  EXPECT_EQ(faulty->Count(BlobOp::kDelete), 3);
}

TEST_P(BlobStoreTest, ReopenClearsWritesLeftByADeadProcess) {
  if (!local_) GTEST_SKIP() << "local storage only (S3 drops unfinished multipart uploads itself)";
  auto w = store_->OpenWriter("crash/obj");
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Write("partial", 7).ok());
  EXPECT_EQ(FilesOnDisk().size(), 1u) << "the temp file exists while writing";
  // A process that dies never closes or aborts; reopening the root clears it.
  auto reopened = OpenBlobStore(dir_.Sub("objects"), S3Config{});
  ASSERT_TRUE(reopened.ok());
  EXPECT_TRUE(FilesOnDisk().empty());
  EXPECT_TRUE((*reopened)->List("")->empty());
}

bool IsNotImplemented(const Status& st) {
  ErrorCode code;
  return GetErrorCode(st, &code) && code == ErrorCode::kNotImplemented;
}

// PUTs `body` to a presigned URL as a client would; the answer's status and ETag.
std::pair<int, std::string> PutToUrl(const std::string& url, const std::string& body) {
  const auto scheme_end = url.find("://") + 3;
  const auto path_at = url.find('/', scheme_end);
  httplib::Client c(url.substr(0, path_at));
  c.set_url_encode(false);
  auto res = c.Put(url.substr(path_at).c_str(), body, "application/octet-stream");
  if (!res) return {0, ""};
  return {res->status, res->get_header_value("ETag")};
}

TEST_P(BlobStoreTest, ClientMultipartUploadsAssemblePartsSentAndCopied) {
  if (local_) {
    EXPECT_FALSE(store_->ClientMultipart());
    EXPECT_TRUE(IsNotImplemented(store_->CreateMultipartUpload("a").status()));
    EXPECT_TRUE(IsNotImplemented(store_->AbortMultipartUpload("a", "id")));
    return;
  }
  ASSERT_TRUE(store_->ClientMultipart());
  // Part 1 is copied from another object (bytes 1..5 MiB of it); part 2 is
  // sent to a presigned URL. The key needs encoding.
  std::string source(5 * 1024 * 1024 + 10, '\0');
  for (size_t i = 0; i < source.size(); ++i) source[i] = static_cast<char>(i * 13 % 253);
  ASSERT_TRUE(store_->Put("src/a b+c", source).ok());
  const std::string key = "data/big file=caf\xc3\xa9";
  auto id = store_->CreateMultipartUpload(key);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  auto copied = store_->UploadPartCopy(key, *id, 1, *store_, "src/a b+c", std::make_pair(int64_t{1}, int64_t{5 << 20}));
  ASSERT_TRUE(copied.ok()) << copied.status().ToString();
  auto url = store_->PresignUploadPart(key, *id, 2, 300);
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  auto [status, etag] = PutToUrl(*url, "the tail");
  ASSERT_EQ(status, 200);
  EXPECT_TRUE(IsNotFound(store_->Stat(key).status())) << "visible before completion";
  // A part whose ETag is not the one S3 gave is refused, and changes nothing.
  auto wrong = store_->CompleteMultipartUpload(key, *id, {{1, *copied}, {2, "\"0123\""}});
  EXPECT_TRUE(IsInvalidArgument(wrong.status())) << wrong.status().ToString();
  auto done = store_->CompleteMultipartUpload(key, *id, {{1, *copied}, {2, etag}});
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_TRUE(done->find('"') == std::string::npos && done->size() > 32) << *done;
  EXPECT_TRUE(Read(key) == source.substr(1, 5 << 20) + "the tail");
  // A completed or aborted upload is gone.
  EXPECT_TRUE(IsNotFound(store_->CompleteMultipartUpload(key, *id, {{1, *copied}}).status()));
  auto other = store_->CreateMultipartUpload("data/aborted");
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  ASSERT_TRUE(store_->AbortMultipartUpload("data/aborted", *other).ok());
  auto after = store_->CompleteMultipartUpload("data/aborted", *other, {{1, *copied}});
  EXPECT_TRUE(IsNotFound(after.status())) << after.status().ToString();
  const Status unknown = store_->AbortMultipartUpload("data/aborted", "no-such-upload");
  // S3 answers NoSuchUpload; MinIO accepts it as done.
  EXPECT_TRUE(unknown.ok() || IsNotFound(unknown)) << unknown.ToString();
  EXPECT_TRUE(IsInvalidArgument(store_->PresignUploadPart(key, *id, 0, 300).status()));
  EXPECT_TRUE(IsInvalidArgument(store_->PresignUploadPart(key, *id, 10001, 300).status()));
  EXPECT_TRUE(IsInvalidArgument(store_->CompleteMultipartUpload(key, *id, {}).status()));
}

TEST(S3SignTest, AGetIsSignedAsAwsDocumentsIt) {
  // The GET Object example of AWS's signature V4 documentation (header-based
  // authentication): its key, time, range and signature.
  S3Presigner p;
  p.endpoint = "s3.amazonaws.com";
  p.path_style = false;
  p.key = "AKIAIOSFODNN7EXAMPLE";
  p.secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
  std::tm tm{};
  tm.tm_year = 2013 - 1900;
  tm.tm_mon = 4;
  tm.tm_mday = 24;
  auto headers = SignedGetHeaders(p, "examplebucket", "test.txt", "bytes=0-9", timegm(&tm));
  std::map<std::string, std::string> h(headers.begin(), headers.end());
  EXPECT_EQ(h["host"], "examplebucket.s3.amazonaws.com");
  EXPECT_EQ(h["x-amz-date"], "20130524T000000Z");
  EXPECT_EQ(h["Authorization"],
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

// A server on loopback that drops the first connection after reading its
// request (as a server does with a connection it closed while idle), then
// answers every request on later connections with the 10 bytes asked for.
class DroppingServer {
 public:
  DroppingServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    socklen_t len = sizeof(addr);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    EXPECT_EQ(::listen(fd_, 8), 0);
    thread_ = std::thread([this] { Serve(); });
  }
  ~DroppingServer() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  int port() const { return port_; }
  int connections() const { return connections_.load(); }

 private:
  void Serve() {
    for (;;) {
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      const int n = ++connections_;
      char buf[8192];
      std::string request;
      while (request.find("\r\n\r\n") == std::string::npos) {
        ssize_t got = ::recv(c, buf, sizeof(buf), 0);
        if (got <= 0) break;
        request.append(buf, static_cast<size_t>(got));
      }
      if (n > 1) {
        const std::string answer =
            "HTTP/1.1 206 Partial Content\r\nContent-Length: 10\r\nContent-Range: bytes 0-9/10\r\n"
            "Connection: close\r\n\r\n0123456789";
        (void)::send(c, answer.data(), answer.size(), MSG_NOSIGNAL);
      }
      ::close(c);
    }
  }

  int fd_ = -1;
  int port_ = 0;
  std::atomic<int> connections_{0};
  std::thread thread_;
};

TEST(S3GetterTest, AConnectionDroppedBeforeTheAnswerIsTriedAgainOnANewOne) {
  DroppingServer server;
  S3Presigner p;
  p.scheme = "http";
  p.endpoint = "127.0.0.1:" + std::to_string(server.port());
  p.key = "k";
  p.secret = "s";
  S3Getter getter(p, "bucket");
  auto got = getter.Get("a/b", 0, 10, 10);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ((*got)->ToString(), "0123456789");
  EXPECT_EQ(server.connections(), 2);
  // A size the object does not have is an error, not its bytes.
  EXPECT_FALSE(getter.Get("a/b", 0, 10, 11).ok());
}

TEST(BlobOpenTest, UriForms) {
  testing::TempDir dir;
  auto a = OpenBlobStore("file://" + dir.Sub("a"), S3Config{});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ((*a)->Describe(), "local:" + dir.Sub("a"));
  auto b = OpenBlobStore("local://" + dir.Sub("b") + "/", S3Config{});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*b)->Describe(), "local:" + dir.Sub("b"));
  EXPECT_TRUE(fs::is_directory(dir.Sub("b")));
  auto c = OpenBlobStore("gs://bucket", S3Config{});
  EXPECT_TRUE(IsInvalidArgument(c.status())) << c.status().ToString();
  auto d = OpenBlobStore("s3://", S3Config{});
  EXPECT_TRUE(IsInvalidArgument(d.status())) << d.status().ToString();
}

// A local store whose directory vanished under it: writes fail as server
// faults (I/O errors, 500), never as NotFound, which a client would take for
// "what you named does not exist"; reads of absent objects stay NotFound.
TEST(BlobOpenTest, WritesIntoAVanishedRootAreIoErrorsNotNotFound) {
  testing::TempDir dir;
  auto store = OpenBlobStore(dir.Sub("objects"), S3Config{});
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  fs::remove_all(dir.Sub("objects"));
  Status put = (*store)->Put("tables/a/b.parquet", "x");
  ASSERT_FALSE(put.ok());
  EXPECT_FALSE(IsNotFound(put)) << put.ToString();
  EXPECT_TRUE(put.IsIOError()) << put.ToString();
  EXPECT_TRUE(IsNotFound((*store)->Get("tables/a/b.parquet").status()));
}

TEST(BlobOpenTest, MissingBucketIsAClearError) {
  std::string bucket;
  auto config = TestS3Config(&bucket);
  if (!config) GTEST_SKIP() << "no S3 configured";
  auto s = OpenBlobStore("s3://no-such-bucket-here/x", *config);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(IsInvalidArgument(s.status())) << s.status().ToString();
  EXPECT_NE(s.status().message().find("bucket no-such-bucket-here does not exist"), std::string::npos);
}

TEST(BlobOpenTest, RootThatIsAFileIsAClearError) {
  testing::TempDir dir;
  ASSERT_TRUE((*OpenBlobStore(dir.Sub("root"), S3Config{}))->Put("f", "x").ok());
  auto s = OpenBlobStore(dir.Sub("root/f"), S3Config{});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("not a directory"), std::string::npos) << s.status().message();
}

TEST(BlobOpenTest, UnwritableRoot) {
  if (::geteuid() == 0) GTEST_SKIP() << "root can write anywhere";
  testing::TempDir dir;
  ::chmod(dir.path().c_str(), 0500);
  auto s = OpenBlobStore(dir.Sub("objects"), S3Config{});
  ::chmod(dir.path().c_str(), 0700);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find(dir.Sub("objects")), std::string::npos);
}

}  // namespace
}  // namespace sediment::blob
