import Haul
import HaulAPI
import HaulCore
import Logging

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// aria2's JSON-RPC 2.0 (`/jsonrpc`), a thin layer over the same `DownloadManager` and
/// `DaemonDefaults` as the HTTP API: a GID is haul's download id, and every rule of the queue
/// stays in the manager. This type is the envelope (parsing, batches, the token, errors,
/// `system.*`); `Aria2RPC+Methods.swift` holds the `aria2.*` methods.
///
/// Where aria2 differs from its manual, this follows aria2 (1.36, observed): any method error
/// answers HTTP 400 with code 1, unparsable JSON and non-array params answer 500, a batch always
/// answers 200, request ids come back exactly as given.
public struct Aria2RPC: Sendable {
    let manager: DownloadManager
    let defaults: DaemonDefaults
    let secret: String
    /// 40 hex digits, new for every start of the daemon (`getSessionInfo`).
    let sessionID: String
    /// Stops the daemon gracefully (`aria2.shutdown`, `aria2.forceShutdown`).
    let shutdown: @Sendable () -> Void
    let logger: Logger
    /// Which downloads followed which `addUri` (`followedBy`, `following`).
    let follows = Aria2Follows()

    public init(
        manager: DownloadManager, defaults: DaemonDefaults, secret: String, logger: Logger,
        shutdown: @escaping @Sendable () -> Void
    ) {
        self.manager = manager
        self.defaults = defaults
        self.secret = secret
        self.logger = logger
        self.shutdown = shutdown
        sessionID = Token.random(bytes: 20)
    }

    /// The largest request aria2 accepts by default (`rpc-max-request-size`).
    public static let maxRequestSize = 2 << 20

    public struct Reply: Sendable {
        /// 200, or 400 for a method's error, 500 for unparsable JSON (as aria2 answers).
        public var status: Int
        public var body: [UInt8]
        /// Whether the request carried the valid `token:` (any call of a batch or multicall).
        public var authenticated = false
    }

    /// One HTTP body or WebSocket message: a request or a batch of them.
    public func answer(_ bytes: [UInt8]) async -> Reply {
        let request: JSONValue
        do {
            request = try JSONParser.parse(bytes)
        } catch {
            return Self.failure(id: .null, Aria2Error(code: -32700, message: "Parse error."), status: 500)
        }
        return await answer(request)
    }

    public func answer(_ request: JSONValue) async -> Reply {
        var reply = await dispatch(request)
        reply.authenticated = showsToken(request)
        return reply
    }

    /// Whether `request` (a call, a batch, a `system.multicall`) carries the valid token anywhere.
    func showsToken(_ request: JSONValue) -> Bool {
        switch request {
        case .array(let calls):
            return calls.contains { showsToken($0) }
        case .object(let fields):
            guard case .array(let params)? = fields["params"] else { return false }
            if case .string(let token)? = params.first, token.hasPrefix("token:"),
                Token.matches(token.utf8.dropFirst(6), secret)
            {
                return true
            }
            return fields["method"]?.string == "system.multicall" && params.contains { showsToken($0) }
        default:
            return false
        }
    }

    private func dispatch(_ request: JSONValue) async -> Reply {
        switch request {
        case .array(let calls):
            // Elements that are not objects are dropped, as aria2 drops them.
            var json = JSONWriter()
            var replies: [[UInt8]] = []
            for call in calls where call.object != nil { replies.append(await single(call).body) }
            json.array(replies) { json, reply in json.bytes += reply }
            return Reply(status: 200, body: json.bytes)
        case .object:
            return await single(request)
        case .integer, .number:
            return Self.failure(id: .null, Aria2Error(code: -32700, message: "Parse error."), status: 500)
        default:
            return Self.failure(id: .null, .invalidRequest, status: 400)
        }
    }

