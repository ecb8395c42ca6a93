/// The request fields a browser's hand-over names: aria2's `header`, `referer` and `user-agent`
/// options, the REST add's `headers`, `referer` and `userAgent`. They become the download's
/// `headers`, so they are stored with it (the store keeps `headers` already) and go with every
/// request and every hop of a redirect, as browsers and aria2c send them; the transport keeps
/// `Cookie`, `Authorization` and `Proxy-Authorization` for the URL's own origin.
public enum RequestHeaderOptions {
    /// A `Referer` of `*` stands for the URL each request goes to (aria2's `--referer=*`):
    /// `DownloadRequest.headers(for:)` puts that URL in its place.
    public static let ownURL = "*"

    /// aria2's `header` option: a list of lines, or one text of lines separated by `\n` (a `\r`
    /// before it dropped), as extensions send it; blank lines skipped.
    public static func lines(_ texts: [String]) -> [String] {
        texts.flatMap { text in
            // "\r\n" is one Character, equal to neither "\r" nor "\n".
            text.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" }).map { String($0) }
        }
        .filter { !$0.trimmingSpaces().isEmpty }
    }

    /// The fields of `lines`, in order. A repeated name stays a field of its own, except
    /// `Cookie`: a request carries one `Cookie` field (RFC 6265 §5.4), so a later line's
    /// cookies join the first's with `; `.
    /// - Throws: `.usage` naming the line that is not `Name: value`, or that holds a control character.
    public static func fields(_ lines: [String]) throws(HaulError) -> HTTPHeaderList {
        var list = HTTPHeaderList()
        for line in lines {
            let field = try HTTPHeaderList.field(parsing: line)
            guard !hasControl(field.name), !hasControl(field.value, allowingTab: true) else {
                throw HaulError(.usage, "header '\(field.name.prefix(40))' holds a control character")
            }
            if field.name.lowercased() == "cookie", let first = list["Cookie"] {
                list.replace(name: "Cookie", value: first.isEmpty ? field.value : first + "; " + field.value)
            } else {
                list.add(name: field.name, value: field.value)
            }
        }
        return list
    }

    /// `headers` with `referer` and `userAgent` in place of any fields of those names: a named
    /// option wins over a line. Nil leaves the fields as they are; an empty value removes them
    /// (aria2's default, no such field).
    /// - Throws: `.usage` for a value with a control character (a line break would start a new field).
    public static func applying(referer: String?, userAgent: String?, to headers: HTTPHeaderList) throws(HaulError)
        -> HTTPHeaderList
    {
        var headers = headers
        for (name, value) in [("Referer", referer), ("User-Agent", userAgent)] {
            guard let value else { continue }
            let trimmed = value.trimmingSpaces()
            guard !hasControl(trimmed, allowingTab: true) else {
                throw HaulError(.usage, "\(name) must be one line without control characters")
            }
            if trimmed.isEmpty {
                headers.remove(name: name)
            } else {
                headers.replace(name: name, value: trimmed)
            }
        }
        return headers
    }

    /// Whether `text` holds a C0 control character or DEL (a tab only unless allowed).
    static func hasControl(_ text: String, allowingTab: Bool = false) -> Bool {
        text.utf8.contains { byte in (byte < 0x20 && !(allowingTab && byte == 0x09)) || byte == 0x7F }
    }
}

extension Paths {
    /// aria2's `out`, a path relative to `directory` that may name subdirectories: the
    /// directory and file name it names, from the text alone (no link is followed). Nil when
    /// its normalised path is not beneath `directory` (`..` climbing out, even into another
    /// allowed directory) or names `directory` itself (`.`, `a/..`).
    public static func place(_ relative: String, beneath directory: String) -> (directory: String, name: String)? {
        let base = normalized(directory)
        let full = normalized(join(base, relative))
        guard full != base, isInside(full, base) else { return nil }
        let (folder, name) = split(full)
        guard let name else { return nil }
        return (folder, name)
    }
}

extension DownloadRequest {
    /// The extra header fields a request to `url` (one of `sources`) carries: `headers`, a
    /// `Referer` of `*` made `url` itself (`RemoteURL.absoluteString` holds no credentials), and
    /// the cookies given for that URL (`cookies`) after a `Cookie` field of the user's own.
    public func headers(for url: RemoteURL) -> HTTPHeaderList {
        var all = headers
        if all["Referer"] == RequestHeaderOptions.ownURL { all.replace(name: "Referer", value: url.absoluteString) }
        guard let field = cookies.field(for: url) else { return all }
        if let own = all["Cookie"] {
            all.replace(name: "Cookie", value: own + "; " + field)
        } else {
            all.add(name: "Cookie", value: field)
        }
        return all
    }
}
