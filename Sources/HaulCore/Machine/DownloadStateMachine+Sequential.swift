/// A download read in order (`--sequential`): the first piece (the first request, as for any
/// download) and the last one first, then each connection in a window of one piece (`-k`) just
/// past the bytes already asked for, never ending more than `SequentialPlanner.lead` past the
/// first missing byte. The arithmetic is `SequentialPlanner`'s; this applies it to the parts.
///
/// A window is a part of its own: cut from the front of the bytes nobody has asked for yet, so
/// a connection owns at most a window, and the rest waits unowned. A connection that finds no
/// window within the lead helps the part that would finish last (work stealing, as any download)
/// or goes; one that finishes a window opens those that went again. Finished parts next to each
/// other merge once durable, so a long file keeps a short list of parts.
extension DownloadStateMachine {
    /// Whether this download reads in order.
    var readsInOrder: Bool { record.request.sequential }

    /// The window of a download read in order: `-k`.
    var sequentialPiece: Int64 { max(1, settings.minimumSegment) }

    /// The first byte the file still lacks (nil: none).
    var firstMissing: Int64? { parts.first(where: { !$0.isComplete })?.next }

    /// `openMoreConnections` for a download read in order: the tail first, if nobody has asked
    /// for it, then windows while the limit and the lead allow.
    mutating func openConnectionsInOrder() -> [Action] {
        var actions: [Action] = []
        if connections.count < limit, let index = cutTail() {
            actions += request(newConnection(part: index, isExtra: true))
        }
        while connections.count < limit, let index = cutNextWindow(boundless: false) {
            actions += request(newConnection(part: index, isExtra: true))
        }
        return actions
    }

    /// `partDone` for a download read in order: the next window, or else a steal; nil when the
    /// connection has nothing to do within the lead.
    mutating func nextWorkInOrder(for id: ConnectionID) -> [Action]? {
        if let index = cutNextWindow(boundless: false) {
            assign(id, to: index)
            // A window done may bring the lead forward for connections that went for want of one.
            return request(id) + openConnectionsInOrder()
        }
        if let stolen = steal(for: id) { return request(stolen) }
        return nil
    }

    /// The lowest byte no connection works toward, and the part it lies in. A part whose owner
    /// waits to ask again stays its owner's; a part of unknown end has no windows.
    func lowestUnrequested() -> (index: Int, start: Int64)? {
        for index in parts.indices where !parts[index].isComplete {
            guard let end = parts[index].end else { return nil }
            if let owner = parts[index].owner, let connection = connections[owner], !connection.isWorking { continue }
            let start = unrequestedStart(index)
            if start <= end { return (index, start) }
        }
        return nil
    }

    /// Cuts the next window into a part of its own and returns its index; nil when every byte is
    /// asked for, or (unless `boundless`) when the window would end past the lead.
    mutating func cutNextWindow(boundless: Bool) -> Int? {
        guard let (index, start) = lowestUnrequested(), let end = parts[index].end, let firstMissing else {
            return nil
        }
        let windowEnd = SequentialPlanner.windowEnd(start: start, end: end, piece: sequentialPiece)
        guard
            boundless
                || SequentialPlanner.mayTake(
                    windowEnd: windowEnd, firstMissing: firstMissing, connections: limit, piece: sequentialPiece)
        else { return nil }
        return cut(index, at: start, through: windowEnd)
    }

    /// Cuts the last piece into a part of its own while nobody has asked for it or written it;
    /// returns its index.
    mutating func cutTail() -> Int? {
        guard let first = parts.first?.start, let last = parts.last?.end,
            let tail = SequentialPlanner.tailStart(first: first, last: last, piece: sequentialPiece),
            let index = parts.lastIndex(where: { $0.start <= tail }),
            let end = parts[index].end, tail <= end, parts[index].next <= tail
        else { return nil }
        if let owner = parts[index].owner, let connection = connections[owner] {
            // Its owner asks for bytes before the tail only.
            guard connection.isWorking, unrequestedStart(index) <= tail else { return nil }
        }
        // Nobody has asked for it (the guards above): the cut is at the tail itself.
        return cut(index, at: tail, through: end)
    }

    /// Makes `start...through` of part `index` (at or past what its owner asked for) a part of
    /// its own, nobody's, and returns its index. The part keeps what comes before; what comes
    /// after is a part nobody owns.
    mutating func cut(_ index: Int, at start: Int64, through windowEnd: Int64) -> Int {
        guard let end = parts[index].end else { return index }
        var window = index
        if start > parts[index].next || (start > parts[index].start && parts[index].owner != nil) {
            parts[index].end = start - 1
            window = index + 1
            parts.insert(Part(start: start, end: windowEnd, appended: 0, durable: 0, owner: nil), at: window)
        } else {
            // The part's own next byte: the part is the window (its owner, if any, is gone).
            parts[index].end = windowEnd
            parts[index].owner = nil
        }
        if windowEnd < end {
            parts.insert(Part(start: windowEnd + 1, end: end, appended: 0, durable: 0, owner: nil), at: window + 1)
        }
        return window
    }

    /// Merges finished parts next to each other once every byte of both is durable: a file read
    /// in order is cut into a window per piece, and its stored layout stays short.
    mutating func mergeFinishedParts() {
        guard readsInOrder, parts.count > 1 else { return }
        var merged: [Part] = [parts[0]]
        for part in parts.dropFirst() {
            let previous = merged[merged.count - 1]
            if let previousEnd = previous.end, let end = part.end, previousEnd + 1 == part.start,
                previous.owner == nil, part.owner == nil,
                previous.durable == previousEnd - previous.start + 1, part.durable == end - part.start + 1
            {
                merged[merged.count - 1].end = end
                merged[merged.count - 1].appended += part.appended
                merged[merged.count - 1].durable += part.durable
            } else {
                merged.append(part)
            }
        }
        parts = merged
    }
}
