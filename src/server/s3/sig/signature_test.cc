// The signature checks against AWS's published examples (the S3 SigV4 and
// SigV2 documentation), so a mistake in canonicalisation cannot hide behind a
// client library that makes the same one.
#include "server/s3/sig/signature.h"

#include <gtest/gtest.h>

namespace sediment::server::s3 {
namespace {

constexpr const char* kKey = "AKIAIOSFODNN7EXAMPLE";
constexpr const char* kSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
constexpr int64_t k20130524 = 1369353600;  // 2013-05-24T00:00:00Z

WireRequest GetObjectExample() {
  WireRequest r;
  r.method = "GET";
  r.raw_path = "/test.txt";
  r.headers = {{"host", "examplebucket.s3.amazonaws.com"},
               {"range", "bytes=0-9"},
               {"x-amz-content-sha256", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
               {"x-amz-date", "20130524T000000Z"},
               {"authorization",
                "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
                "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
                "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"}};
  return r;
}

TEST(S3SignatureTest, V4HeaderMatchesAwsExample) {
  WireRequest r = GetObjectExample();
  auto sig = ParseSignature(r);
  ASSERT_TRUE(sig.ok()) << sig.status().ToString();
  EXPECT_EQ(sig->access_key_id, kKey);
  EXPECT_EQ(sig->scope, "20130524/us-east-1/s3/aws4_request");
  EXPECT_EQ(sig->payload, PayloadKind::kHashed);
  EXPECT_TRUE(VerifySignature(r, *sig, kSecret, k20130524 + 60).ok());
}

TEST(S3SignatureTest, V4RejectsWrongSecretTamperingAndSkew) {
  WireRequest r = GetObjectExample();
  auto sig = ParseSignature(r);
  ASSERT_TRUE(sig.ok());
  Status wrong = VerifySignature(r, *sig, "not-the-secret", k20130524);
  EXPECT_TRUE(IsUnauthorized(wrong));
  EXPECT_NE(wrong.message().find("SignatureDoesNotMatch"), std::string::npos);
  WireRequest tampered = r;
  tampered.headers["range"] = "bytes=0-99";
  EXPECT_TRUE(IsUnauthorized(VerifySignature(tampered, *sig, kSecret, k20130524)));
  tampered = r;
  tampered.raw_path = "/other.txt";
  EXPECT_TRUE(IsUnauthorized(VerifySignature(tampered, *sig, kSecret, k20130524)));
  Status skewed = VerifySignature(r, *sig, kSecret, k20130524 + 16 * 60);
  EXPECT_NE(skewed.message().find("RequestTimeTooSkewed"), std::string::npos) << skewed.ToString();
}

TEST(S3SignatureTest, V4PresignedMatchesAwsExampleAndExpires) {
  WireRequest r;
  r.method = "GET";
  r.raw_path = "/test.txt";
  r.raw_query =
      "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_"
      "request"
      "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"
      "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404";
  r.headers = {{"host", "examplebucket.s3.amazonaws.com"}};
  auto sig = ParseSignature(r);
  ASSERT_TRUE(sig.ok()) << sig.status().ToString();
  EXPECT_TRUE(sig->presigned);
  EXPECT_TRUE(VerifySignature(r, *sig, kSecret, k20130524 + 3600).ok());
  Status expired = VerifySignature(r, *sig, kSecret, k20130524 + 86401);
  EXPECT_TRUE(IsUnauthorized(expired));
  EXPECT_NE(expired.message().find("expired"), std::string::npos);
}

// As AWS: an x-amz-* header the signer did not sign refuses the request, in
// the header form and the presigned one (an unsigned x-amz-copy-source would
// turn a presigned PUT into a copy of anything the signer may read).
TEST(S3SignatureTest, V4RefusesUnsignedAmzHeaders) {
  WireRequest r = GetObjectExample();
  auto sig = ParseSignature(r);
  ASSERT_TRUE(sig.ok());
  r.headers["x-amz-copy-source"] = "other-repo/main/secret/y";
  Status st = VerifySignature(r, *sig, kSecret, k20130524);
  EXPECT_TRUE(IsUnauthorized(st));
  EXPECT_NE(st.message().find("not signed"), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find("x-amz-copy-source"), std::string::npos) << st.ToString();

  WireRequest p;
  p.method = "GET";
  p.raw_path = "/test.txt";
  p.raw_query =
      "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_"
      "request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"
      "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404";
  p.headers = {{"host", "examplebucket.s3.amazonaws.com"}, {"x-amz-copy-source", "other-repo/main/secret/y"}};
  auto psig = ParseSignature(p);
  ASSERT_TRUE(psig.ok());
  EXPECT_TRUE(IsUnauthorized(VerifySignature(p, *psig, kSecret, k20130524 + 60)));
  p.headers.erase("x-amz-copy-source");
  p.headers["range"] = "bytes=0-9";  // other unsigned headers are the client's business, as on AWS
  EXPECT_TRUE(VerifySignature(p, *psig, kSecret, k20130524 + 60).ok());
}

TEST(S3SignatureTest, V2HeaderMatchesAwsExample) {
  WireRequest r;
  r.method = "GET";
  r.raw_path = "/photos/puppy.jpg";
  r.bucket = "johnsmith";
  r.virtual_host = true;
  r.headers = {{"host", "johnsmith.s3.amazonaws.com"},
               {"date", "Tue, 27 Mar 2007 19:36:42 +0000"},
               {"authorization", "AWS AKIAIOSFODNN7EXAMPLE:bWq2s1WEIj+Ydj0vQ697zp+IXMU="}};
  auto sig = ParseSignature(r);
  ASSERT_TRUE(sig.ok()) << sig.status().ToString();
  EXPECT_EQ(sig->version, 2);
  EXPECT_EQ(StringToSignV2(r, *sig), "GET\n\n\nTue, 27 Mar 2007 19:36:42 +0000\n/johnsmith/photos/puppy.jpg");
  EXPECT_TRUE(VerifySignature(r, *sig, kSecret, 1175024202).ok());
  EXPECT_TRUE(IsUnauthorized(VerifySignature(r, *sig, "wrong-secret", 1175024202)));
}

TEST(S3SignatureTest, MalformedAndMissingSignaturesSayWhat) {
  WireRequest r;
  r.method = "GET";
  r.raw_path = "/x";
  EXPECT_TRUE(IsUnauthorized(ParseSignature(r).status()));
  r.headers["authorization"] = "AWS4-HMAC-SHA256 Credential=AKID/2013/us-east-1/s3";
  auto bad = ParseSignature(r);
  EXPECT_TRUE(IsInvalidArgument(bad.status()));
  r.headers["authorization"] = "Bearer abc";
  EXPECT_TRUE(IsInvalidArgument(ParseSignature(r).status()));
  r.headers.erase("authorization");
  r.raw_query =
      "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=A%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
      "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=999999999&X-Amz-SignedHeaders=host&X-Amz-Signature=00";
  auto too_long = ParseSignature(r);
  ASSERT_TRUE(IsInvalidArgument(too_long.status()));
  EXPECT_NE(too_long.status().message().find("X-Amz-Expires"), std::string::npos);
}

// AWS's aws-chunked example: 65,536 + 1,024 bytes of 'a' in two chunks and a
// final empty chunk, each signed, chained from the request's signature.
TEST(S3SignatureTest, ChunkedSignaturesMatchAwsExample) {
  Signature sig;
  sig.amz_date = "20130524T000000Z";
  sig.date = "20130524";
  sig.region = "us-east-1";
  sig.service = "s3";
  sig.scope = "20130524/us-east-1/s3/aws4_request";
  sig.signature = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9";
  std::string body = "10000;chunk-signature=ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648\r\n" +
                     std::string(65536, 'a') +
                     "\r\n400;chunk-signature=0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497\r\n" +
                     std::string(1024, 'a') +
                     "\r\n0;chunk-signature=b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9\r\n\r\n";
  for (size_t step : {body.size(), size_t{1}, size_t{7}, size_t{4096}}) {
    ChunkedDecoder d(PayloadKind::kStreamingSigned, SigningKeyV4(kSecret, sig), sig);
    std::string out;
    Status st;
    for (size_t i = 0; i < body.size() && st.ok(); i += step) {
      st = d.Feed(body.data() + i, std::min(step, body.size() - i), [&](const char* p, size_t n) {
        out.append(p, n);
        return Status::OK();
      });
    }
    ASSERT_TRUE(st.ok()) << "step " << step << ": " << st.ToString();
    ASSERT_TRUE(d.Finish().ok()) << step;
    EXPECT_EQ(out, std::string(66560, 'a'));
  }
  // One byte changed in the data: that chunk's signature no longer matches.
  std::string tampered = body;
  tampered[200] = 'b';
  ChunkedDecoder d(PayloadKind::kStreamingSigned, SigningKeyV4(kSecret, sig), sig);
  Status st = d.Feed(tampered.data(), tampered.size(), [](const char*, size_t) { return Status::OK(); });
  EXPECT_TRUE(IsUnauthorized(st)) << st.ToString();
  // A body cut short is incomplete.
  ChunkedDecoder cut(PayloadKind::kStreamingSigned, SigningKeyV4(kSecret, sig), sig);
  ASSERT_TRUE(cut.Feed(body.data(), 1000, [](const char*, size_t) { return Status::OK(); }).ok());
  EXPECT_TRUE(IsInvalidArgument(cut.Finish()));
}

TEST(S3SignatureTest, UnsignedTrailerCollectsChecksum) {
  Signature sig;
  std::string body = "5\r\nhello\r\n0\r\nx-amz-checksum-crc32:NhCmhg==\r\n\r\n";
  ChunkedDecoder d(PayloadKind::kStreamingUnsignedTrailer, "", sig);
  std::string out;
  ASSERT_TRUE(d.Feed(body.data(), body.size(), [&](const char* p, size_t n) {
                 out.append(p, n);
                 return Status::OK();
               }).ok());
  ASSERT_TRUE(d.Finish().ok());
  EXPECT_EQ(out, "hello");
  EXPECT_EQ(d.trailers().at("x-amz-checksum-crc32"), "NhCmhg==");
}

// The encoding is base/codec.h's (PercentEncode, PercentDecode), shared with the signer.
TEST(S3SignatureTest, UriEncodingFollowsAwsRules) {
  EXPECT_EQ(PercentEncode("a b/c~d_e.f-g+h*", PercentSet::kUnreservedAndSlash), "a%20b/c~d_e.f-g%2Bh%2A");
  EXPECT_EQ(PercentEncode("a/b", PercentSet::kUnreserved), "a%2Fb");
  EXPECT_EQ(*PercentDecode("a%2Fb+c"), "a/b+c");
  EXPECT_EQ(PercentDecode("bad%2"), std::nullopt);
  EXPECT_EQ(PercentDecode("bad%zz"), std::nullopt);
}

// A '+' in the query is a plus, in the signature as in the operation (the
// gateway's own parser once read it as a space); an escape that is not two
// hex digits is refused, "%-1" included (it once decoded to 0xFF).
TEST(S3SignatureTest, QueryPlusIsAPlusAndBadEscapesAreRefused) {
  WireRequest r = GetObjectExample();
  r.raw_query = "prefix=a+b%20c";
  auto sig = ParseSignature(r);
  ASSERT_TRUE(sig.ok()) << sig.status().ToString();
  const std::string canonical = CanonicalRequestV4(r, *sig);
  EXPECT_NE(canonical.find("\nprefix=a%2Bb%20c\n"), std::string::npos) << canonical;
  for (const char* bad : {"prefix=%-1", "prefix=%zz", "prefix=%4", "%G0=x"}) {
    r.raw_query = bad;
    EXPECT_TRUE(IsInvalidArgument(ParseSignature(r).status())) << bad;
  }
}

}  // namespace
}  // namespace sediment::server::s3
