import HaulCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Standard input, output and error through read(2) and write(2): `FileHandle` is Foundation's,
/// which haul does not link (FoundationEssentials has no file handles).
enum StandardStreams {
    /// Writes all of `text` to standard output; a reader that went away (`haul ls | head`) or a
    /// full disk is an error the command exits with.
    static func output(_ text: String) throws(HaulError) {
        try output(Array(text.utf8))
    }

    static func output(_ bytes: [UInt8]) throws(HaulError) {
        if let failure = writeAll(bytes, to: STDOUT_FILENO) {
            throw HaulError(.fileSystem, "cannot write to standard output: \(failure)")
        }
    }

    /// Writes all of `text` to standard error; if that fails there is nowhere left to say so.
    static func error(_ text: String) {
        _ = writeAll(Array(text.utf8), to: STDERR_FILENO)
    }

    /// All of standard input, until its end.
    static func readInput() throws(HaulError) -> [UInt8] {
        switch readAll(from: STDIN_FILENO) {
        case .success(let bytes): return bytes
        case .failure(let failure): throw HaulError(.usage, "cannot read standard input: \(failure.text)")
        }
    }

    /// Why a read failed: its errno and the C library's words for it.
    struct ReadFailure: Error {
        var code: Int32
        var text: String

        init(_ code: Int32, _ text: String? = nil) {
            self.code = code
            self.text = text ?? String(cString: strerror(code))
        }
    }

    /// Everything `descriptor` gives until its end; more than `limit` bytes is a failure (EFBIG).
    static func readAll(from descriptor: Int32, limit: Int = .max) -> Result<[UInt8], ReadFailure> {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count == 0 { return .success(bytes) }
            if count < 0 {
                if errno == EINTR { continue }
                return .failure(ReadFailure(errno))
            }
            guard bytes.count <= limit - count else {
                return .failure(ReadFailure(EFBIG, "larger than \(limit) bytes"))
            }
            bytes += chunk[0..<count]
        }
    }

    /// Writes every byte, across short writes; the reason when it could not.
    private static func writeAll(_ bytes: [UInt8], to descriptor: Int32) -> String? {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { buffer in
                write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
            }
            if written < 0 {
                if errno == EINTR { continue }
                return String(cString: strerror(errno))
            }
            offset += written
        }
        return nil
    }
}
