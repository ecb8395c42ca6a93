#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Crypto
import HaulCore
import NIOConcurrencyHelpers
import NIOPosix

/// Checks a finished `.part` before it may take its final name: its length against what the
/// server announced and its digest against the user's `--checksum` (DESIGN rule 4). Cancelling
/// the calling task stops a long hash (a remove does not wait for it).
enum Verifier {
    static func verify(path: String, expectedLength: Int64?, checksum: Checksum?, url: RemoteURL) async -> HaulError? {
        guard let size = DestinationFiles.size(path) else {
            return HaulError(.fileSystem, "\(path) disappeared before it could be verified")
        }
        if let expectedLength, size != expectedLength {
            return HaulError(.lengthMismatch, "\(url): got \(size) bytes, expected \(expectedLength)")
        }
        guard let checksum else { return nil }
        do {
            let stop = NIOLockedValueBox(false)
            let digest = try await withTaskCancellationHandler {
                try await BlockingIO.run {
                    try hexDigest(of: path, algorithm: checksum.algorithm, stopped: { stop.withLockedValue { $0 } })
                }
            } onCancel: {
                stop.withLockedValue { $0 = true }
            }
            guard digest == checksum.hex else {
                return HaulError(.checksumMismatch, "\(url): \(checksum.algorithm.rawValue) is \(digest), expected \(checksum.hex)")
            }
            return nil
        } catch let error as HaulError {
            return error
        } catch {
            return HaulError(.fileSystem, "cannot read \(path) to verify it", cause: "\(error)")
        }
    }

    static func hexDigest(of path: String, algorithm: Checksum.Algorithm, stopped: () -> Bool = { false }) throws -> String {
        switch algorithm {
        case .sha256: try digest(of: path, using: SHA256(), stopped: stopped)
        case .sha1: try digest(of: path, using: Insecure.SHA1(), stopped: stopped)
        case .md5: try digest(of: path, using: Insecure.MD5(), stopped: stopped)
        }
    }

    static func digest<H: HashFunction>(of path: String, using hasher: H, stopped: () -> Bool) throws -> String {
        var hasher = hasher
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw FileSystemErrors.error(errno, "cannot open", path) }
        defer { close(descriptor) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            if stopped() { throw HaulError(.interrupted, "verification of \(path) stopped") }
            let count = read(descriptor, buffer.baseAddress, buffer.count)
            if count < 0 {
                if errno == EINTR { continue }
                throw FileSystemErrors.error(errno, "cannot read", path)
            }
            if count == 0 { break }
            hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[..<count]))
        }
        return hasher.finalize().map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }
}
