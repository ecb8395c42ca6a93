import HaulCore
import Testing

/// The names of issue 34's sources, parsed: Docker's short forms for images (as
/// distribution/reference normalizes them), huggingface_hub's file-system names, S3's names.
@Suite(.timeLimit(.minutes(1))) struct ContentNameTests {
    static let digest = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

    @Test(
        arguments: [
            ("ubuntu", "registry-1.docker.io", "library/ubuntu", nil, nil),
            ("docker.io/ubuntu:22.04", "registry-1.docker.io", "library/ubuntu", "22.04", nil),
            ("docker.io/org/image", "registry-1.docker.io", "org/image", nil, nil),
            ("org/image:v1", "registry-1.docker.io", "org/image", "v1", nil),
            ("ghcr.io/org/image:v1.2-rc_3", "ghcr.io", "org/image", "v1.2-rc_3", nil),
            ("localhost:5000/image@\(digest)", "localhost:5000", "image", nil, digest),
            ("127.0.0.1:5000/a/b__c/d-e.f:tag@\(digest)", "127.0.0.1:5000", "a/b__c/d-e.f", "tag", digest),
        ] as [(String, String, String, String?, String?)])
    func images(name: String, registry: String, repository: String, tag: String?, digest: String?) throws {
        let image = try ImageReference(parsing: name)
        #expect(image.registry == registry)
        #expect(image.repository == repository)
        #expect(image.tag == tag)
        #expect(image.digest == digest)
        #expect(image.manifestReference == digest ?? tag ?? "latest")
    }

    @Test(arguments: [
        "Ubuntu", "ubuntu@sha256:abc", "ghcr.io/", "image:bad tag", "org//image", "a-/b",
        "image:" + String(repeating: "t", count: 129),
    ])
    func badImages(name: String) {
        #expect(throws: HaulError.self) { try ImageReference(parsing: name) }
    }

    @Test(
        arguments: [
            ("openai-community/gpt2", HubName.Kind.model, "openai-community/gpt2", nil, nil),
            ("openai-community/gpt2@v1.0/config.json", .model, "openai-community/gpt2", "v1.0", "config.json"),
            (
                "datasets/org/data@refs%2Fpr%2F1/train/part-0.parquet", .dataset, "org/data", "refs/pr/1",
                "train/part-0.parquet"
            ),
            ("spaces/org/app", .space, "org/app", nil, nil),
            ("org/repo/sub/dir/", .model, "org/repo", nil, "sub/dir"),
        ] as [(String, HubName.Kind, String, String?, String?)])
    func hubNames(name: String, kind: HubName.Kind, repository: String, revision: String?, path: String?) throws {
        let hub = try HubName(parsing: name)
        #expect(hub.kind == kind)
        #expect(hub.repository == repository)
        #expect(hub.revision == revision)
        #expect(hub.path == path)
        #expect(hub.revisionOrMain == revision ?? "main")
    }

    @Test(arguments: ["gpt2", "org/re po", "org/repo@", "org/repo/../x", "datasets/org", "org/.hidden", "/repo"])
    func badHubNames(name: String) {
        #expect(throws: HaulError.self) { try HubName(parsing: name) }
    }

    @Test(arguments: [
        ("bucket/key.bin", "bucket", "key.bin", false),
        ("bucket/prefix/", "bucket", "prefix/", true),
        ("bucket", "bucket", "", true),
        ("my.bucket-1/a/b c@2.txt", "my.bucket-1", "a/b c@2.txt", false),
    ])
    func s3Names(name: String, bucket: String, key: String, isPrefix: Bool) throws {
        let s3 = try S3Name(parsing: name)
        #expect(s3.bucket == bucket)
        #expect(s3.key == key)
        #expect(s3.isPrefix == isPrefix)
    }

    @Test(arguments: [
        "BU/x", "Bucket/x", "ab/x", "-bucket/x", "bu..cket/x", "bucket/" + String(repeating: "k", count: 1025),
    ])
    func badS3Names(name: String) {
        #expect(throws: HaulError.self) { try S3Name(parsing: name) }
    }

    @Test func schemes() throws {
        #expect(try ContentName(parsing: "HF://org/repo") == .hub(try HubName(parsing: "org/repo")))
        #expect(try ContentName(parsing: "oci://ubuntu") == .image(try ImageReference(parsing: "ubuntu")))
        #expect(try ContentName(parsing: "s3://bucket/") == .s3(try S3Name(parsing: "bucket/")))
        #expect(try ContentName(parsing: "https://example.com/x") == nil)
        #expect(try ContentName(parsing: "not a url") == nil)
        #expect {
            try ContentName(parsing: "s3://B")
        } throws: { error in
            (error as? HaulError)?.code == .badURL
                && (error as? HaulError)?.message.hasPrefix("bad S3 name 's3://B'") == true
        }
    }
}
