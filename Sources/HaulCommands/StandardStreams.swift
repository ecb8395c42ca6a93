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
        if let failure = write(bytes, to: STDOUT_FILENO) {
            throw HaulError(.fileSystem, "cannot write to standard output: \(failure)")
        }
    }

    /// Writes all of `text` to standard error; if that fails there is nowhere left to say so.
    static func error(_ text: String) {
        _ = write(Array(text.utf8), to: STDERR_FILENO)
    }

    /// All of standard input, until its end.
    static func readInput() throws(HaulError) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
            if count == 0 { return bytes }
            if count < 0 {
                if errno == EINTR { continue }
                throw HaulError(.usage, "cannot read standard input: \(String(cString: strerror(errno)))")
            }
            bytes += chunk[0..<count]
        }
    }

    /// Writes every byte, across short writes; the reason when it could not.
    private static func write(_ bytes: [UInt8], to descriptor: Int32) -> String? {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { buffer in
                Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
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
