#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Numbers as `printf` writes them with `%*.*f` and `%0*lld`: the C library's own formatting
/// (the "C" locale, since haul never calls `setlocale`), without Foundation's `String(format:)`.
enum NumberText {
    /// `value` with `places` digits after the point, padded with spaces on the left to `width`.
    static func fixed(_ value: Double, places: Int, width: Int = 0) -> String {
        format("%*.*f", [Int32(width), Int32(places), value])
    }

    /// `value` with zeros on the left up to `width` characters (`%02d`).
    static func zeroPadded(_ value: Int64, width: Int) -> String {
        format("%0*lld", [Int32(width), value])
    }

    private static func format(_ format: String, _ arguments: [any CVarArg]) -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        while true {
            let needed = withVaList(arguments) { list in
                buffer.withUnsafeMutableBufferPointer { vsnprintf($0.baseAddress, $0.count, format, list) }
            }
            guard needed >= buffer.count else {
                return String(decoding: buffer[..<Int(max(0, needed))].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            }
            buffer = [CChar](repeating: 0, count: Int(needed) + 1)
        }
    }
}
