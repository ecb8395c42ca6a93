import Foundation
import HaulCore

/// `-i FILE`: one URL per line, `#` comments and blank lines skipped, `-` for stdin.
enum URLList {
    static func read(_ path: String) throws -> [String] {
        let data: Data
        if path == "-" {
            data = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            guard let contents = FileManager.default.contents(atPath: path) else {
                throw HaulError(.usage, "cannot read URL list \(path)")
            }
            data = contents
        }
        return String(decoding: data, as: UTF8.self)
            .split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
    }
}
