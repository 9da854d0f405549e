import RecSyncModel
import Testing

/// Runs `body`, expecting an error of CloudKit's code `invalidArguments` (`invalidArguments`,
/// `invalidName`, `invalidValue`, `malformed`) whose message contains every fragment.
func expectInvalid<T>(
    _ fragments: String..., sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> T
) {
    do {
        let value = try body()
        Issue.record("expected invalidArguments containing \(fragments), got \(value)", sourceLocation: sourceLocation)
    } catch {
        guard let error = error as? RecSyncError, error.code == .invalidArguments,
            !Set<RecSyncError.Kind>([.badToken, .fileSystem, .notAWorkspace, .workspaceLocked, .invalidFiles]).contains(error.kind)
        else {
            Issue.record("expected invalidArguments, got \(error)", sourceLocation: sourceLocation)
            return
        }
        let message = error.message
        for f in fragments where !message.contains(f) {
            Issue.record("message \"\(message)\" does not contain \"\(f)\"", sourceLocation: sourceLocation)
        }
    }
}

/// Runs `body`, expecting exactly `expected`.
func expectError<T>(_ expected: RecSyncError, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> T) {
    do {
        let value = try body()
        Issue.record("expected \(expected), got \(value)", sourceLocation: sourceLocation)
    } catch {
        #expect(error as? RecSyncError == expected, sourceLocation: sourceLocation)
    }
}

func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }
func text(_ b: [UInt8]) -> String { String(decoding: b, as: UTF8.self) }

let testZone: ZoneID = {
    do { return try ZoneID(zoneName: "Notes", ownerName: "alice") } catch { fatalError("\(error)") }
}()
