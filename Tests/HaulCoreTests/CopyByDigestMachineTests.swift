import HaulCore
import Testing

/// A download whose `.part` is a checked copy of a file with its digest (`LocalFiles.copied`)
/// is published without a request; one that may not be copied ignores the copy.
@Suite(.timeLimit(.minutes(1))) struct CopyByDigestMachineTests {
    typealias Machine = DownloadStateMachine
    static let digest = Checksum(algorithm: .sha256, hex: String(repeating: "ab", count: 32))

    func machine(checksum: Checksum? = Self.digest, range: ByteRange? = nil, timestamping: Bool = false) throws
        -> Machine
    {
        var request = try DownloadRequest(
            url: RemoteURL("http://h/file"), destination: .directory("/tmp"), range: range, checksum: checksum)
        request.timestamping = timestamping
        var record = DownloadRecord(id: DownloadID(rawValue: "1"), request: request, createdAt: 0)
        record.fileName = "file"
        return Machine(record: record, settings: .init())
    }

    static func sendsRequests(_ actions: [Machine.Action]) -> Bool {
        actions.contains { if case .request = $0 { true } else { false } }
    }

    @Test func aCopiedPartIsPublishedWithoutARequest() throws {
        var machine = try machine()
        #expect(machine.canCopy)
        let actions = machine.start(Machine.LocalFiles(partSize: 700, published: false, copied: 700), now: 0)
        #expect(
            actions == [
                .persist, .notify(.started(offset: 700)), .notify(.transferEnded(finishBytes: 0)), .publish(.part),
            ])
        #expect(machine.expectedLength == 700)
        #expect(machine.persistentRecord.completedLength == 700, "a crash now finds every byte claimed")
        #expect(machine.published(nil).last == .finish(.completed))
    }

    @Test func anEmptyFileCanBeACopy() throws {
        var machine = try machine()
        #expect(
            machine.start(Machine.LocalFiles(partSize: 0, published: false, copied: 0), now: 0).last == .publish(.part))
        #expect(machine.expectedLength == 0)
    }

    @Test func withoutADigestThatNamesContentACopyIsNotTaken() throws {
        let cases = [
            try machine(checksum: nil),
            try machine(checksum: Checksum(algorithm: .md5, hex: String(repeating: "0", count: 32))),
            try machine(range: ByteRange(start: 0, end: 99)), try machine(timestamping: true),
        ]
        for var machine in cases {
            #expect(!machine.canCopy)
            #expect(
                Self.sendsRequests(
                    machine.start(Machine.LocalFiles(partSize: 700, published: false, copied: 700), now: 0)))
        }
    }
}
