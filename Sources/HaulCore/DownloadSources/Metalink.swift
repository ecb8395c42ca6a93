/// A Metalink document (v4, RFC 5854, and v3, metalinker.org): files, each with its size, its
/// digests and its URLs in order of preference. Only http and https URLs are kept; a file left
/// with none is reported, not dropped silently.
public struct Metalink: Hashable, Sendable {
    /// One `<file>` of the document: what to save it as, where to get it, and how to check it.
    public struct File: Hashable, Sendable {
        /// The name the document gives, sanitised as a `Content-Disposition` name is.
        public var name: String
        /// Its length in bytes, as `<size>` gives it; nil when the document does not say.
        public var size: Int64?
        /// Its URLs, most preferred first.
        public var urls: [RemoteURL]
        /// Whole-file digests haul can check, strongest first.
        public var checksums: [Checksum]
        /// Digests of fixed-length pieces, when the document gives them in a type haul checks.
        public var pieces: PieceHashes?
    }

    /// The document's files, in its order; never empty once parsed.
    public var files: [File]

    /// The largest Metalink document haul reads.
    public static let maxBytes = 4 << 20

    /// Reads a Metalink document, v4 or v3.
    ///
    /// - Throws: `.badRequest` when the text is larger than `maxBytes`, is not well-formed XML
    ///   (see `MiniXML`), has a root other than `<metalink>`, lists no file, or has a file with
    ///   no usable name, a size that is not a number of bytes, piece hashes that are unusable or
    ///   do not cover its size, or no http or https URL.
    public static func parse(_ text: String) throws(HaulError) -> Metalink {
        guard text.utf8.count <= maxBytes else {
            throw HaulError(.badRequest, "Metalink larger than \(maxBytes >> 20) MiB")
        }
        let root = try MiniXML.parse(text)
        guard root.name == "metalink" else {
            throw HaulError(.badRequest, "not a Metalink: the root element is <\(root.name)>")
        }
        // v4: <metalink><file>; v3: <metalink><files><file>.
        let elements = root.all("file") + (root.first("files")?.all("file") ?? [])
        guard !elements.isEmpty else { throw HaulError(.badRequest, "the Metalink lists no file") }
        var files: [File] = []
        for element in elements { files.append(try file(element)) }
        return Metalink(files: files)
    }

    static func file(_ element: MiniXML) throws(HaulError) -> File {
        let given = element.attributes["name"] ?? ""
        guard let name = FileNameSanitizer.sanitize(given) else {
            throw HaulError(.badRequest, "a Metalink file has no usable name ('\(given)')")
        }
        var size: Int64?
        if let text = element.first("size")?.text.trimmingSpaces() {
            guard let value = Int64(text), value >= 0 else {
                throw HaulError(.badRequest, "\(name): size '\(text)' is not a number of bytes")
            }
            size = value
        }
        // v3 keeps digests under <verification> and URLs under <resources>.
        let verification = element.first("verification") ?? element
        let resources = element.first("resources") ?? element
        var checksums: [Checksum] = []
        for hash in verification.all("hash") {
            guard let type = hash.attributes["type"],
                let checksum = Self.checksum(type: type, hex: hash.text.trimmingSpaces())
            else { continue }
            checksums.append(checksum)
        }
        checksums.sort { $0.algorithm.strength > $1.algorithm.strength }
        var pieces: PieceHashes?
        if let element = verification.first("pieces"),
            let algorithm = element.attributes["type"].flatMap(Self.algorithm)
        {
            guard let length = element.attributes["length"].flatMap({ Int64($0) }) else {
                throw HaulError(
                    .badRequest, "\(name): the pieces have no usable length ('\(element.attributes["length"] ?? "")')")
            }
            do throws(HaulError) {
                pieces = try PieceHashes(
                    length: length, algorithm: algorithm, hashes: element.all("hash").map { $0.text.trimmingSpaces() })
            } catch {
                throw HaulError(.badRequest, "\(name): \(error.message)")
            }
            if let size, !pieces!.fits(fileLength: size) {
                throw HaulError(
                    .badRequest,
                    "\(name): \(pieces!.hashes.count) piece hashes of \(length) bytes do not cover \(size) bytes")
            }
        }
        var ranked: [(url: RemoteURL, rank: Int, order: Int)] = []
        var others: [String] = []
        for (order, url) in resources.all("url").enumerated() {
            let text = url.text.trimmingSpaces()
            let parsed: RemoteURL
            do {
                parsed = try RemoteURL(text)
            } catch {
                // ftp://, a torrent, garbage: not something haul downloads; named if nothing is left.
                others.append(error.message)
                continue
            }
            // v4: priority 1 is the most preferred; v3: preference 100 is.
            let rank =
                url.attributes["priority"].flatMap { Int($0) }
                ?? url.attributes["preference"].flatMap { Int($0) }.map { 1000 - $0 } ?? 999_999
            ranked.append((parsed, rank, order))
        }
        ranked.sort { ($0.rank, $0.order) < ($1.rank, $1.order) }
        guard !ranked.isEmpty else {
            let shown = others.prefix(3).joined(separator: "; ")
            throw HaulError(
                .badRequest, "\(name): no http or https URL in the Metalink\(shown.isEmpty ? "" : ": \(shown)")")
        }
        return File(name: name, size: size, urls: ranked.map(\.url), checksums: checksums, pieces: pieces)
    }

    /// A digest of a type haul checks (`sha-256`, `sha-1`, `md5`; v3 spells them `sha256`, `sha1`).
    static func checksum(type: String, hex: String) -> Checksum? {
        guard let algorithm = algorithm(type) else { return nil }
        let checksum = Checksum(algorithm: algorithm, hex: hex)
        return algorithm.isDigest(hex: checksum.hex) ? checksum : nil
    }

    /// A hash type haul checks, as v4 (`sha-256`) or v3 (`sha256`) spells it; nil for others.
    static func algorithm(_ type: String) -> Checksum.Algorithm? {
        switch type.lowercased() {
        case "sha-256", "sha256": .sha256
        case "sha-512", "sha512": .sha512
        case "sha-1", "sha1": .sha1
        case "md5": .md5
        default: nil
        }
    }
}
