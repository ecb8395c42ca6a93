import HaulCore

/// What goes wrong between the daemon and its clients, apart from the engine's errors
/// (`HaulError`): a request without the right token, a `Host` that does not name the daemon, no
/// daemon answering. Its codes are closed too, and join the engine's on the wire
/// (`{"error": {"code", "message"}}`): the server answers with them, the CLI reads them back
/// (`ErrorView.error`) and exits with their status.
public struct DaemonError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Code: String, CaseIterable, Hashable, Sendable {
        /// A request to the daemon without the right token (HTTP 401).
        case unauthorized = "unauthorized"
        /// The request's `Host` (or a WebSocket's `Origin`) is not a name of this daemon: a page
        /// that rebound its own DNS name to 127.0.0.1 must not reach the API (HTTP 421).
        case misdirected = "misdirected-request"
        /// No daemon answers at the address the CLI knows.
        case noDaemon = "no-daemon"
    }

    public var code: Code
    public var message: String
    /// The HTTP status the daemon answered with, when the error came in an answer.
    public var httpStatus: Int?
    /// A description of the underlying error, for logs.
    public var cause: String?

    public init(_ code: Code, _ message: String, httpStatus: Int? = nil, underlying: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.httpStatus = httpStatus
        self.cause = underlying.map { "\($0)" }
    }

    public var description: String {
        guard let cause, !cause.isEmpty, !message.contains(cause) else { return message }
        return "\(message) (\(cause))"
    }
}
