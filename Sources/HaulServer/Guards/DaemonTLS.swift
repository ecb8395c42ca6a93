import HaulCore
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOSSL

/// `--tls-certificate` and `--tls-key` (aria2's `--rpc-secure`): the daemon answers HTTPS and
/// WSS only, so the token does not cross the network in clear text.
public struct DaemonTLS: Sendable {
    /// PEM files: the certificate chain (leaf first) and its private key.
    public var certificatePath: String
    public var keyPath: String

    public init(certificatePath: String, keyPath: String) {
        self.certificatePath = certificatePath
        self.keyPath = keyPath
    }

    /// The server configuration, or one line naming the file that could not be used.
    func configuration() throws(HaulError) -> TLSConfiguration {
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMFile(certificatePath)
        } catch {
            throw HaulError(.usage, "cannot use --tls-certificate \(certificatePath): \(error)")
        }
        guard !chain.isEmpty else {
            throw HaulError(.usage, "--tls-certificate \(certificatePath) holds no PEM certificate")
        }
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(file: keyPath, format: .pem)
        } catch {
            throw HaulError(.usage, "cannot use --tls-key \(keyPath): \(error)")
        }
        return .makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
    }

    /// `base` behind TLS, or `base` itself without it.
    static func wrap<Base: ServerChildChannel>(_ base: Base, in configuration: TLSConfiguration?) throws
        -> any ServerChildChannel
    {
        guard let configuration else { return base }
        return try TLSChannel(base, tlsConfiguration: configuration)
    }

    /// Off loopback without TLS, the token travels in clear text on every request: say so.
    static func warnIfPlain(host: String, tls: DaemonTLS?, logger: Logger) {
        guard tls == nil, !Daemon.isLoopback(host) else { return }
        logger.warning(
            """
            listening on \(host) over plain HTTP: the token and every request cross the network unencrypted; use \
            --tls-certificate and --tls-key (or a TLS proxy in front)
            """
        )
    }
}
