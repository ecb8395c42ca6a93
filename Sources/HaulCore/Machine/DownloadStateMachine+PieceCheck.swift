/// A file with piece digests (a Metalink's `<pieces>`): the verification hashes every piece,
/// and a piece that fails is fetched again, not the whole file. The machine remembers which
/// sources wrote each piece in this run, so a piece written by one mirror alone convicts it:
/// that mirror is dropped and the piece comes from another.
extension DownloadStateMachine {
    /// How many times the failed pieces are fetched again before the download fails.
    public static let pieceRounds = 3

    /// Notes that source `source` wrote `count` bytes at file offset `offset` (the hot path:
    /// only a download with piece digests and several sources keeps this).
    mutating func notePieceWriter(source: Int, offset: Int64, count: Int64) {
        guard let length = pieceLength, count > 0 else { return }
        let bit = UInt64(1) << UInt64(source)
        for piece in PieceHashes.pieces(length: length, from: offset, count: count) {
            pieceWriters[piece, default: 0] |= bit
        }
    }

    /// The verification found pieces whose digests fail (indices into the piece list).
    mutating func refetch(_ bad: [Int], stop: DownloadStatus?) -> [Action] {
        guard let hashes = record.request.pieceHashes, let total = expectedLength else {
            return fail(HaulError(.internal, "a piece check without piece digests"))
        }
        pieceChecks += 1
        var actions: [Action] = []
        // A piece one source wrote alone convicts that source.
        for piece in bad {
            guard let writer = SourceSet.soleWriter(pieceWriters[piece] ?? 0), sources.count > 1,
                !sources[writer].isDropped
            else { continue }
            let reason =
                """
                sent bytes \(hashes.range(of: piece, fileLength: total)) that fail their \
                \(hashes.algorithm.rawValue) piece digest
                """
            sources.drop(writer, reason: reason)
            actions.append(.notify(.sourceDropped(url: sources[writer].url.absoluteString, reason: reason)))
        }
        for piece in bad {
            reopen(hashes.range(of: piece, fileLength: total), base: fileBase)
            pieceWriters[piece] = nil
        }
        let shown = bad.prefix(5).map { "\($0)" }.joined(separator: ", ") + (bad.count > 5 ? ", ..." : "")
        let what =
            "\(bad.count) piece\(bad.count == 1 ? "" : "s") (\(shown)) of \(hashes.length) bytes failed "
            + "\(hashes.algorithm.rawValue) digests"
        // The bad bytes are no longer claimed: a later run fetches only them.
        actions.append(.persist)
        if stop == .removed { return actions + stopNow(.removed) }
        guard pieceChecks <= Self.pieceRounds else {
            return actions
                + fail(
                    HaulError(
                        .checksumMismatch,
                        "\(record.request.url): \(what) \(Self.pieceRounds + 1) times; "
                            + "the file is not published"))
        }
        guard sources.sources.contains(where: { !$0.isDropped }) else {
            return actions
                + fail(HaulError(.badResponse, "no source serves one consistent file: \(sources.dropReasons)"))
        }
        actions.append(.notify(.piecesRefetched(reason: what)))
        if let stop { return actions + stopNow(stop) }
        state = .downloading
        return actions + openFirstConnection()
    }

    /// Marks the bytes of `range` (file offsets) as not written: parts across it are split,
    /// and what lies inside becomes parts of its own with nothing appended.
    mutating func reopen(_ range: ByteRange, base: Int64) {
        guard let last = range.end.map({ $0 + base }) else { return }
        let first = range.start + base
        var result: [Part] = []
        for part in parts {
            guard let end = part.end, part.start <= last, end >= first else {
                result.append(part)
                continue
            }
            if part.start < first {
                let length = first - part.start
                result.append(
                    Part(
                        start: part.start, end: first - 1, appended: min(part.appended, length),
                        durable: min(part.durable, length)))
            }
            result.append(Part(start: max(part.start, first), end: min(end, last), appended: 0, durable: 0))
            if end > last {
                // The part's bytes are a prefix of it: what of that prefix lies past `last`.
                let skipped = last + 1 - part.start
                result.append(
                    Part(
                        start: last + 1, end: end, appended: max(0, part.appended - skipped),
                        durable: max(0, part.durable - skipped)))
            }
        }
        parts = result
    }
}

extension SourceSet {
    /// The one source in a set of writers (bit `i` for source `i`), nil for none or several.
    public static func soleWriter(_ writers: UInt64) -> Int? {
        writers != 0 && writers & (writers - 1) == 0 ? writers.trailingZeroBitCount : nil
    }
}
