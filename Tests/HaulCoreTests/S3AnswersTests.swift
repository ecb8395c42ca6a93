import HaulCore
import Testing

/// The pure parts of `s3://`: where a request goes (`S3Endpoint`), what S3's answers say
/// (`S3Answers`) and where the AWS tools' keys are found (`AWSProfiles`).
@Suite(.timeLimit(.minutes(1))) struct S3AnswersTests {
    @Test func virtualHostedOnAWSPathStyleForDotsIPsAndWhenAsked() throws {
        #expect(
            try S3Endpoint.aws.url(bucket: "bucket", key: "a b/c(1).bin", region: "eu-west-1").absoluteString
                == "https://bucket.s3.eu-west-1.amazonaws.com/a%20b/c%281%29.bin")
        #expect(
            try S3Endpoint.aws.url(bucket: "my.bucket", key: "k", region: "us-east-1").absoluteString
                == "https://s3.us-east-1.amazonaws.com/my.bucket/k", "a dotted bucket goes path-style")
        let minio = S3Endpoint(custom: try RemoteURL("http://127.0.0.1:9000"), pathStyle: false)
        #expect(minio.pathStyle, "an IP endpoint implies path style")
        #expect(
            try minio.url(bucket: "b", key: "", region: "x", query: [("list-type", "2"), ("prefix", "a/b c")])
                .absoluteString == "http://127.0.0.1:9000/b/?list-type=2&prefix=a%2Fb%20c")
        let r2 = S3Endpoint(custom: try RemoteURL("https://acct.r2.example.com"), pathStyle: false)
        #expect(try r2.url(bucket: "b", key: "k", region: "auto").absoluteString == "https://b.acct.r2.example.com/k")
        let forced = S3Endpoint(custom: try RemoteURL("https://acct.r2.example.com"), pathStyle: true)
        #expect(
            try forced.url(bucket: "b", key: "k", region: "auto").absoluteString == "https://acct.r2.example.com/b/k")
    }

    @Test func theSignedRequestIsTheURLAsSent() throws {
        let request = SigV4.Request(
            method: "GET", url: try RemoteURL("https://b.s3.amazonaws.com:443/a%20b?list-type=2&prefix=x%2Fy&flag"))
        #expect(request.host == "b.s3.amazonaws.com", "the scheme's own port is not in Host")
        #expect(request.path == "/a%20b")
        #expect(request.query.map(\.name) == ["list-type", "prefix", "flag"])
        #expect(request.query.map(\.value) == ["2", "x/y", ""])
        #expect(SigV4.Request(method: "HEAD", url: try RemoteURL("http://127.0.0.1:9000/b/k")).host == "127.0.0.1:9000")
    }

    @Test func whatAnObjectIsCheckedAgainst() throws {
        let sha = "RPg1RJSlugO6F5Ko0+nFNMR6kYGYD956P0SwbvKufH8="
        func head(_ fields: [String: String]) throws -> S3Answers.Head {
            var headers = HTTPHeaderList()
            for (name, value) in fields { headers.add(name: name, value: value) }
            headers.add(name: "Content-Length", value: "1000")
            return try #require(S3Answers.Head(headers))
        }
        let whole = S3Answers.check(
            try head(["x-amz-checksum-sha256": sha, "ETag": "\"398533d48111e9f664b1f64cb10c4b63\""]))
        #expect(
            whole
                == .whole(
                    Checksum(
                        algorithm: .sha256, hex: "44f8354494a5ba03ba1792a8d3e9c534c47a9181980fde7a3f44b06ef2ae7c7f")))
        #expect(
            S3Answers.check(try head(["x-amz-checksum-sha256": sha + "-3"]))
                == .composite(hex: "44f8354494a5ba03ba1792a8d3e9c534c47a9181980fde7a3f44b06ef2ae7c7f", parts: 3))
        #expect(
            S3Answers.check(try head(["x-amz-checksum-sha256": sha, "ETag": "\"71046e2ca1918d077bd783b79860a531-3\""]))
                == .composite(hex: "44f8354494a5ba03ba1792a8d3e9c534c47a9181980fde7a3f44b06ef2ae7c7f", parts: 3),
            "moto writes no -N on the checksum; the ETag's says it is of parts")
        #expect(
            S3Answers.check(try head(["ETag": "\"398533D48111E9F664B1F64CB10C4B63\""]))
                == .whole(Checksum(algorithm: .md5, hex: "398533d48111e9f664b1f64cb10c4b63")))
        #expect(
            S3Answers.check(
                try head(["ETag": "\"398533d48111e9f664b1f64cb10c4b63\"", "x-amz-server-side-encryption": "aws:kms"]))
                == .lengthOnly, "a KMS object's ETag is no MD5")
        #expect(
            S3Answers.check(
                try head([
                    "ETag": "\"398533d48111e9f664b1f64cb10c4b63\"",
                    "x-amz-server-side-encryption-customer-algorithm": "AES256",
                ])) == .lengthOnly, "nor is an SSE-C object's")
        #expect(S3Answers.check(try head(["ETag": "\"71046e2ca1918d077bd783b79860a531-3\""])) == .lengthOnly)
        #expect(S3Answers.Head(HTTPHeaderList()) == nil, "no length, no answer")
    }

    @Test func aListingAndItsContinuation() throws {
        let page = try S3Answers.listPage(
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
              <Name>b</Name><Prefix>many/</Prefix><KeyCount>2</KeyCount><MaxKeys>1000</MaxKeys>
              <IsTruncated>true</IsTruncated>
              <Contents><Key>many/a &amp; b</Key><Size>12</Size><ETag>"x"</ETag></Contents>
              <Contents><Key>many/c</Key><Size>0</Size></Contents>
              <NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>
            </ListBucketResult>
            """)
        #expect(page.objects == [.init(key: "many/a & b", size: 12), .init(key: "many/c", size: 0)])
        #expect(page.continuation == "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=")
        let last = try S3Answers.listPage(
            "<ListBucketResult><IsTruncated>false</IsTruncated><NextContinuationToken>t</NextContinuationToken></ListBucketResult>"
        )
        #expect(last.objects.isEmpty && last.continuation == nil)
        #expect(throws: HaulError.self) {
            try S3Answers.listPage("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>")
        }
        #expect(throws: HaulError.self) { try S3Answers.listPage("<Error><Code>NoSuchBucket</Code></Error>") }
        #expect(
            S3Answers.error("<Error><Code>NoSuchBucket</Code><Message>gone</Message></Error>")! == (
                "NoSuchBucket", "gone"
            ))
        #expect(S3Answers.error("not xml") == nil)
    }

    @Test func anotherRegionIsTakenFromTheStoresHeader() {
        let headers: HTTPHeaderList = ["x-amz-bucket-region": "eu-west-1"]
        #expect(S3Answers.otherRegion(status: 301, headers: headers, asked: "us-east-1") == "eu-west-1")
        #expect(S3Answers.otherRegion(status: 400, headers: headers, asked: "us-east-1") == "eu-west-1")
        #expect(S3Answers.otherRegion(status: 301, headers: headers, asked: "eu-west-1") == nil, "the same region")
        #expect(S3Answers.otherRegion(status: 403, headers: headers, asked: "us-east-1") == nil)
        #expect(S3Answers.otherRegion(status: 301, headers: ["x-amz-bucket-region": "evil/../x"], asked: "a") == nil)
    }

    @Test func keysBecomePathsBeneathTheDirectoryOrAreSkipped() {
        func path(_ key: String, _ prefix: String = "data/") -> String? {
            if case .path(let path) = S3Answers.placement(key: key, prefix: prefix) { path } else { nil }
        }
        func skipped(_ key: String) -> String? {
            if case .skipped(let entry) = S3Answers.placement(key: key, prefix: "data/") { entry.problem } else { nil }
        }
        #expect(path("data/a/b.bin") == "a/b.bin")
        #expect(S3Answers.placement(key: "data/", prefix: "data/") == .folder, "the folder itself")
        #expect(S3Answers.placement(key: "data/sub/", prefix: "data/") == .folder, "a folder marker")
        #expect(path("data/.env") == ".env" && path("data/.github/workflows/x.yml") == ".github/workflows/x.yml")
        #expect(skipped("data/../x") == "a '..' segment")
        #expect(skipped("data/./x") == "a '.' segment")
        #expect(skipped("data//x") == "an absolute path")
        #expect(skipped("data/a//x") == "an empty segment")
        #expect(skipped("data/a\u{7}b") == "a NUL or control character")
        #expect(skipped("data/" + String(repeating: "x", count: 251)) == "a segment of 251 bytes (at most 250)")
        #expect(path("data/" + String(repeating: "x", count: 250)) != nil)
        #expect(path("x", "") == "x")
    }

    @Test func keysAndRegionComeFromWhereTheAWSToolsFindThem() throws {
        let credentials = """
            [default]
            aws_access_key_id = AKIADEFAULT
            aws_secret_access_key = s1
            # a comment
            [work]
            aws_access_key_id=AKIAWORK
            aws_secret_access_key=s2
            aws_session_token = tok
            """
        let config = """
            [default]
            region = eu-central-1
            [profile work]
            region = ap-south-1
            """
        let plain = try AWSProfiles(environment: [:], credentialsFile: credentials, configFile: config)
        #expect(plain.credentials == SigV4.Credentials(accessKeyID: "AKIADEFAULT", secretAccessKey: "s1"))
        #expect(plain.region == "eu-central-1")
        let work = try AWSProfiles(
            environment: ["AWS_PROFILE": "work"], credentialsFile: credentials, configFile: config)
        #expect(
            work.credentials == SigV4.Credentials(accessKeyID: "AKIAWORK", secretAccessKey: "s2", sessionToken: "tok"))
        #expect(work.region == "ap-south-1")
        let environment = try AWSProfiles(
            environment: ["AWS_ACCESS_KEY_ID": "AKIAENV", "AWS_SECRET_ACCESS_KEY": "s3", "AWS_REGION": "us-west-2"],
            credentialsFile: credentials, configFile: config)
        #expect(environment.credentials?.accessKeyID == "AKIAENV", "the environment wins")
        #expect(environment.region == "us-west-2")
        let none = try AWSProfiles(environment: [:], credentialsFile: nil, configFile: nil)
        #expect(none.credentials == nil && none.region == nil, "nothing found: unsigned")
        #expect(throws: HaulError.self) {
            try AWSProfiles(environment: ["AWS_PROFILE": "absent"], credentialsFile: credentials, configFile: config)
        }
        #expect(throws: HaulError.self) {
            try AWSProfiles(environment: ["AWS_ACCESS_KEY_ID": "AKIAENV"], credentialsFile: nil, configFile: nil)
        }
    }
}
