/// The daemon's secret: made once per start unless given, and compared in constant time by the
/// HTTP API's bearer check and aria2's `token:` parameter alike.
enum Token {
    /// `bytes` random bytes as lowercase hex.
    static func random(bytes: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        let hex = Array("0123456789abcdef")
        return String(
            (0..<bytes).flatMap { _ -> [Character] in
                let byte = generator.next() as UInt8
                return [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            })
    }

    /// Whether `given` is `secret`, in time that does not depend on where they differ.
    static func matches(_ given: some Sequence<UInt8>, _ secret: String) -> Bool {
        let a = Array(given)
        let b = Array(secret.utf8)
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}