    /// A GET request's parts (`?method=M&id=I&params=BASE64`); ids are strings there.
    public func answer(method: String?, id: String?, params: String?) async -> Reply {
        guard let method, let id else { return Self.failure(id: .null, .invalidRequest, status: 400) }
        var parameters: [JSONValue] = []
        if let params {
            let padded = params.replacing(" ", with: "+")
            // Answered: parameters that are not base64 JSON are an invalid request (aria2's
            // answer names no reason; the parser's is logged).
            guard let data = Data(base64Encoded: padded + String(repeating: "=", count: (4 - padded.count % 4) % 4))
            else {
                return Self.failure(id: .null, .invalidRequest, status: 400)
            }
            let parsed: JSONValue
            do {
                parsed = try JSONParser.parse(Array(data))
            } catch {
                logger.debug("a GET request's params are not JSON", metadata: ["error": "\(error)"])
                return Self.failure(id: .null, .invalidRequest, status: 400)
            }
            guard case .array(let values) = parsed else { return Self.failure(id: .null, .invalidRequest, status: 400) }
            parameters = values
        }
        return await answer(.object(["id": .string(id), "method": .string(method), "params": .array(parameters)]))
    }

    private func single(_ request: JSONValue) async -> Reply {
        guard let fields = request.object else { return Self.failure(id: .null, .invalidRequest, status: 400) }
        guard let id = fields["id"] else { return Self.failure(id: .null, .invalidRequest, status: 400) }
        guard let method = fields["method"]?.string else { return Self.failure(id: id, .invalidRequest, status: 400) }
        var params: [JSONValue] = []
        switch fields["params"] {
        case nil: break
        case .array(let values)?: params = values
        default: return Self.failure(id: id, Aria2Error(code: -32602, message: "Invalid params."), status: 500)
        }
        do {
            let result = try await call(method, params, nested: false)
            var json = JSONWriter()
            json.object { json in
                json.field("id") { id.write(to: &$0) }
                json.field("jsonrpc", "2.0")
                json.field("result") { $0.bytes += result }
            }
            return Reply(status: 200, body: json.bytes)
        } catch {
            return Self.failure(id: id, Aria2Error(error), status: 400)
        }
    }

    static func failure(id: JSONValue, _ error: Aria2Error, status: Int) -> Reply {
        var json = JSONWriter()
        json.object { json in
            json.field("id") { id.write(to: &$0) }
            json.field("jsonrpc", "2.0")
            json.field("error", object: { error.write(to: &$0) })
        }
        return Reply(status: status, body: json.bytes)
    }

    // MARK: Dispatch

    static let methods = [
        "aria2.addUri", "aria2.addTorrent", "aria2.getPeers", "aria2.addMetalink", "aria2.remove", "aria2.pause",
        "aria2.forcePause", "aria2.pauseAll", "aria2.forcePauseAll", "aria2.unpause", "aria2.unpauseAll",
        "aria2.forceRemove", "aria2.changePosition", "aria2.tellStatus", "aria2.getUris", "aria2.getFiles",
        "aria2.getServers", "aria2.tellActive", "aria2.tellWaiting", "aria2.tellStopped", "aria2.getOption",
        "aria2.changeUri", "aria2.changeOption", "aria2.getGlobalOption", "aria2.changeGlobalOption",
        "aria2.purgeDownloadResult", "aria2.removeDownloadResult", "aria2.getVersion", "aria2.getSessionInfo",
        "aria2.shutdown", "aria2.forceShutdown", "aria2.getGlobalStat", "aria2.saveSession",
        "system.multicall", "system.listMethods", "system.listNotifications",
    ]

    static let notifications = [
        "aria2.onDownloadStart", "aria2.onDownloadPause", "aria2.onDownloadStop", "aria2.onDownloadComplete",
        "aria2.onDownloadError", "aria2.onBtDownloadComplete",
    ]

    /// An `aria2.` call's arguments after its token, once the token is checked. The token comes
    /// first, as `token:SECRET`, and is checked before the method is looked up.
    func authorized(_ method: String, _ params: [JSONValue]) throws -> Params {
        guard method.hasPrefix("aria2."), case .string(let token)? = params.first, token.hasPrefix("token:"),
            Token.matches(token.utf8.dropFirst(6), secret)
        else {
            throw method.hasPrefix("aria2.")
                ? Aria2Error.unauthorized : Aria2Error(code: 1, message: "No such method: \(method)")
        }
        return Params(Array(params.dropFirst()))
    }

