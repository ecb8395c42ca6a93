import Crypto
import HaulCore
import NIOConcurrencyHelpers
import NIOPosix

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Checks a finished `.part` before it may take its final name: its length against what the
/// server announced and its digest against the machine's `digestToVerify`: the user's
/// `--checksum`, else the digest the server announced (DESIGN rule 4); its pieces' digests (a
/// Metalink's); and the digest of its parts' digests (an S3 multipart object's). Opening,
/// reading and hashing run on the run's file threads (`DiskIO`). Cancelling the calling task
/// stops a long hash (a remove does not wait for it).
enum Verifier {
    /// What the check found: nothing wrong, an error, or pieces whose digests fail (then the
    /// machine fetches them again before the whole-file digest matters).
    struct Verdict: Sendable {
        var error: HaulError?
        var badPieces: [Int] = []
    }

    /// Verifies the file `name` in `directory` (opened there, never through a link).
    static func verify(
        _ name: String, in directory: DownloadDirectory, io: DiskIO, expectedLength: Int64?,
        digest: ExpectedDigest?, pieces: PieceHashes?, composite: CompositeChecksum? = nil, url: RemoteURL
    ) async -> Verdict {
        let path = Paths.join(directory.path, name)
        let stop = NIOLockedValueBox(false)
        do {
            return try await withTaskCancellationHandler {
                try await io.run {
                    try check(
                        name, in: directory, path: path, expectedLength: expectedLength, digest: digest, pieces: pieces,
                        composite: composite, url: url, stopped: { stop.withLockedValue { $0 } })
                }
            } onCancel: {
                stop.withLockedValue { $0 = true }
            }
        } catch let error as HaulError {
            return Verdict(error: error)
        } catch {
            return Verdict(error: HaulError(.fileSystem, "cannot read \(path) to verify it", underlying: error))
        }
    }

    /// What is wrong with the file (blocks: on a file thread).
    static func check(
        _ name: String, in directory: DownloadDirectory, path: String, expectedLength: Int64?,
        digest expected: ExpectedDigest?, pieces: PieceHashes?, composite: CompositeChecksum? = nil, url: RemoteURL,
        stopped: () -> Bool
    ) throws -> Verdict {
        let file = OpenFile(descriptor: try directory.openFile(name, flags: O_RDONLY))
        var info = stat()
        guard fstat(file.descriptor, &info) == 0 else {
            return Verdict(error: FileSystemErrors.error(errno, "cannot inspect", path))
        }
        let size = Int64(info.st_size)
        if let expectedLength, size != expectedLength {
            return Verdict(
                error: HaulError(.lengthMismatch, "\(url): got \(info.st_size) bytes, expected \(expectedLength)"))
        }
        // Pieces that do not describe this file (a document that lied about the size) are not
        // checked; the whole-file digest still is.
        let pieces = pieces.flatMap { $0.fits(fileLength: size) ? $0 : nil }
        if let composite, composite.totalLength != size {
            return Verdict(
                error: HaulError(
                    .digestMismatch,
                    "\(url): \(size) bytes, but the store's parts add up to \(composite.totalLength); the file is not published"
                ))
        }
        guard expected != nil || pieces != nil || composite != nil else { return Verdict() }
        let scan = try Scan(
            of: file, path: path, whole: expected?.checksum.algorithm, pieces: pieces, composite: composite,
            stopped: stopped)
        if !scan.badPieces.isEmpty { return Verdict(badPieces: scan.badPieces) }
        if let composite, let found = scan.composite, found != composite.hex {
            return Verdict(
                error: HaulError(
                    .digestMismatch,
                    "\(url): the \(composite.algorithm.rawValue) of its \(composite.partLengths.count) parts' digests is "
                        + "\(found), but the store's checksum says \(composite.hex); the file is not published"))
        }
        guard let expected, let digest = scan.whole else { return Verdict() }
        let checksum = expected.checksum
        guard digest == checksum.hex else {
            switch expected.origin {
            case .request:
                return Verdict(
                    error: HaulError(
                        .checksumMismatch,
                        "\(url): \(checksum.algorithm.rawValue) is \(digest), expected \(checksum.hex)"))
            case .server(let field):
                return Verdict(
                    error: HaulError(
                        .digestMismatch,
                        "\(url): \(checksum.algorithm.rawValue) is \(digest), but the server's "
                            + "\(field.rawValue) says \(checksum.hex); the file is not published"))
            }
        }
        return Verdict()
    }

    /// A descriptor closed when the last holder lets go.
    final class OpenFile: Sendable {
        let descriptor: Int32
        init(descriptor: Int32) { self.descriptor = descriptor }
        deinit { close(descriptor) }
    }

    /// One read of the file that feeds the whole-file digest and each piece's.
    struct Scan {
        var whole: String?
        var badPieces: [Int] = []
        /// The digest of the parts' digests, when asked for.
        var composite: String?

