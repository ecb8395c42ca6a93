/// The one error type of Haul: a stable machine-readable `code`, a one-line human message and an
/// optional underlying cause. The CLI maps codes to exit statuses and the daemon to HTTP statuses,
/// so the code is API: add codes, never rename them.
public struct HaulError: Error, Hashable, Codable, Sendable, CustomStringConvertible {
    /// The engine's codes, closed: every place that maps them (exit statuses, HTTP statuses)
    /// is exhaustive, and the compiler shows each one a new code must reach. What goes wrong
    /// between the daemon and its clients (a refused token, no daemon) is the daemon's own
    /// `DaemonError` (HaulAPI), whose codes join these on the wire. A code read back from a
    /// store or an answer that this haul does not know (written by a newer one) reads as
    /// `internal`, its message kept.
    public enum Code: String, CaseIterable, Hashable, Codable, Sendable, CustomStringConvertible {
        /// Invalid arguments or options.
        case usage = "usage"
        /// A URL that cannot be parsed.
        case badURL = "bad-url"
        /// A scheme other than http or https.
        case unsupportedScheme = "unsupported-scheme"
        /// The server answered with an error status that retrying will not fix.
        case httpStatus = "http-status"
        /// The server broke the protocol in a way that could corrupt the file (a `Content-Range`
        /// that is not what was asked for, a range past the end).
        case badResponse = "bad-response"
        /// The server broke HTTP/1.1's framing of a body (a chunk size that is not a number, a
        /// malformed chunk): bytes that came before are kept, but the attempt counts as failed
        /// whatever it brought.
        case brokenFraming = "broken-framing"
        /// More redirects than allowed, or a redirect loop.
        case tooManyRedirects = "too-many-redirects"
        /// Connection refused, reset, DNS, TLS, timeouts: after the retries ran out.
        case network = "network"
        /// The file's length is not what the server announced.
        case lengthMismatch = "length-mismatch"
        /// The file's digest is not the one the user gave.
        case checksumMismatch = "checksum-mismatch"
        /// The file's digest is not the one the server announced (`Repr-Digest`, `Content-Digest`,
        /// `Digest`): the bytes are not the server's representation, and are not published.
        case digestMismatch = "digest-mismatch"
        /// Reading or writing the destination or the state directory failed.
        case fileSystem = "file-system"
        /// No space left, or the file-size limit was hit.
        case diskFull = "disk-full"
        /// The destination exists and belongs to someone else.
        case fileExists = "file-exists"
        /// Another process is running this download.
        case inUse = "in-use"
        /// Stopped by a signal or a shutdown before finishing.
        case interrupted = "interrupted"
        /// Cancelled by the user.
        case cancelled = "cancelled"
        /// No download with that id.
        case notFound = "not-found"
        /// The state store failed or is unreadable.
        case store = "store"
        /// A fleet host's lease on a download was taken over by another host: it may no longer
        /// write the record or the file.
        case leaseLost = "lease-lost"
        /// The shared store (PostgreSQL) cannot be reached: downloads stop at their checkpoints
        /// and go on when it is back.
        case storeUnavailable = "store-unavailable"
        /// The store's schema was written by a newer haul.
        case storeTooNew = "store-too-new"
        /// The store refused the login.
        case storeLogin = "store-login"
        /// Another live `haul serve` already is this host of the fleet (the same `--fleet-name`).
        case fleetNameInUse = "fleet-name-in-use"
        /// The download's state does not allow the request (pausing a finished one, moving a
        /// running one).
        case conflict = "conflict"
        /// Input that is not what it must be: a request to the daemon that is not valid JSON or
        /// has fields of the wrong type, a Metalink document that cannot be read.
        case badRequest = "bad-request"
        /// Input larger than accepted: a request to the daemon, a small file read beneath the
        /// download roots.
        case tooLarge = "too-large"
        /// A path haul refuses: a directory outside the allowed ones, a symbolic link, a `.part`
        /// with other hard links; and, from the daemon, a name of content its source refuses
        /// (a gated repository without a token).
        case forbidden = "forbidden"
        /// The URL stopped serving the file after bytes had arrived (401, 403 or 410: a signed
        /// link that expired): the bytes are kept, and a new URL for the same file continues it.
        case urlExpired = "url-expired"
        /// A cookie file (`--load-cookies`) that cannot be read or is not a Netscape cookie file.
        case badCookieFile = "bad-cookie-file"
        /// A bug: something Haul did not expect.
        case `internal` = "internal"

        /// The raw value (`bad-url`), as the store and the wire spell it.
        public var description: String { rawValue }

        /// Decodes the code's name; one this haul does not know reads as `internal` (see
        /// `init(reading:)`).
        public init(from decoder: any Decoder) throws {
            self.init(reading: try decoder.singleValueContainer().decode(String.self))
        }

        /// The code named `raw`; one this haul does not know is `internal`.
        public init(reading raw: String) {
            self = Code(rawValue: raw) ?? .internal
        }

        /// Failures that another attempt may not repeat.
        public var isTransient: Bool {
            switch self {
            case .network, .httpStatus, .badResponse, .brokenFraming, .lengthMismatch: true
            default: false
            }
        }
    }

    /// Whether another attempt may succeed: a proxy that wants credentials (407) will want
    /// them again, whatever the code says.
    public var isTransient: Bool {
        code.isTransient && httpStatus != 407
    }

    /// What kind of failure it is: the stable part that exit statuses and HTTP statuses follow.
    public var code: Code
    /// One line for people, naming what failed (a URL, a file, an option).
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
    public init(
        _ code: Code, _ message: String, httpStatus: Int? = nil, cause: String? = nil, underlying: (any Error)? = nil
    ) {
        self.code = code
        self.message = message
        self.httpStatus = httpStatus
        self.cause = cause ?? underlying.map { "\($0)" }
        self.underlying = underlying
    }

    private enum CodingKeys: String, CodingKey {
        case code, message, httpStatus, cause
    }

    /// Decodes `code`, `message`, `httpStatus` and `cause`; `underlying` is never encoded, so it is nil.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            try container.decode(Code.self, forKey: .code), try container.decode(String.self, forKey: .message),
            httpStatus: try container.decodeIfPresent(Int.self, forKey: .httpStatus),
            cause: try container.decodeIfPresent(String.self, forKey: .cause))
    }

    /// Encodes `code`, `message` and, when set, `httpStatus` and `cause`; never `underlying`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(code, forKey: .code)
        try container.encode(message, forKey: .message)
        try container.encodeIfPresent(httpStatus, forKey: .httpStatus)
        try container.encodeIfPresent(cause, forKey: .cause)
    }

    /// Compares `code`, `message`, `httpStatus` and `cause`; `underlying` is not compared.
    public static func == (lhs: HaulError, rhs: HaulError) -> Bool {
        lhs.code == rhs.code && lhs.message == rhs.message && lhs.httpStatus == rhs.httpStatus && lhs.cause == rhs.cause
    }

    /// Hashes the fields `==` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(message)
        hasher.combine(httpStatus)
        hasher.combine(cause)
    }

    /// The message, then the cause in parentheses unless the message already contains it.
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