    /// The result of one call, as JSON bytes.
    func call(_ method: String, _ params: [JSONValue], nested: Bool) async throws -> [UInt8] {
        switch method {
        case "system.listMethods": return Self.strings(Self.methods)
        case "system.listNotifications": return Self.strings(Self.notifications)
        case "system.multicall":
            if nested { throw Aria2Error(code: 1, message: "Recursive system.multicall forbidden.") }
            return try await multicall(Params(params))
        default: break
        }
        let arguments = try authorized(method, params)
        var json = JSONWriter()
        try await aria2(String(method.dropFirst(6)), arguments, into: &json)
        return json.bytes
    }

    static func strings(_ values: [String]) -> [UInt8] {
        var json = JSONWriter()
        json.array(values) { json, value in json.string(value) }
        return json.bytes
    }
}

/// An error as aria2 reports it: `{"code": 1, "message": ...}`. Code 1 for every method's error,
/// -32700/-32600/-32602 for the envelope.
struct Aria2Error: Error, Sendable {
    var code: Int
    var message: String

    static let unauthorized = Aria2Error(code: 1, message: "Unauthorized")
    static let invalidRequest = Aria2Error(code: -32600, message: "Invalid Request.")

    init(code: Int, message: String) {
        self.code = code
        self.message = message
    }

    /// Any error a method throws: haul's own carry their one-line message.
    init(_ error: any Error) {
        switch error {
        case let error as Aria2Error: self = error
        case let error as HaulError: self.init(code: 1, message: error.message)
        default: self.init(code: 1, message: "\(error)")
        }
    }

    func write(to json: inout JSONWriter) {
        json.field("code", Int64(code))
        json.field("message", message)
    }
}

/// Positional parameters after the token, with aria2's messages for missing or mistyped ones
/// (positions count after the token).
struct Params {
    let values: [JSONValue]

    init(_ values: [JSONValue]) {
        self.values = values
    }

    func value(_ index: Int) -> JSONValue? {
        index < values.count ? values[index] : nil
    }

    func missing(_ index: Int) -> Aria2Error {
        Aria2Error(code: 1, message: "The parameter at \(index) is required but missing.")
    }

    func wrongType(_ index: Int) -> Aria2Error {
        Aria2Error(code: 1, message: "The parameter at \(index) has wrong type.")
    }

    func string(_ index: Int) throws -> String {
        guard let value = value(index) else { throw missing(index) }
        guard let text = value.string else { throw wrongType(index) }
        return text
    }

    func integer(_ index: Int) throws -> Int {
        guard let value = value(index) else { throw missing(index) }
        guard let number = value.integer, let small = Int(exactly: number) else { throw wrongType(index) }
        return small
    }

    func array(_ index: Int) throws -> [JSONValue] {
        guard let value = value(index) else { throw missing(index) }
        guard let array = value.array else { throw wrongType(index) }
        return array
    }

    func optionalObject(_ index: Int) throws -> [String: JSONValue] {
        guard let value = value(index) else { return [:] }
        guard let object = value.object else { throw wrongType(index) }
        return object
    }

    func object(_ index: Int) throws -> [String: JSONValue] {
        guard value(index) != nil else { throw missing(index) }
        return try optionalObject(index)
    }

    /// `keys`: which fields of a status to answer with; nil for all.
    func keys(_ index: Int) throws -> Set<String>? {
        guard let value = value(index) else { return nil }
        guard let array = value.array else { throw wrongType(index) }
        let keys = Set(array.compactMap(\.string))
        return keys.isEmpty ? nil : keys
    }

    /// A GID: 16 hex digits (any case).
    func gid(_ index: Int) throws -> DownloadID {
        let text = try string(index)
        guard text.utf8.count == 16, text.allSatisfy(\.isHexDigit) else {
            throw Aria2Error(code: 1, message: "Invalid GID \(text)")
        }
        return DownloadID(rawValue: text.lowercased())
    }
}
