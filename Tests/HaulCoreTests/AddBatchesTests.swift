import HaulCore
import Testing

/// How `haul get` cuts a long list into batches: at most the size each, a group never split,
/// and a group of no entry (every file in place) still in a batch, so its finish is written.
struct AddBatchesTests {
    static func ask(_ name: String, _ offsets: Range<Int>) -> DownloadQueue.GroupAsk {
        .init(
            DownloadGroup(id: GroupID(rawValue: name), name: name, directory: "/d", members: [], createdAt: 1),
            offsets: offsets)
    }

    static func shape(_ batches: [AddBatches.Batch]) -> [String] {
        batches.map { batch in
            "\(batch.range)" + batch.groups.map { " \($0.group.name)\($0.offsets)" }.joined()
        }
    }

    @Test func plainEntriesGoInBatchesOfTheSize() {
        #expect(Self.shape(AddBatches.plan(count: 7, groups: [], size: 3)) == ["0..<3", "3..<6", "6..<7"])
        #expect(AddBatches.plan(count: 0, groups: []).isEmpty)
    }

    @Test func aGroupIsNeverSplitAndItsOffsetsCountFromItsBatch() {
        // g straddles the first cut: the first batch ends before it; h begins its batch and is
        // larger than the size: it goes alone.
        let groups = [Self.ask("g", 2..<4), Self.ask("h", 4..<9)]
        #expect(
            Self.shape(AddBatches.plan(count: 10, groups: groups, size: 3)) == [
                "0..<2", "2..<4 g0..<2", "4..<9 h0..<5", "9..<10",
            ])
    }

    @Test func aGroupOfNoEntryGoesWithTheBatchItsPlaceFallsIn() {
        // Every file of e was in place: it has no entry, but its finish must be written.
        #expect(Self.shape(AddBatches.plan(count: 0, groups: [Self.ask("e", 0..<0)])) == ["0..<0 e0..<0"])
        #expect(
            Self.shape(AddBatches.plan(count: 4, groups: [Self.ask("e", 2..<2), Self.ask("f", 4..<4)], size: 2)) == [
                "0..<2", "2..<4 e0..<0 f2..<2",
            ])
    }
}
