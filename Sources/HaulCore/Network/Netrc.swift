/// A `.netrc` file, read as curl reads it: tokens separated by spaces, tabs and newlines;
/// `machine HOST`, `default`, `login L`, `password P`, `account A` (ignored); `macdef NAME`
/// followed by a macro that runs to the next empty line (skipped); values may be quoted
/// (`"a b"`, with `\"`, `\\`, `\n`, `\r`, `\t`). Unknown words are ignored.
///
/// Pure: the caller reads the file (HaulCore does no I/O) and names it in errors.
public struct Netrc: Hashable, Sendable {
    /// One `machine` or `default` block, with the login and password that follow it.
    public struct Entry: Hashable, Sendable, CustomStringConvertible {
        /// Nil for the `default` entry.
        public var machine: String?
        /// The `login` value; nil when the block has none, and then it gives no credentials.
        public var login: String?
        /// The `password` value; nil when the block has none (an empty password then).
        public var password: String?

        /// An entry for `machine` (nil for `default`).
        public init(machine: String?, login: String? = nil, password: String? = nil) {
            self.machine = machine
            self.login = login
            self.password = password
        }

        /// `machine HOST login L password ***`, the password hidden (`-` for a value not given).
        public var description: String {
            """
            \(machine.map { "machine \($0)" } ?? "default") login \(login ?? "-") password \
            \(password == nil ? "-" : "***")
            """
        }
    }

    /// The entries in file order; the first that fits a host wins.
    public var entries: [Entry]

    /// A netrc made of these entries, in this order.
    public init(entries: [Entry]) {
        self.entries = entries
    }

    /// - Throws: `.usage` for an unterminated quoted value, naming the line.
    public init(parsing text: String) throws(HaulError) {
        var scanner = Scanner(Array(text.utf8))
        var entries: [Entry] = []
        while let token = try scanner.next() {
            switch token {
            case "machine":
                guard let host = try scanner.next() else { break }
                entries.append(Entry(machine: host))
            case "default":
                entries.append(Entry(machine: nil))
            case "login":
                let value = try scanner.next()
                if !entries.isEmpty { entries[entries.count - 1].login = value }
            case "password":
                let value = try scanner.next()
                if !entries.isEmpty { entries[entries.count - 1].password = value }
            case "account":
                _ = try scanner.next()
            case "macdef":
                _ = try scanner.next()
                scanner.skipMacro()
            default:
                continue
            }
        }
        self.entries = entries
    }

    /// The credentials for `host`: the first `machine` entry with that name (compared without
    /// case) that has a login (and, when `login` is given, that login), else the `default` entry.
    /// Nil when neither has a login.
    public func credentials(host: String, login: String? = nil) -> Credentials? {
        // A URL's IPv6 host keeps its brackets; a netrc machine has none.
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? host.dropFirst().dropLast() : Substring(host)
        let wanted = bare.lowercased()
        func usable(_ entry: Entry) -> Credentials? {
            guard let entryLogin = entry.login, login == nil || login == entryLogin else { return nil }
            return Credentials(user: entryLogin, password: entry.password ?? "")
        }
        for entry in entries where entry.machine?.lowercased() == wanted {
            if let found = usable(entry) { return found }
        }
        for entry in entries where entry.machine == nil {
            if let found = usable(entry) { return found }
        }
        return nil
    }

    private struct Scanner {
        let bytes: [UInt8]
        var index = 0
        var line = 1

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        static func isSpace(_ byte: UInt8) -> Bool {
            byte == 0x20 || byte == 0x09 || byte == 0x0a || byte == 0x0d || byte == 0x0c || byte == 0x0b
        }

        mutating func next() throws(HaulError) -> String? {
            while index < bytes.count, Self.isSpace(bytes[index]) {
                if bytes[index] == 0x0a { line += 1 }
                index += 1
            }
            guard index < bytes.count else { return nil }
            var token: [UInt8] = []
            if bytes[index] == UInt8(ascii: "\"") {
                let startLine = line
                index += 1
                while true {
                    guard index < bytes.count else {
                        throw HaulError(.usage, "line \(startLine): a quoted value has no closing quote")
                    }
                    let byte = bytes[index]
                    index += 1
                    if byte == UInt8(ascii: "\"") { break }
                    if byte == 0x0a { line += 1 }
                    if byte == UInt8(ascii: "\\"), index < bytes.count {
                        let escaped = bytes[index]
                        index += 1
                        switch escaped {
                        case UInt8(ascii: "n"): token.append(0x0a)
                        case UInt8(ascii: "r"): token.append(0x0d)
                        case UInt8(ascii: "t"): token.append(0x09)
                        default: token.append(escaped)
                        }
                    } else {
                        token.append(byte)
                    }
                }
            } else {
                while index < bytes.count, !Self.isSpace(bytes[index]) {
                    token.append(bytes[index])
                    index += 1
                }
            }
            return String(decoding: token, as: UTF8.self)
        }

        /// After `macdef NAME`: the rest of that line, then every line up to and including the
        /// first empty one.
        mutating func skipMacro() {
            while index < bytes.count, bytes[index] != 0x0a { index += 1 }
            while index < bytes.count {
                // At a newline: an empty line follows when the next line has nothing before its own newline.
                index += 1
                line += 1
                var end = index
                while end < bytes.count, bytes[end] != 0x0a { end += 1 }
                let isEmpty = bytes[index..<end].allSatisfy { $0 == 0x0d }
                index = end
                if isEmpty { return }
            }
        }
    }
}