        init(
            of file: OpenFile, path: String, whole algorithm: Checksum.Algorithm?, pieces: PieceHashes?,
            composite expectedComposite: CompositeChecksum? = nil, stopped: () -> Bool
        ) throws {
            var parts = PartDigests(expectedComposite)
            var info = stat()
            guard fstat(file.descriptor, &info) == 0 else { throw FileSystemErrors.error(errno, "cannot read", path) }
            var wholeDigest = algorithm.map { Verifier.digest($0, length: Int64(info.st_size)) }
            var piece = 0
            var pieceDigest = pieces.map { Verifier.digest($0.algorithm, length: $0.length) }
            var pieceLeft = pieces?.length ?? 0
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
            defer { buffer.deallocate() }
            while true {
                if stopped() { throw HaulError(.interrupted, "verification of \(path) stopped") }
                let count = read(file.descriptor, buffer.baseAddress, buffer.count)
                if count < 0 {
                    if errno == EINTR { continue }
                    throw FileSystemErrors.error(errno, "cannot read", path)
                }
                if count == 0 { break }
                let bytes = UnsafeRawBufferPointer(rebasing: buffer[..<count])
                wholeDigest?.update(bytes)
                parts?.update(bytes)
                guard let pieces else { continue }
                var offset = 0
                while offset < count {
                    let take = min(count - offset, Int(pieceLeft))
                    pieceDigest?.update(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + take)]))
                    offset += take
                    pieceLeft -= Int64(take)
                    if pieceLeft == 0 {
                        if pieceDigest?.hex() != pieces.hashes[piece] { badPieces.append(piece) }
                        piece += 1
                        pieceDigest = Verifier.digest(pieces.algorithm, length: pieces.length)
                        pieceLeft = pieces.length
                    }
                }
            }
            // The last piece is shorter than the others.
            if let pieces, pieceLeft < pieces.length, piece < pieces.hashes.count,
                pieceDigest?.hex() != pieces.hashes[piece]
            {
                badPieces.append(piece)
            }
            whole = wholeDigest?.hex()
            composite = parts?.finish()
        }
    }

    /// The digests of a file's parts (`CompositeChecksum`), fed as the file is read, and the
    /// digest of their concatenation.
    struct PartDigests {
        let algorithm: Checksum.Algorithm
        var lengths: [Int64]
        var part = 0
        var left: Int64
        var digest: any StreamingDigest
        var digests: [UInt8] = []

        init?(_ composite: CompositeChecksum?) {
            guard let composite else { return nil }
            algorithm = composite.algorithm
            lengths = composite.partLengths
            left = lengths[0]
            digest = Verifier.digest(algorithm, length: left)
        }

        mutating func update(_ bytes: UnsafeRawBufferPointer) {
            var offset = 0
            while offset < bytes.count, part < lengths.count {
                let take = min(bytes.count - offset, Int(left))
                digest.update(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + take)]))
                offset += take
                left -= Int64(take)
                if left == 0 {
                    digests += digest.bytes()
                    part += 1
                    left = part < lengths.count ? lengths[part] : 0
                    digest = Verifier.digest(algorithm, length: left)
                }
            }
        }

        /// The digest of the digests, hex.
        func finish() -> String {
            var outer = Verifier.digest(algorithm, length: Int64(digests.count))
            digests.withUnsafeBytes { outer.update($0) }
            return outer.hex()
        }
    }

    /// A digest of `algorithm` for a file (or piece) of `length` bytes (only git's blob id
    /// begins with the length).
    static func digest(_ algorithm: Checksum.Algorithm, length: Int64) -> any StreamingDigest {
        switch algorithm {
        case .sha256: return Hashing(SHA256())
        case .sha512: return Hashing(SHA512())
        case .sha1: return Hashing(Insecure.SHA1())
        case .md5: return Hashing(Insecure.MD5())
        case .gitBlob:
            var hashing = Hashing(Insecure.SHA1())
            Array("blob \(length)\0".utf8).withUnsafeBytes { hashing.update($0) }
            return hashing
        }
    }
}

/// A digest fed piece by piece.
protocol StreamingDigest {
    mutating func update(_ bytes: UnsafeRawBufferPointer)
    /// The digest of what was fed.
    func bytes() -> [UInt8]
    /// Lowercase hex of what was fed.
    func hex() -> String
}

struct Hashing<H: HashFunction>: StreamingDigest {
    var hasher: H
    init(_ hasher: H) { self.hasher = hasher }

    mutating func update(_ bytes: UnsafeRawBufferPointer) { hasher.update(bufferPointer: bytes) }

    func bytes() -> [UInt8] { Array(hasher.finalize()) }

    func hex() -> String {
        hasher.finalize().map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }
}
