import Foundation
import RecSyncEngine
import RecSyncModel
import RecSyncSystem
import RecSyncWorkspace
import Synchronization

/// The one progress line on a terminal's stderr, updated in place: a running total (out of the
/// total when the store said it: a clone, a full fetch), the rate and the time left.
///
/// `pulling: 6,000/20,000 records (30%), 2,950/s, 5s left`. Only a terminal ever sees it
/// (`Console.showsProgress`); anything else written to stdout or stderr first clears it, so
/// messages never mix with it, and it is redrawn at the next update (at most 10 times a second).
final class ProgressLine: Sendable {
    static let shared = ProgressLine()

    private struct State {
        var verb = "pulling"
        var started: UInt64 = 0
        var expected: [ZoneID: Int] = [:]
        var done = 0
        var sending: Int?
        var asking = false
        /// When counting began (the first total or record): the rate is measured from there,
        /// not from the wait for the store's answer.
        var counting: UInt64 = 0
        var lastDraw: UInt64 = 0
        var drawn = false
    }

    private let state = Mutex(State())

    /// Takes a sync event: counts records, and redraws when due.
    func record(_ event: SyncEvent, command: String) {
        let line: String? = state.withLock { s in
            let now = Self.now()
            if s.started == 0 {
                s.started = now
                s.verb = Self.verb(command)
            }
            switch event {
            case .recordsExpected(let zone, let count):
                s.expected[zone, default: 0] += count
                if s.counting == 0 { s.counting = now }
            case .recordsWritten(_, let n), .recordsDeleted(_, let n):
                s.done += n
                if s.counting == 0 { s.counting = now }
            case .sending(let n): s.sending = n
            case .askingStore: s.asking = true
            default: return nil
            }
            // The first update, a new total and the update that reaches it draw at once; the
            // rest at most every 100 ms.
            let total = s.expected.values.reduce(0, +)
            let complete = total > 0 && s.done == total
            var newTotal = false
            if case .recordsExpected = event { newTotal = true }
            guard !s.drawn || complete || newTotal || now &- s.lastDraw >= 100_000_000 else { return nil }
            s.lastDraw = now
            s.drawn = true
            return Self.render(s, now: now)
        }
        if let line { Self.writeStderr("\r\u{1B}[K" + line) }
    }

    /// Clears the line if it is shown (before any other output, and when the command ends).
    func clear() {
        let drawn = state.withLock { s in
            defer { s.drawn = false }
            return s.drawn
        }
        if drawn { Self.writeStderr("\r\u{1B}[K") }
    }

    private static func render(_ s: State, now: UInt64) -> String {
        if let n = s.sending { return "\(s.verb): sending \(grouped(n)) \(n == 1 ? "record" : "records")" }
        if s.asking && s.expected.isEmpty && s.done == 0 { return "\(s.verb): asking the store what changed…" }
        let seconds = Double(now &- (s.counting == 0 ? s.started : s.counting)) / 1e9
        let total = s.expected.values.reduce(0, +)
        var text = "\(s.verb): \(grouped(s.done))"
        if total >= s.done && total > 0 {
            text += "/\(grouped(total)) records (\(s.done * 100 / total)%)"
        } else {
            text += s.done == 1 ? " record" : " records"
        }
        if seconds >= 0.5 && s.done > 0 {
            let rate = Double(s.done) / seconds
            text += ", \(grouped(Int(rate)))/s"
            if total > s.done && rate > 0 { text += ", \(duration(Double(total - s.done) / rate)) left" }
        }
        return text
    }

    static func verb(_ command: String) -> String {
        switch command {
        case "clone": "cloning"
        case "push": "pushing"
        default: "pulling"
        }
    }

    /// 20000 → "20,000".
    static func grouped(_ n: Int) -> String {
        let digits = Array(String(n))
        var out = ""
        for (i, d) in digits.enumerated() {
            if i > 0 && (digits.count - i) % 3 == 0 { out.append(",") }
            out.append(d)
        }
        return out
    }

    /// 5 → "5s", 75 → "1m15s".
    static func duration(_ seconds: Double) -> String {
        let s = Int(seconds.rounded(.up))
        return s < 60 ? "\(s)s" : "\(s / 60)m\(String(format: "%02d", s % 60))s"
    }

    private static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    private static func writeStderr(_ text: String) {
        StandardStream.error.write(text)
    }
}
