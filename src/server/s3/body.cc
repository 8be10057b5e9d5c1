// Request bodies as the gateway receives them: aws-chunked decoded, and
// checked against the signed SHA-256, Content-MD5 and x-amz-checksum-*
// (header or trailer) before anything is published.
#include <arrow/io/interfaces.h>
#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <memory>
#include <optional>

#include "base/ascii.h"
#include "base/crypto.h"
#include "server/s3/gateway_internal.h"

namespace sediment::server::s3 {
namespace {

// --- checksums of bodies --------------------------------------------------------

// One x-amz-checksum-<algorithm> being computed over the body.
class BodyChecksum {
 public:
  static Result<std::unique_ptr<BodyChecksum>> Make(const std::string& algorithm) {
    auto c = std::unique_ptr<BodyChecksum>(new BodyChecksum());
    c->algorithm_ = algorithm;
    if (algorithm == "sha256" || algorithm == "sha1") {
      c->md_ = std::make_unique<Digest>(algorithm == "sha256" ? DigestKind::kSha256 : DigestKind::kSha1);
    } else if (algorithm != "crc32" && algorithm != "crc32c") {
      return S3Error(
          400, "InvalidRequest",
          fmt::format("checksum algorithm \"{}\" is not supported (crc32, crc32c, sha1, sha256 are)", algorithm));
    }
    return c;
  }
  void Update(const char* d, size_t n) {
    auto p = reinterpret_cast<const unsigned char*>(d);
    if (md_) {
      md_->Update(d, n);
    } else if (algorithm_ == "crc32") {
      crc_ = static_cast<uint32_t>(crc32(crc_, p, static_cast<uInt>(n)));
    } else {
      crc_ = Crc32c(crc_, p, n);
    }
  }
  std::string Base64Value() {
    if (md_) return Base64(md_->Final());
    unsigned char be[4] = {static_cast<unsigned char>(crc_ >> 24), static_cast<unsigned char>(crc_ >> 16),
                           static_cast<unsigned char>(crc_ >> 8), static_cast<unsigned char>(crc_)};
    return Base64(std::string_view(reinterpret_cast<char*>(be), 4));
  }
  const std::string& algorithm() const { return algorithm_; }

