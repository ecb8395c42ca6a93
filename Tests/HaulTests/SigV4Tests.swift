import Haul
import Testing

@testable import HaulCore

/// SigV4 against AWS's worked examples for S3 ("Signature Calculations for the Authorization
/// Header" and "Query String Authentication"), and a case with an encoded path and query and a
/// session token whose signature botocore 1.x computed for the same time.
@Suite(.timeLimit(.minutes(1))) struct SigV4Tests {
    let example = SigV4.Credentials(
        accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    /// 2013-05-24T00:00:00Z, the examples' time.
    let time: Int64 = 1_369_353_600

    func signer(_ credentials: SigV4.Credentials? = nil, region: String = "us-east-1") -> SigV4 {
        SigV4(credentials: credentials ?? example, region: region, primitives: .crypto)
    }

    func authorization(_ headers: [(name: String, value: String)]) -> String? {
        headers.first { $0.name == "Authorization" }?.value
    }

    @Test func getObjectWithARange() {
        let request = SigV4.Request(
            method: "GET", host: "examplebucket.s3.amazonaws.com", path: "/test.txt",
            headers: [("Range", "bytes=0-9")])
        let canonical = SigV4.canonicalRequest(
            SigV4.Request(
                method: "GET", host: "examplebucket.s3.amazonaws.com", path: "/test.txt",
                headers: [
                    ("Range", "bytes=0-9"), ("x-amz-content-sha256", SigV4.emptyPayloadHash),
                    ("x-amz-date", "20130524T000000Z"),
                ]),
            payloadHash: SigV4.emptyPayloadHash)
        #expect(
            canonical.text == """
                GET
                /test.txt

                host:examplebucket.s3.amazonaws.com
                range:bytes=0-9
                x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
                x-amz-date:20130524T000000Z

                host;range;x-amz-content-sha256;x-amz-date
                e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
                """)
        #expect(
            signer().stringToSign(canonical.text, at: AMZDate(secondsSince1970: time)) == """
                AWS4-HMAC-SHA256
                20130524T000000Z
                20130524/us-east-1/s3/aws4_request
                7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972
                """)
        let headers = signer().signatureHeaders(for: request, at: time)
        #expect(
            authorization(headers)
                == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
                + "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
                + "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
        #expect(headers.contains { $0 == ("x-amz-date", "20130524T000000Z") })
    }

    @Test func listObjectsWithAQuery() {
        let request = SigV4.Request(
            method: "GET", host: "examplebucket.s3.amazonaws.com", path: "/",
            query: [("prefix", "J"), ("max-keys", "2")])
        #expect(
            authorization(signer().signatureHeaders(for: request, at: time))?.hasSuffix(
                "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7") == true)
    }

    @Test func presignedURL() {
        let request = SigV4.Request(method: "GET", host: "examplebucket.s3.amazonaws.com", path: "/test.txt")
        let query = signer().presignedQuery(for: request, at: time, expires: 86_400)
        #expect(
            query.map(\.name) == [
                "X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires", "X-Amz-SignedHeaders",
                "X-Amz-Signature",
            ])
        #expect(
            query.first { $0.name == "X-Amz-Credential" }?.value
                == "AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request")
        #expect(
            query.last?.value == "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404")
        #expect(
            signer().presignedQuery(for: request, at: time, expires: 30 * 86_400)
                .first { $0.name == "X-Amz-Expires" }?.value == "604800")
    }

    @Test func encodedPathQueryAndSessionToken() {
        let credentials = SigV4.Credentials(
            accessKeyID: example.accessKeyID, secretAccessKey: example.secretAccessKey,
            sessionToken: "FQoGZXIvYXdzEXAMPLE/token+x=")
        // The path's parentheses as a browser leaves them: they sign as %28 and %29.
        let request = SigV4.Request(
            method: "GET", host: "examplebucket.s3.amazonaws.com", path: "/photos/My%20Cat%20(1).jpg",
            query: [("list-type", "2"), ("prefix", "a/b c"), ("continuation-token", "1+2=")])
        let headers = signer(credentials, region: "eu-west-1").signatureHeaders(for: request, at: time)
        #expect(headers.contains { $0 == ("x-amz-security-token", "FQoGZXIvYXdzEXAMPLE/token+x=") })
        #expect(
            authorization(headers)
                == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/eu-west-1/s3/aws4_request,"
                + "SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token,"
                + "Signature=cfc911e9c7be08f5683a605ae96e3e78ccd9b74b5e2abf7737a7d48aa41f3e71")
    }

    @Test(arguments: [
        (Int64(0), "19700101T000000Z"), (1_369_353_600, "20130524T000000Z"),
        (951_782_399, "20000228T235959Z"), (951_868_800, "20000301T000000Z"), (4_102_444_799, "20991231T235959Z"),
        (4_107_542_400, "21000301T000000Z"),
    ])
    func amzDate(time: Int64, text: String) {
        #expect(AMZDate(secondsSince1970: time).dateTime == text)
    }
}
