/// The one error type of Haul: a stable machine-readable `code`, a one-line human message and an
/// optional underlying cause. The CLI maps codes to exit statuses and the daemon to HTTP statuses,
/// so the code is API: add codes, never rename them.
public struct HaulError: Error, Hashable, Codable, Sendable, CustomStringConvertible {
    public struct Code: RawRepresentable, Hashable, Codable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// Invalid arguments or options.
        public static let usage = Code(rawValue: "usage")
        /// A URL that cannot be parsed.
        public static let badURL = Code(rawValue: "bad-url")
        /// A scheme other than http or https.
        public static let unsupportedScheme = Code(rawValue: "unsupported-scheme")
        /// The server answered with an error status that retrying will not fix.
        public static let httpStatus = Code(rawValue: "http-status")
        /// The server broke the protocol in a way that could corrupt the file (a `Content-Range`
        /// that is not what was asked for, a range past the end).
        public static let badResponse = Code(rawValue: "bad-response")
        /// The server broke HTTP/1.1's framing of a body (a chunk size that is not a number, a
        /// malformed chunk): bytes that came before are kept, but the attempt counts as failed
        /// whatever it brought.
        public static let brokenFraming = Code(rawValue: "broken-framing")
        /// More redirects than allowed, or a redirect loop.
        public static let tooManyRedirects = Code(rawValue: "too-many-redirects")
        /// Connection refused, reset, DNS, TLS, timeouts: after the retries ran out.
        public static let network = Code(rawValue: "network")
        /// The file's length is not what the server announced.
        public static let lengthMismatch = Code(rawValue: "length-mismatch")
        /// The file's digest is not the one the user gave.
        public static let checksumMismatch = Code(rawValue: "checksum-mismatch")
        /// The file's digest is not the one the server announced (`Repr-Digest`, `Content-Digest`,
        /// `Digest`): the bytes are not the server's representation, and are not published.
        public static let digestMismatch = Code(rawValue: "digest-mismatch")
        /// Reading or writing the destination or the state directory failed.
        public static let fileSystem = Code(rawValue: "file-system")
        /// No space left, or the file-size limit was hit.
        public static let diskFull = Code(rawValue: "disk-full")
        /// The destination exists and belongs to someone else.
        public static let fileExists = Code(rawValue: "file-exists")
        /// Another process is running this download.
        public static let inUse = Code(rawValue: "in-use")
        /// Stopped by a signal or a shutdown before finishing.
        public static let interrupted = Code(rawValue: "interrupted")
        /// Cancelled by the user.
        public static let cancelled = Code(rawValue: "cancelled")
        /// No download with that id.
        public static let notFound = Code(rawValue: "not-found")
        /// The state store failed or is unreadable.
        public static let store = Code(rawValue: "store")
        /// A fleet host's lease on a download was taken over by another host: it may no longer
        /// write the record or the file.
        public static let leaseLost = Code(rawValue: "lease-lost")
        /// The shared store (PostgreSQL) cannot be reached: downloads stop at their checkpoints
        /// and go on when it is back.
        public static let storeUnavailable = Code(rawValue: "store-unavailable")
        /// The store's schema was written by a newer haul.
        public static let storeTooNew = Code(rawValue: "store-too-new")
        /// The store refused the login.
        public static let storeLogin = Code(rawValue: "store-login")
        /// Another live `haul serve` already is this host of the fleet (the same `--fleet-name`).
        public static let fleetNameInUse = Code(rawValue: "fleet-name-in-use")
        /// The download's state does not allow the request (pausing a finished one, moving a
        /// running one).
        public static let conflict = Code(rawValue: "conflict")
        /// A request to the daemon that is not valid JSON, or has fields of the wrong type.
        public static let badRequest = Code(rawValue: "bad-request")
        /// A request to the daemon was larger than it accepts.
        public static let tooLarge = Code(rawValue: "too-large")
        /// A request to the daemon without the right token.
        public static let unauthorized = Code(rawValue: "unauthorized")
        /// A request to the daemon for something it does not allow (a directory outside its own).
        public static let forbidden = Code(rawValue: "forbidden")
        /// No daemon answers at the address the CLI knows.
        public static let noDaemon = Code(rawValue: "no-daemon")
        /// The URL stopped serving the file after bytes had arrived (401, 403 or 410: a signed
        /// link that expired): the bytes are kept, and a new URL for the same file continues it.
        public static let urlExpired = Code(rawValue: "url-expired")
        /// A cookie file (`--load-cookies`) that cannot be read or is not a Netscape cookie file.
        public static let badCookieFile = Code(rawValue: "bad-cookie-file")
        /// A bug: something Haul did not expect.
        public static let `internal` = Code(rawValue: "internal")

        /// Failures that another attempt may not repeat.
        public var isTransient: Bool {
            [Code.network, .httpStatus, .badResponse, .brokenFraming, .lengthMismatch].contains(self)
        }
    }

    /// Whether another attempt may succeed: a proxy that wants credentials (407) will want
    /// them again, whatever the code says.
    public var isTransient: Bool {
        code.isTransient && httpStatus != 407
    }

    public var code: Code
    public var message: String
    /// The HTTP status that caused it, when one did.
    public var httpStatus: Int?
    /// A description of the underlying error, for logs and `--json`.
    public var cause: String?
    /// The error this one was made from, as it was thrown, for logs and for code that wants
    /// more than `cause`'s text. Neither stored, encoded nor compared: an error read back from
    /// a store or the API has its `cause` and no `underlying`, and equals the one written.
    public var underlying: (any Error)?

    /// `cause` defaults to `underlying`'s description.
    public init(_ code: Code, _ message: String, httpStatus: Int? = nil, cause: String? = nil, underlying: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.httpStatus = httpStatus
        self.cause = cause ?? underlying.map { "\($0)" }
        self.underlying = underlying
    }

    private enum CodingKeys: String, CodingKey {
        case code, message, httpStatus, cause
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(try container.decode(Code.self, forKey: .code), try container.decode(String.self, forKey: .message),
                  httpStatus: try container.decodeIfPresent(Int.self, forKey: .httpStatus),
                  cause: try container.decodeIfPresent(String.self, forKey: .cause))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(code, forKey: .code)
        try container.encode(message, forKey: .message)
        try container.encodeIfPresent(httpStatus, forKey: .httpStatus)
        try container.encodeIfPresent(cause, forKey: .cause)
    }

    public static func == (lhs: HaulError, rhs: HaulError) -> Bool {
        lhs.code == rhs.code && lhs.message == rhs.message && lhs.httpStatus == rhs.httpStatus && lhs.cause == rhs.cause
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(message)
        hasher.combine(httpStatus)
        hasher.combine(cause)
    }

    public var description: String {
        guard let cause, !cause.isEmpty, !message.contains(cause) else { return message }
        return "\(message) (\(cause))"
    }
}

extension HaulError {
    /// `error` itself when it is a `HaulError`; otherwise one of `code`, with `message` (or the
    /// error's own description) and the error kept as `underlying` (no `cause`: the message
    /// already says it).
    public static func from(_ error: any Error, otherwise code: Code, _ message: String? = nil) -> HaulError {
        if let error = error as? HaulError { return error }
        var wrapped = HaulError(code, message ?? "\(error)")
        wrapped.underlying = error
        return wrapped
    }
}
