import Testing

@testable import HaulServer

/// The keys `tellStatus`/`tellActive` are asked for are read once per call into a bit set; each
/// key's name is aria2's.
@Suite(.timeLimit(.minutes(1))) struct Aria2StatusKeysTests {
    @Test func eachKeyHasItsOwnNameAndBit() {
        for key in Aria2Status.Keys.Key.allCases {
            #expect(key.name == String(describing: key))
            let one = Aria2Status.Keys([key.name])
            #expect(Aria2Status.Keys.Key.allCases.filter { one.wants($0) } == [key])
        }
        let all = Aria2Status.Keys(nil)
        #expect(Aria2Status.Keys.Key.allCases.allSatisfy { all.wants($0) })
        let none = Aria2Status.Keys(["no-such-key"])
        #expect(!Aria2Status.Keys.Key.allCases.contains { none.wants($0) })
    }
}
