import HaulAPI
import HaulCore
import Hummingbird
import NIOCore

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Maps every error a handler throws to a status and `{"error": {"code", "message"}}`, so an
/// API client never has to parse text. The codes are `HaulError`'s and `DaemonError`'s, both
/// closed and stable; each has its status, decided exhaustively.
struct APIErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        do {
            return try await next(request, context)
        } catch {
            let answer = Self.answer(for: error)
            return APIResponse.error(answer.view, status: answer.status)
        }
    }

    /// What an error is answered with: its code and message, and the status.
    static func answer(for error: any Error) -> (view: ErrorView, status: HTTPResponse.Status) {
        if let error = daemonError(for: error) { return (ErrorView(error), status(for: error.code)) }
        let haulError = haulError(for: error)
        return (ErrorView(haulError), status(for: haulError.code))
    }

    /// The daemon's own errors: its checks' (the token, the Host), and Hummingbird's 401.
    static func daemonError(for error: any Error) -> DaemonError? {
        switch error {
        case let error as DaemonError: error
        case let error as HTTPError where error.status == .unauthorized:
            DaemonError(.unauthorized, error.body ?? "unauthorized")
        default: nil
        }
    }

    /// Anything else as the engine's error.
    static func haulError(for error: any Error) -> HaulError {
        switch error {
        case let error as HaulError:
            return error
        case is NIOTooManyBytesError:
            return HaulError(.tooLarge, "request body is larger than \(APILimits.maxBodySize / 1024) KiB")
        case let error as HTTPError:
            switch error.status {
            case .notFound: return HaulError(.notFound, "no such endpoint")
            case .methodNotAllowed: return HaulError(.badRequest, "method not allowed here")
            case .contentTooLarge: return HaulError(.tooLarge, "request body is too large")
            default:
                return HaulError(
                    error.status.code < 500 ? .badRequest : .internal, error.body ?? error.status.reasonPhrase)
            }
        case let error as DecodingError:
            return HaulError(.badRequest, "invalid JSON: \(describe(error))")
        default:
            return HaulError(.internal, "internal error", underlying: error)
        }
    }

    static func status(for code: HaulError.Code) -> HTTPResponse.Status {
        switch code {
        case .badRequest, .usage, .badURL, .unsupportedScheme: .badRequest
        case .forbidden: .forbidden
        case .notFound: .notFound
        case .conflict, .fileExists, .inUse: .conflict
        case .tooLarge: .contentTooLarge
        case .httpStatus, .badResponse, .brokenFraming, .tooManyRedirects, .network, .lengthMismatch, .checksumMismatch,
            .digestMismatch, .fileSystem, .diskFull, .interrupted, .cancelled, .store, .leaseLost, .storeUnavailable,
            .storeTooNew, .storeLogin, .fleetNameInUse, .urlExpired, .badCookieFile, .internal:
            .internalServerError
        }
    }

    static func status(for code: DaemonError.Code) -> HTTPResponse.Status {
        switch code {
        case .unauthorized: .unauthorized
        case .misdirected: .misdirectedRequest
        // The client's own (nothing answered it); never sent by a daemon.
        case .noDaemon: .serviceUnavailable
        }
    }

    /// One line naming the field: "priority: expected Int" rather than Foundation's paragraph.
    static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
            return keys.isEmpty ? "body" : keys.joined(separator: ".").replacing(".[", with: "[")
        }
        switch error {
        case .typeMismatch(let type, let context): return "\(path(context)): expected \(jsonType(type))"
        case .valueNotFound(let type, let context): return "\(path(context)): expected \(jsonType(type)), got null"
        case .keyNotFound(let key, let context):
            let prefix = context.codingPath.isEmpty ? "" : path(context) + "."
            return "missing field \(prefix)\(key.stringValue)"
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty { return "the body is not valid JSON" }
            return "\(path(context)): \(context.debugDescription)"
        @unknown default: return "\(error)"
        }
    }

    private static func jsonType(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Int.Type, is Int64.Type: "an integer"
        case is Double.Type: "a number"
        case is Bool.Type: "true or false"
        default: "\(type)".hasPrefix("Array") ? "an array" : "an object"
        }
    }
}

/// Checks `Authorization: Bearer SECRET` in constant time; a connection that showed it is no
/// longer one the `ConnectionGuard` may close to make room.
struct BearerAuthMiddleware<Context: RequestContext & ConnectionContext>: RouterMiddleware {
    let secret: String
    let connections: ConnectionGuard

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        guard let header = request.headers[.authorization] else {
            throw DaemonError(.unauthorized, "missing 'Authorization: Bearer TOKEN' header")
        }
        let prefix = "Bearer "
        guard header.hasPrefix(prefix), Token.matches(header.utf8.dropFirst(prefix.utf8.count), secret) else {
            throw DaemonError(.unauthorized, "wrong token")
        }
        connections.authenticated(context.channel)
        return try await next(request, context)
    }
}

enum APIResponse {
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    static func json(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        let data = try encoder.encode(value)
        var buffer = ByteBuffer()
        buffer.writeBytes(data)
        buffer.writeString("\n")
        return Response(
            status: status, headers: [.contentType: "application/json; charset=utf-8"], body: .init(byteBuffer: buffer))
    }

    static func download(_ download: DownloadView, status: HTTPResponse.Status = .ok) -> Response {
        var writer = JSONWriter()
        download.write(to: &writer)
        return raw(writer, status: status)
    }

    static func downloads(_ downloads: [DownloadView], status: HTTPResponse.Status = .ok) -> Response {
        var writer = JSONWriter()
        writer.array(downloads) { writer, download in download.write(to: &writer) }
        return raw(writer, status: status)
    }

    private static func raw(_ writer: JSONWriter, status: HTTPResponse.Status) -> Response {
        var buffer = ByteBuffer(bytes: writer.bytes)
        buffer.writeString("\n")
        return Response(
            status: status, headers: [.contentType: "application/json; charset=utf-8"], body: .init(byteBuffer: buffer))
    }

    static func error(_ error: ErrorView, status: HTTPResponse.Status) -> Response {
        var response: Response
        do {
            response = try json(ErrorBody(error: error), status: status)
        } catch let encoding {
            // Strings do not fail to encode; were it to happen, the error still goes out, as text.
            response = Response(
                status: status, headers: [.contentType: "text/plain; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: "\(error.code): \(error.message) (\(encoding))\n")))
        }
        if status == .unauthorized { response.headers[.wwwAuthenticate] = "Bearer" }
        return response
    }
}
