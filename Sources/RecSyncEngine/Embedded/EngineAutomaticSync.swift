import RecSyncModel
import RecSyncStore
import Synchronization

extension RecordSyncEngine {
    /// The engine, held weakly by the automatic sync's tasks: they end when the app lets the
    /// engine go.
    final class WeakEngine: Sendable {
        private struct Reference: Sendable {
            weak var engine: RecordSyncEngine?
        }
        private let reference: Mutex<Reference>

        init(_ engine: RecordSyncEngine) { reference = Mutex(Reference(engine: engine)) }

        var engine: RecordSyncEngine? { reference.withLock { $0.engine } }
    }

    /// Starts automatic sync, once: a fetch now, and one whenever the store signals a change.
    func startAutomaticSync() {
        guard options.automaticallySync, !automaticSyncStarted else { return }
        automaticSyncStarted = true
        let signal: StoreChangeSignal?
        do {
            signal = try store.changeSignal()
        } catch {
            // Fetches then run only when asked; the reason is kept for the app to see.
            automaticSyncError = error
            signal = nil
        }
        let weak = WeakEngine(self)
        // Detached: not a child of whatever task (a handler, say) created the engine.
        Task.detached {
            await weak.engine?.runScheduledFetch()
            guard let signal else { return }
            while weak.engine != nil {
                // Long waits are cut into slices by the signal, so a released engine is noticed.
                if await signal.wait(timeout: 30, shouldStop: { weak.engine == nil }) {
                    await weak.engine?.runScheduledFetch()
                }
            }
        }
    }

    /// Sends the pending changes `automaticSendDelay` after the last change was added, so that
    /// a burst goes as one send; `after` overrides the delay (a retry's pause).
    func scheduleSend(after delay: Double? = nil) {
        guard options.automaticallySync else { return }
        if firstUnsentRequest == nil { firstUnsentRequest = ContinuousClock.now }
        sendRequests += 1
        let request = sendRequests
        let pause = delay ?? options.automaticSendDelay
        let weak = WeakEngine(self)
        Task.detached {
            do { try await Task.sleep(for: .milliseconds(Int(pause * 1000))) } catch { return }
            await weak.engine?.runScheduledSend(request)
        }
    }

    private func runScheduledSend(_ request: Int) async {
        // A later change asked for its own send: that one goes, after its delay; but changes
        // added without a pause never hold the send back for more than a few delays.
        let waited = firstUnsentRequest.map { ContinuousClock.now - $0 } ?? .zero
        guard request == sendRequests || waited >= .milliseconds(Int(options.automaticSendDelay * 5000)) else { return }
        firstUnsentRequest = nil
        guard !state.pendingRecordZoneChanges.isEmpty || !state.pendingDatabaseChanges.isEmpty || state.hasPendingUntrackedChanges else { return }
        do {
            try await sendChanges(SendChangesOptions(), reason: .scheduled)
            automaticSyncError = nil
            automaticBackoff.reset()
        } catch {
            automaticSyncError = error
            // The store could not be reached even after the retries: the changes stay pending
            // and go later, after a growing pause.
            if Self.isTransient(error) { scheduleSend(after: automaticBackoff.next()) }
        }
    }

    private func runScheduledFetch() async {
        do {
            try await fetchChanges(FetchChangesOptions(), reason: .scheduled)
            automaticSyncError = nil
        } catch {
            // The next signal (or the app) fetches again; a store that cannot be reached makes
            // a network signal fire at once, so it is paced by the signal's own polling.
            automaticSyncError = error
        }
    }
}
