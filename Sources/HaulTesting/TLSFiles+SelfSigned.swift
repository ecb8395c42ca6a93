import Foundation

extension TLSFiles {
    /// A fresh self-signed certificate for 127.0.0.1 in a temporary directory, made with the
    /// `openssl` command (Debian's `openssl` package), so HTTPS tests need no fixture files.
    public static func makeSelfSigned() throws -> TLSFiles {
        let directory = NSTemporaryDirectory() + "haul-tls-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let files = TLSFiles(certificatePath: directory + "/cert.pem", privateKeyPath: directory + "/key.pem")
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        openssl.arguments = [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-keyout", files.privateKeyPath, "-out", files.certificatePath,
            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
        ]
        openssl.standardOutput = FileHandle.nullDevice
        openssl.standardError = FileHandle.nullDevice
        try openssl.run()
        openssl.waitUntilExit()
        guard openssl.terminationStatus == 0 else { throw TLSFilesError.opensslFailed(openssl.terminationStatus) }
        return files
    }
}

public enum TLSFilesError: Error, Sendable {
    case opensslFailed(Int32)
}
