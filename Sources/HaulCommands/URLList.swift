import HaulCore

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `-i FILE`: one URL per line, `#` comments and blank lines skipped, `-` for stdin.
enum URLList {
    static func read(_ path: String) throws -> [String] {
        let data: [UInt8]
        if path == "-" {
            data = try StandardStreams.readInput()
        } else {
            guard let contents = FileManager.default.contents(atPath: path) else {
                throw HaulError(.usage, "cannot read URL list \(path)")
            }
            data = Array(contents)
        }
        return String(decoding: data, as: UTF8.self)
            .split(whereSeparator: \.isNewline)
            .map { String($0.trimmed()) }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
    }
}
