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
/// server announced and its digest against the machine's `digestToVerify`: the user's
/// `--checksum`, else the digest the server announced (DESIGN rule 4). Opening,
/// reading and hashing run on the run's file threads (`DiskIO`). Cancelling the calling task
/// stops a long hash (a remove does not wait for it).
enum Verifier {
    /// Verifies the file `name` in `directory` (opened there, never through a link).
    static func verify(_ name: String, in directory: DownloadDirectory, io: DiskIO, expectedLength: Int64?,
                       digest: ExpectedDigest?, url: RemoteURL) async -> HaulError? {
        let path = Paths.join(directory.path, name)
        let stop = NIOLockedValueBox(false)
        do {
            return try await withTaskCancellationHandler {
                try await io.run {
                    try check(name, in: directory, path: path, expectedLength: expectedLength, digest: digest, url: url,
                              stopped: { stop.withLockedValue { $0 } })
                }
            } onCancel: {
                stop.withLockedValue { $0 = true }
            }
        } catch let error as HaulError {
            return error
        } catch {
            return HaulError(.fileSystem, "cannot read \(path) to verify it", cause: "\(error)")
        }
    }

    /// What is wrong with the file, nil when nothing is (blocks: on a file thread).
    static func check(_ name: String, in directory: DownloadDirectory, path: String, expectedLength: Int64?,
                      digest expected: ExpectedDigest?, url: RemoteURL, stopped: () -> Bool) throws -> HaulError? {
        let file = OpenFile(descriptor: try directory.openFile(name, flags: O_RDONLY))
        var info = stat()
        guard fstat(file.descriptor, &info) == 0 else { return FileSystemErrors.error(errno, "cannot inspect", path) }
        if let expectedLength, Int64(info.st_size) != expectedLength {
            return HaulError(.lengthMismatch, "\(url): got \(info.st_size) bytes, expected \(expectedLength)")
        }
        guard let expected else { return nil }
        let checksum = expected.checksum
        let digest = try hexDigest(of: file, path: path, algorithm: checksum.algorithm, stopped: stopped)
        guard digest == checksum.hex else {
            switch expected.origin {
            case .request:
                return HaulError(.checksumMismatch, "\(url): \(checksum.algorithm.rawValue) is \(digest), expected \(checksum.hex)")
            case .server(let field):
                return HaulError(.digestMismatch, "\(url): \(checksum.algorithm.rawValue) is \(digest), but the server's "
                                 + "\(field.rawValue) says \(checksum.hex); the file is not published")
            }
        }
        return nil
    }

    /// A descriptor closed when the last holder lets go.
    final class OpenFile: Sendable {
        let descriptor: Int32
        init(descriptor: Int32) { self.descriptor = descriptor }
        deinit { close(descriptor) }
    }

    static func hexDigest(of file: OpenFile, path: String, algorithm: Checksum.Algorithm, stopped: () -> Bool = { false }) throws -> String {
        switch algorithm {
        case .sha256: try digest(of: file, path: path, using: SHA256(), stopped: stopped)
        case .sha512: try digest(of: file, path: path, using: SHA512(), stopped: stopped)
        case .sha1: try digest(of: file, path: path, using: Insecure.SHA1(), stopped: stopped)
        case .md5: try digest(of: file, path: path, using: Insecure.MD5(), stopped: stopped)
        }
    }

    static func digest<H: HashFunction>(of file: OpenFile, path: String, using hasher: H, stopped: () -> Bool) throws -> String {
        var hasher = hasher
        let descriptor = file.descriptor
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
