/// How every request of a download is signed when it is sent: AWS Signature Version 4 for a
/// region and a service (an `s3://` name's objects). The record keeps only this; the keys stay in
/// the process that sends (its environment and `~/.aws` files), and the transport signs each
/// request at the moment it goes out (`RequestPlan.signing`), so a resume or a new connection
/// hours or months later is signed as freshly as the first.
public struct SigV4Scope: Hashable, Codable, Sendable {
    /// The region of the bucket (`us-east-1`, ...), the one the store names.
    public var region: String
    /// The service: `s3`.
    public var service: String

    /// A scope for `region` and `service`.
    public init(region: String, service: String = "s3") {
        self.region = region
        self.service = service
    }
}
