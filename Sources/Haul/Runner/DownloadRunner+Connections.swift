import HaulCore
import Logging
import NIOConcurrencyHelpers

/// Connection tasks: a request, then a body streamed chunk by chunk into the writer, where the
/// machine says (under its lock, no hop), behind the rate limits.
extension RunSession {
    func startRequest(_ connection: ConnectionID, _ plan: RequestPlan) {
        let (transport, post, url, gate) = (runner.transport, post, plan.url.absoluteString, runner.slotGate)
        runner.logger.trace(
            "request", metadata: ["connection": "\(connection)", "range": "\(plan.range?.description ?? "all")"])
        tasks[connection] = Task {
            do {
                let (head, body) = try await transport.send(plan)
                // A probe's response that needs a slot waits for it here, its body unread.
                if let gate { try await gate.pass(head) }
                post.yield(.response(connection, head, body))
            } catch {
                post.yield(.requestFailed(connection, AsyncHTTPTransport.classify(error, url: url)))
            }
        }
    }

    func startBody(_ connection: ConnectionID) async {
        guard let body = bodies.removeValue(forKey: connection) else {
            post.yield(.bodyFailed(connection, HaulError(.internal, "no body to read")))
            return
        }
        let writer: any ChunkWriter
        do {
            guard let opened = try await openWriter() else {
                throw HaulError(.internal, "no file name before the body")
            }
            writer = opened
        } catch {
            post.yield(.diskFailed(connection, HaulError.from(error, otherwise: .fileSystem)))
            return
        }
        let (machine, post, limiters, url) = (machine, post, limiters, record.request.url.absoluteString)
        let inOrder = record.request.sequential
        tasks[connection] = Task {
            do {
                while let chunk = try await body.next() {
                    let accepted = machine.withLockedValue { $0.received(connection, count: chunk.count) }
                    var cursor = accepted.skip
                    if accepted.compare > 0 {
                        let disk = try await writer.read(at: accepted.compareOffset, count: accepted.compare)
                        let same = chunk.withUnsafeBytes { bytes in
                            disk.count == accepted.compare
                                && bytes[cursor..<(cursor + accepted.compare)].elementsEqual(disk)
                        }
                        guard same else {
                            post.yield(.overlapMismatch(connection))
                            return
                        }
                        cursor += accepted.compare
                    }
                    if accepted.keep > 0 {
                        let slice =
                            cursor == 0 && accepted.keep == chunk.count
                            ? chunk : chunk.slice(cursor..<(cursor + accepted.keep))
                        do {
                            try await writer.write(slice, at: accepted.writeOffset, part: accepted.part)
                        } catch {
                            post.yield(.diskFailed(connection, HaulError.from(error, otherwise: .fileSystem)))
                            return
                        }
                    }
                    if accepted.noteDue { post.yield(.noteDue) }
                    if accepted.partComplete { break }
                    // Backpressure: the next read waits for the rate limits.
                    try await RateLimiter.acquire(chunk.count, from: limiters)
                }
                // Read in order: the piece's last batch goes to the disk now, not at the next
                // checkpoint, so whoever reads the `.part` sees its front move piece by piece.
                if inOrder {
                    do {
                        _ = try await writer.flush()
                    } catch {
                        post.yield(.diskFailed(connection, HaulError.from(error, otherwise: .fileSystem)))
                        return
                    }
                }
                post.yield(.bodyEnded(connection))
            } catch {
                post.yield(.bodyFailed(connection, AsyncHTTPTransport.classify(error, url: url)))
            }
        }
    }
}
