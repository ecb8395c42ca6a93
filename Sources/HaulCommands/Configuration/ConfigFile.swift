import HaulCore

/// haul's configuration file, as aria2 reads `aria2.conf`: lines `name=value` with haul's long
/// option names, `#` comments, booleans `true` and `false`, a repeatable option repeated.
/// Sections `[get]` and `[serve]`; keys before any section apply to both (and must be valid for
/// both). A key `NAME-file=PATH` gives option `--NAME` the text of that file (a secret kept out
/// of the file: `secret-file`, `proxy-password-file`, `store-file` for a URL with a password).
///
/// The file's options go on the command line before the user's own (`ConfigArguments`), so the
/// command line wins for an option given once, and a value from the file counts as given.
struct ConfigFile: Sendable, Equatable {
    enum Section: String, Sendable, CaseIterable {
        case get, serve
    }

    /// One `name=value` line; `section` nil before any section.
    struct Entry: Sendable, Equatable {
        var line: Int
        var key: String
        var value: String
        var section: Section?
    }

    var path: String
    var entries: [Entry]

    init(path: String, entries: [Entry]) {
        self.path = path
        self.entries = entries
    }

    /// Parses the file's text; the first malformed line is the error, `FILE:LINE: what`.
    init(parsing text: String, path: String) throws(HaulError) {
        self.path = path
        var entries: [Entry] = []
        var section: Section?
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmed()
            let number = index + 1
            if line.isEmpty || line.hasPrefix("#") { continue }
            if line.hasPrefix("[") {
                guard line.hasSuffix("]"), let named = Section(rawValue: String(line.dropFirst().dropLast().trimmed()))
                else {
                    throw HaulError(
                        .usage, "\(path):\(number): unknown section '\(line)' (sections are [get] and [serve])")
                }
                section = named
                continue
            }
            guard let equals = line.firstIndex(of: "=") else {
                throw HaulError(.usage, "\(path):\(number): expected name=value, got '\(line)'")
            }
            var key = String(line[..<equals].trimmed())
            if key.hasPrefix("--") { key.removeFirst(2) }
            guard !key.isEmpty, key.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "." }) else {
                throw HaulError(.usage, "\(path):\(number): '\(line[..<equals])' is not an option name")
            }
            entries.append(
                Entry(
                    line: number, key: key, value: String(line[line.index(after: equals)...].trimmed()),
                    section: section))
        }
        self.entries = entries
    }

    /// The entries that apply to `section`: those before any section, then the section's own.
    func entries(for section: Section) -> [Entry] {
        entries.filter { $0.section == nil || $0.section == section }
    }
}
