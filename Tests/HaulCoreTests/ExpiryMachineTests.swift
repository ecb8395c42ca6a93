import HaulCore
import Testing

/// An expired URL with plain values: with a refresh command the machine asks for a new URL and
/// resumes from it, re-reading an overlap (no validator carries over); a redirect to a web page
/// after bytes arrived is an expiry; refreshes without progress end in `url-expired`.
@Suite(.timeLimit(.minutes(1))) struct ExpiryMachineTests {
    typealias Machine = DownloadStateMachine
    let signed = try! RemoteURL("http://a/file?token=1")
    let renewed = try! RemoteURL("http://b/file?token=2")
    let total: Int64 = 1_000

    func machine(refreshes: Bool) throws -> Machine {
        let request = try DownloadRequest(url: signed, destination: .directory("/tmp"))
        var record = DownloadRecord(id: DownloadID(rawValue: "1"), request: request, createdAt: 0)
        record.fileName = "file"
        return Machine(
            record: record,
            settings: .init(
                retry: RetryPolicy(maxAttempts: 3, baseDelay: .seconds(1)), checkpointInterval: 1_000_000, overlap: 50,
                piecesPerConnection: 0, httpVersions: .http1_1, refreshesURL: refreshes))
    }

    func plans(_ actions: [Machine.Action]) -> [RequestPlan] {
        actions.compactMap { if case .request(_, let plan) = $0 { plan } else { nil } }
    }

    /// 400 bytes arrive, the body ends early, and the request for the rest gets `answer`.
    func expire(_ machine: inout Machine, answer: ResponseHead) -> [Machine.Action] {
        _ = machine.start(.init(partSize: nil, published: false), now: 0)
        _ = machine.responseReceived(
            0,
            ResponseHead(
                status: 200, headers: ["Content-Length": "\(total)", "ETag": "\"e\""],
                url: signed.absoluteString), nowSecondsSince1970: 0, jitter: 0)
        #expect(machine.received(0, count: 400).keep == 400)
        let rest = plans(machine.bodyEnded(0, jitter: 0))
        #expect(rest.first?.range?.start == 400)
        return machine.responseReceived(0, answer, nowSecondsSince1970: 0, jitter: 0)
    }

    @Test func aRefreshedURLGoesOnFromTheBytes() throws {
        var machine = try machine(refreshes: true)
        let actions = expire(&machine, answer: ResponseHead(status: 403, headers: [:], url: signed.absoluteString))
        #expect(actions.contains(.refreshURL(expired: signed)), "\(actions)")
        guard case .refreshingURL(let expired) = machine.state else {
            Issue.record("state \(machine.state)")
            return
        }
        #expect(expired.code == .urlExpired && expired.httpStatus == 403, "the state keeps why the URL expired")
        _ = machine.transferFailed(0, HaulError(.interrupted, "closed"), jitter: 0)
        let resumed = machine.urlRefreshed(.success(renewed))
        #expect(resumed.contains(.persist))
        let plan = try #require(plans(resumed).first)
        #expect(plan.url == renewed)
        #expect(plan.ifRange == nil, "the old server's validator means nothing to the new one")
        #expect(plan.range?.start == 350, "an overlap of 50 bytes is re-read and compared")
        #expect(machine.record.request.url == renewed && machine.record.validator == nil)
    }

    /// A refusal from where a redirect led (a CDN's signed URL that expired between the Hub's
    /// redirect and the request, on a loaded machine): the download's own URL, asked again,
    /// redirects to a fresh one. A retry, with or without bytes, never an expiry.
    @Test func aRefusalWhereARedirectLedIsAskedAgainAtTheURL() throws {
        for refreshes in [false, true] {
            var machine = try machine(refreshes: refreshes)
            let actions = expire(
                &machine, answer: ResponseHead(status: 403, headers: [:], url: "http://cdn/blob?expires=1&sig=x"))
            #expect(machine.state == .downloading, "\(machine.state)")
            #expect(!actions.contains(.refreshURL(expired: signed)), "\(actions)")
            #expect(
                actions.contains { if case .schedule = $0 { true } else { false } },
                "a retry is scheduled: \(actions)")
            #expect(machine.completedLength == 400)
        }
        var fresh = try machine(refreshes: false)
        _ = fresh.start(.init(partSize: nil, published: false), now: 0)
        let first = fresh.responseReceived(
            0, ResponseHead(status: 403, headers: [:], url: "http://cdn/blob?expires=1&sig=x"), nowSecondsSince1970: 0,
            jitter: 0)
        #expect(fresh.state == .downloading, "no byte yet: still a retry")
        #expect(first.contains { if case .schedule = $0 { true } else { false } }, "\(first)")
    }

    @Test func withoutARefreshCommandTheDownloadNeedsANewURL() throws {
        var machine = try machine(refreshes: false)
        _ = expire(&machine, answer: ResponseHead(status: 410, headers: [:], url: signed.absoluteString))
        #expect(machine.state == .failed)
        #expect(machine.record.error?.code == .urlExpired)
        #expect(machine.record.needsNewURL)
        #expect(machine.completedLength == 400)
    }

    @Test func aRedirectToAWebPageIsAnExpiry() throws {
        var machine = try machine(refreshes: false)
        _ = expire(
            &machine,
            answer: ResponseHead(
                status: 200, headers: ["Content-Type": "text/html", "Content-Length": "900"],
                url: "http://a/login"))
        #expect(machine.record.error?.code == .urlExpired, "\(String(describing: machine.record.error))")
        #expect(machine.completedLength == 400, "nothing of the page is written")
        // The same answer from the URL itself (no redirect) is not an expiry.
        var direct = try self.machine(refreshes: false)
        _ = expire(
            &direct,
            answer: ResponseHead(
                status: 200, headers: ["Content-Type": "text/html", "Content-Length": "900"],
                url: signed.absoluteString))
        #expect(direct.record.error?.code != .urlExpired)
    }

    @Test func refreshesWithoutProgressEnd() throws {
        var machine = try machine(refreshes: true)
        var actions = expire(&machine, answer: ResponseHead(status: 401, headers: [:], url: signed.absoluteString))
        for _ in 1..<Machine.maxURLRefreshes {
            #expect(actions.contains(.refreshURL(expired: machine.record.request.url)))
            _ = machine.transferFailed(0, HaulError(.interrupted, "closed"), jitter: 0)
            let next = machine.urlRefreshed(.success(renewed))
            let id = try #require(next.compactMap { if case .request(let id, _) = $0 { id } else { nil } }.first)
            actions = machine.responseReceived(
                id, ResponseHead(status: 403, headers: [:], url: renewed.absoluteString),
                nowSecondsSince1970: 0, jitter: 0)
        }
        #expect(actions.contains(.refreshURL(expired: renewed)))
        let last =
            machine.transferFailed(0, HaulError(.interrupted, "closed"), jitter: 0)
            + machine.urlRefreshed(.failure(HaulError(.usage, "the refresh command exited with status 1")))
        #expect(last.contains { if case .finish(.failed) = $0 { true } else { false } })
        #expect(machine.record.error?.code == .urlExpired)
        #expect(
            machine.record.error?.message.hasSuffix(
                "the refresh command gave no new URL: the refresh command exited with status 1") == true)
    }
}