 private:
  BodyChecksum() = default;
  std::string algorithm_;
  std::unique_ptr<Digest> md_;
  uint32_t crc_ = 0;
};

// The x-amz-checksum-* the body must match: named in a header (its value
// known now) or announced in x-amz-trailer (its value arrives after the body).
struct ExpectedChecksum {
  std::unique_ptr<BodyChecksum> checksum;  // null: the request asks for none
  std::string want;                        // base64; empty until a trailer gives it
  std::string trailer;                     // x-amz-trailer, lower case
};

Result<ExpectedChecksum> ExpectedChecksumOf(const httplib::Request& req) {
  ExpectedChecksum c;
  for (const auto& [k, v] : req.headers) {
    std::string lower = AsciiLower(k);
    if (lower.rfind("x-amz-checksum-", 0) == 0 && lower != "x-amz-checksum-algorithm" &&
        lower != "x-amz-checksum-type") {
      ARROW_ASSIGN_OR_RAISE(c.checksum, BodyChecksum::Make(lower.substr(15)));
      c.want = v;
    }
  }
  c.trailer = AsciiLower(req.get_header_value("x-amz-trailer"));
  if (!c.checksum && c.trailer.rfind("x-amz-checksum-", 0) == 0) {
    ARROW_ASSIGN_OR_RAISE(c.checksum, BodyChecksum::Make(c.trailer.substr(15)));
  }
  return c;
}

// The end of an aws-chunked body of `size` decoded bytes: the final chunk (and
// trailer) arrived, x-amz-decoded-content-length agrees, and a checksum
// announced as a trailer takes the trailer's value.
Status FinishChunked(const httplib::Request& req, const ChunkedDecoder& decoder, int64_t size,
                     ExpectedChecksum* expect) {
  ARROW_RETURN_NOT_OK(decoder.Finish());
  std::string decoded_len = req.get_header_value("x-amz-decoded-content-length");
  if (!decoded_len.empty() && decoded_len != std::to_string(size)) {
    return S3Error(400, "IncompleteBody",
                   fmt::format("x-amz-decoded-content-length says {} bytes, the body held {}", decoded_len, size));
  }
  if (expect->checksum && expect->want.empty()) {
    auto it = decoder.trailers().find("x-amz-checksum-" + expect->checksum->algorithm());
    if (it == decoder.trailers().end()) {
      return S3Error(400, "InvalidRequest",
                     fmt::format("x-amz-trailer announced {} but the body had no such trailer", expect->trailer));
    }
    expect->want = it->second;
  }
  return Status::OK();
}

// The body's digests against what the request says of them: the signed
// SHA-256 (a hashed payload), Content-MD5 and the x-amz-checksum-*.
Status CheckDigests(const httplib::Request& req, const Signature& sig, Digest& sha256, const std::string& raw_md5,
                    const ExpectedChecksum& expect) {
  if (sig.payload == PayloadKind::kHashed && sha256.FinalHex() != sig.payload_hash) {
    return S3Error(400, "XAmzContentSHA256Mismatch",
                   "the x-amz-content-sha256 you signed does not match the body's SHA-256");
  }
  std::string content_md5 = req.get_header_value("Content-MD5");
  if (!content_md5.empty() && Base64Decode(content_md5) != std::optional<std::string>(raw_md5)) {
    return S3Error(400, "BadDigest", "the Content-MD5 you specified does not match the body");
  }
  if (expect.checksum) {
    std::string got = expect.checksum->Base64Value();
    if (got != expect.want) {
      return S3Error(400, "BadDigest",
                     fmt::format("the x-amz-checksum-{} you specified ({}) does not match the body's ({})",
                                 expect.checksum->algorithm(), expect.want, got));
    }
  }
  return Status::OK();
}

}  // namespace

Result<ReceivedBody> ReceiveBody(const httplib::Request& req, const httplib::ContentReader& reader,
                                 const Caller& caller, arrow::io::OutputStream* out) {
  const Signature& sig = caller.sig;
  ARROW_ASSIGN_OR_RAISE(ExpectedChecksum expect, ExpectedChecksumOf(req));
  std::optional<ChunkedDecoder> decoder;
  if (sig.payload == PayloadKind::kStreamingSigned || sig.payload == PayloadKind::kStreamingUnsignedTrailer) {
    decoder.emplace(sig.payload, sig.payload == PayloadKind::kStreamingSigned ? SigningKeyV4(caller.secret, sig) : "",
                    sig);
  }
  ReceivedBody rb;
  Digest md5(DigestKind::kMd5), sha256(DigestKind::kSha256);
  auto sink = [&](const char* d, size_t n) -> Status {
    md5.Update(d, n);
    if (expect.checksum) expect.checksum->Update(d, n);
    rb.size += static_cast<int64_t>(n);
    return out->Write(d, static_cast<int64_t>(n));
  };
  Status st;
  bool complete = reader([&](const char* d, size_t n) {
    if (sig.payload == PayloadKind::kHashed) sha256.Update(d, n);
    st = decoder ? decoder->Feed(d, n, sink) : sink(d, n);
    return st.ok();
  });
  if (st.ok() && !complete) st = S3Error(400, "IncompleteBody", "the request body ended early; nothing was stored");
  if (st.ok() && decoder) st = FinishChunked(req, *decoder, rb.size, &expect);
  std::string raw_md5 = md5.Final();
  if (st.ok()) st = CheckDigests(req, sig, sha256, raw_md5, expect);
  if (!st.ok()) {
    (void)out->Abort();  // nothing is published
    return st;
  }
  rb.md5_hex = Hex(raw_md5);
  return rb;
}

namespace {

// Collects a body in memory, refusing it past a size.
class CappedStringStream : public arrow::io::OutputStream {
 public:
  CappedStringStream(std::string* out, size_t max) : out_(out), max_(max) {}
  Status Write(const void* data, int64_t n) override {
    if (out_->size() + static_cast<size_t>(n) > max_) {
      return S3Error(400, "MalformedXML", fmt::format("the request body is larger than {} bytes", max_));
    }
    out_->append(static_cast<const char*>(data), static_cast<size_t>(n));
    return Status::OK();
  }
  Status Close() override {
    closed_ = true;
    return Status::OK();
  }
  Status Abort() override {
    out_->clear();
    closed_ = true;
    return Status::OK();
  }
  Result<int64_t> Tell() const override { return static_cast<int64_t>(out_->size()); }
  bool closed() const override { return closed_; }

 private:
  std::string* out_;
  size_t max_;
  bool closed_ = false;
};

}  // namespace

Result<std::string> ReceiveSmallBody(const httplib::Request& req, const httplib::ContentReader& reader,
                                     const Caller& caller, size_t max_bytes) {
  std::string body;
  CappedStringStream out(&body, max_bytes);
  ARROW_RETURN_NOT_OK(ReceiveBody(req, reader, caller, &out).status());
  return body;
}

}  // namespace sediment::server::s3
