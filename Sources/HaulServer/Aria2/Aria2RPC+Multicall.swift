import Haul
import HaulAPI
import HaulCore

/// `system.multicall`. Calls run in order; a run of consecutive `aria2.addUri` calls (how
/// front-ends and scripts add many downloads at once) is added as one batch, so a hundred adds
/// cost one transaction, not a hundred. Each call still gets its own answer: one that cannot be
/// read fails alone, and when the batch fails as a whole its calls are added one by one.
extension Aria2RPC {
    /// `system.multicall([{methodName, params}, ...])`: successes wrapped in a one-element array,
    /// failures as bare `{code, message}`, in order.
    func multicall(_ params: Params) async throws -> [UInt8] {
        let calls = try params.array(0).map(Self.parse)
        var results: [Result<[UInt8], any Error>] = []
        var index = 0
        while index < calls.count {
            var adds: [Call] = []
            while index + adds.count < calls.count, case .success(let call) = calls[index + adds.count],
                call.name == "aria2.addUri"
            {
                adds.append(call)
            }
            if adds.count > 1 {
                results += await addUris(adds)
                index += adds.count
                continue
            }
            results.append(
                await Result { () async throws -> [UInt8] in
                    let call = try calls[index].get()
                    return try await self.call(call.name, call.arguments, nested: true)
                })
            index += 1
        }
        var json = JSONWriter()
        json.array(results) { json, result in
            switch result {
            case .success(let bytes): json.array([bytes]) { json, bytes in json.bytes += bytes }
            case .failure(let error): json.object { Aria2Error(error).write(to: &$0) }
            }
        }
        return json.bytes
    }

    private struct Call {
        var name: String
        var arguments: [JSONValue]
    }

    private static func parse(_ call: JSONValue) -> Result<Call, any Error> {
        Result {
            guard let fields = call.object else {
                throw Aria2Error(code: 1, message: "system.multicall expected struct.")
            }
            guard let name = fields["methodName"]?.string else {
                throw Aria2Error(code: 1, message: "Missing methodName.")
            }
            switch fields["params"] {
            case nil: return Call(name: name, arguments: [])
            case .array(let values)?: return Call(name: name, arguments: values)
            default: throw Aria2Error.unauthorized
            }
        }
    }

    /// Consecutive `addUri` calls: each read and checked alone, the good ones added together.
    private func addUris(_ calls: [Call]) async -> [Result<[UInt8], any Error>] {
        var prepared: [Result<PreparedAdd, any Error>] = []
        for call in calls {
            prepared.append(
                await Result { () async throws -> PreparedAdd in
                    try await self.prepareAddUri(try self.authorized(call.name, call.arguments))
                })
        }
        let ready = prepared.compactMap { entry -> PreparedAdd? in
            if case .success(let add) = entry { add } else { nil }
        }
        var records: [DownloadRecord]?
        do {
            var groups: [DownloadQueue.GroupAsk] = []
            var start = 0
            for add in ready {
                groups += add.groups.map { $0.shifted(by: start) }
                start += add.requests.count
            }
            records = try await manager.add(
                ready.flatMap(\.requests), placements: ready.flatMap(\.placements), groups: groups)
        } catch {
            // Added one by one below, so the call that cannot be added gets the error alone.
            records = nil
        }
        var results: [Result<[UInt8], any Error>] = []
        var next = 0
        for entry in prepared {
            results.append(
                await Result { () async throws -> [UInt8] in
                    let add = try entry.get()
                    let ids: [DownloadID]
                    if let records {
                        // The first of a call's downloads answers it.
                        ids = records[next..<(next + add.requests.count)].map(\.id)
                        next += add.requests.count
                    } else {
                        ids = try await self.manager.add(
                            add.requests, placements: add.placements, groups: add.groups
                        ).map(\.id)
                    }
                    self.follows.added(ids)
                    var json = JSONWriter()
                    json.string(ids[0].rawValue)
                    return json.bytes
                })
        }
        return results
    }
}

extension Result where Failure == any Error {
    /// The result of an async throwing body.
    init(_ body: () async throws -> Success) async {
        do {
            self = .success(try await body())
        } catch {
            self = .failure(error)
        }
    }
}
