import HaulCore
import Testing

/// The machine carries out `ConnectionGrowth`'s decisions: a step opens connections (requests for
/// new parts), a step the host's allowance has no room for waits for `setAllowance`, and a
/// download with a named count never grows.
@Suite(.timeLimit(.minutes(1))) struct ConnectionGrowthMachineTests {
    typealias Machine = DownloadStateMachine
    let url = try! RemoteURL("https://h/file")
    let total: Int64 = 256 << 20

    func machine(grows: Bool, connections: Int = 4) throws -> Machine {
        var request = try DownloadRequest(url: url, destination: .directory("/tmp"), connections: connections)
        request.growsConnections = grows
        var record = DownloadRecord(id: DownloadID(rawValue: "1"), request: request, createdAt: 0)
        record.fileName = "file"
        return Machine(record: record, settings: .init(minimumSegment: 1 << 20, minimumSteal: 64 << 10))
    }

    func requests(_ actions: [Machine.Action]) -> [(Machine.ConnectionID, RequestPlan)] {
        actions.compactMap { if case .request(let id, let plan) = $0 { (id, plan) } else { nil } }
    }

    /// Answers every request with its range (206), so each connection receives.
    func answer(_ machine: inout Machine, _ asked: [(Machine.ConnectionID, RequestPlan)]) -> [(
        Machine.ConnectionID, RequestPlan
    )] {
        var more: [(Machine.ConnectionID, RequestPlan)] = []
        for (id, plan) in asked {
            let range = plan.range ?? ByteRange(start: 0, end: total - 1)
            let head = ResponseHead(
                status: 206,
                headers: [
                    "Content-Range": "bytes \(range.start)-\(range.end ?? total - 1)/\(total)",
                    "ETag": "\"a\"",
                ], url: url.absoluteString)
            more += requests(machine.responseReceived(id, head, nowSecondsSince1970: 0, jitter: 0))
        }
        return more
    }

    /// Every connection brings `perConnection` bytes per tick of 0.25 s, from `now` for `seconds`;
    /// returns the requests the ticks asked for (new connections), answered.
    func run(
        _ machine: inout Machine, open: inout [Machine.ConnectionID], from now: inout Double, seconds: Double,
        perConnection: Int = 64 << 10
    ) -> Int {
        var opened = 0
        let end = now + seconds
        while now < end {
            now += 0.25
            for id in open { _ = machine.received(id, count: perConnection) }
            var asked = requests(machine.tick(now: now, elapsed: 0.25))
            opened += asked.count
            while !asked.isEmpty {
                open += asked.map(\.0)
                asked = answer(&machine, asked)
                opened += asked.count
            }
        }
        return opened
    }

    func started(_ machine: inout Machine) -> [Machine.ConnectionID] {
        var open: [Machine.ConnectionID] = []
        var asked = requests(machine.start(.init(partSize: nil, published: false), now: 0))
        while !asked.isEmpty {
            open += asked.map(\.0)
            asked = answer(&machine, asked)
        }
        return open
    }

    /// Each connection paced alike: the probe, then twice as many, then the ceiling, each a new
    /// connection on a part of its own.
    @Test func aPacedLinkOpensConnectionsStepByStep() throws {
        var machine = try machine(grows: true)
        var open = started(&machine)
        #expect(open.count == 4)
        var now = 0.0
        #expect(run(&machine, open: &open, from: &now, seconds: 1) == 1, "the probe")
        #expect(open.count == 5)
        #expect(run(&machine, open: &open, from: &now, seconds: 1) == 5, "twice as many")
        #expect(run(&machine, open: &open, from: &now, seconds: 1) == 6, "the ceiling")
        #expect(open.count == ConnectionGrowth.ceiling)
        #expect(run(&machine, open: &open, from: &now, seconds: 2) == 0)
    }

    /// A named count never grows, however well more connections would pay.
    @Test func aNamedCountStays() throws {
        var machine = try machine(grows: false)
        var open = started(&machine)
        var now = 0.0
        #expect(run(&machine, open: &open, from: &now, seconds: 5) == 0)
        #expect(open.count == 4)
    }

    /// The host's allowance holds the step; raising it takes the step at once.
    @Test func aStepWaitsForTheHostsAllowance() throws {
        var machine = try machine(grows: true)
        _ = machine.setAllowance(4)
        var open = started(&machine)
        var now = 0.0
        #expect(run(&machine, open: &open, from: &now, seconds: 2) == 0, "no room: the probe waits")
        let released = requests(machine.setAllowance(ConnectionGrowth.ceiling))
        #expect(released.count == 1, "the probe, once there is room")
    }
}
