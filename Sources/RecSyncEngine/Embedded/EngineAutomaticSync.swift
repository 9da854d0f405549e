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

        /// Sleeps `duration` without holding the engine, in short slices; false once the engine
        /// is gone (the caller then ends).
        func sleep(_ duration: Duration) async -> Bool {
            let end = ContinuousClock.now + duration
            while engine != nil {
                let left = end - ContinuousClock.now
                if left <= .zero { return true }
                do { try await Task.sleep(for: min(left, .milliseconds(250))) } catch { return false }
            }
            return false
        }
    }

    /// Starts automatic sync, once: a fetch now, and one whenever the store signals a change.
    ///
    /// After a failed fetch the engine pauses (1 s, doubling to a minute) before it looks
    /// again, so a network store's signal, which fires at once while the store cannot be
    /// reached, does not start fetch after fetch. A fetch the store could not serve for a
    /// passing reason (unreachable, busy) is then tried again without a signal, for about a
    /// minute: a local store signals only when it moves, and a memory store never does.
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
        Task.detached(executorPreference: executorPreference) {
            var failure = await weak.engine?.runScheduledFetch() ?? nil
            while weak.engine != nil {
                let tryAgain = failure?.tryAgain ?? false
                if let pause = failure?.pause {
                    guard await weak.sleep(.milliseconds(Int(pause * 1000))) else { return }
                    failure = nil
                }
                if !tryAgain {
                    guard let signal else { return }
                    // Long waits are cut into slices by the signal, so a released engine is noticed.
                    guard await signal.wait(timeout: 30, shouldStop: { weak.engine == nil }) else { continue }
                }
                failure = await weak.engine?.runScheduledFetch() ?? nil
            }
        }
    }

    /// Sends the pending changes `automaticSendDelay` after the last change was added, so that
    /// a burst goes as one send, but no later than five delays after the first change that is
    /// waiting; `after` sets the pause instead (a retry's). One task waits, however many
    /// changes are added meanwhile: it sleeps until the send is due and looks again.
    func scheduleSend(after delay: Double? = nil) {
        guard options.automaticallySync else { return }
        let now = ContinuousClock.now
        let first = firstUnsentRequest ?? now
        firstUnsentRequest = first
        let latest = first + .milliseconds(Int(options.automaticSendDelay * 5000))
        sendDue = delay.map { now + .milliseconds(Int($0 * 1000)) } ?? min(now + .milliseconds(Int(options.automaticSendDelay * 1000)), latest)
        guard !sendWaiting else { return }
        sendWaiting = true
        let weak = WeakEngine(self)
        Task.detached(executorPreference: executorPreference) {
            while let wait = await weak.engine?.timeUntilSendIsDue() {
                guard await weak.sleep(wait) else { return }
            }
            await weak.engine?.runScheduledSend()
        }
    }

    /// How long the waiting task still sleeps; nil once the send is due (it then runs it).
    private func timeUntilSendIsDue() -> Duration? {
        guard let due = sendDue else { return nil }
        let left = due - ContinuousClock.now
        return left > .zero ? left : nil
    }

    private func runScheduledSend() async {
        sendWaiting = false
        sendDue = nil
        firstUnsentRequest = nil
        guard !state.pendingRecordZoneChanges.isEmpty || !state.pendingDatabaseChanges.isEmpty || state.hasPendingUntrackedChanges else { return }
        do {
            try await sendChanges(SendChangesOptions(), reason: .scheduled)
            automaticSyncError = nil
            automaticBackoff.reset()
        } catch let error where error.partialFailure != nil {
            let refused = error.partialFailure ?? PartialFailure()
            // The send went; the delegate had each refusal in the sent events. Changes refused
            // for a passing reason (a busy store, a batch another change failed) are still
            // pending: they go again after a pause.
            automaticSyncError = nil
            if refused.records.values.contains(where: Self.staysPending) || refused.zones.values.contains(where: Self.staysPending) {
                scheduleSend(after: automaticBackoff.next())
            } else {
                automaticBackoff.reset()
            }
        } catch {
            automaticSyncError = error
            // The store could not be reached even after the retries: the changes stay pending
            // and go later, after a growing pause.
            if Self.isTransient(error) { scheduleSend(after: automaticBackoff.next()) }
        }
    }

    /// Runs a scheduled fetch. After a failure: the pause before the engine looks again, and
    /// whether it then fetches without waiting for a signal (a store that could not be
    /// reached or was busy, until the pauses reach their maximum).
    private func runScheduledFetch() async -> (pause: Double, tryAgain: Bool)? {
        do {
            try await fetchChanges(FetchChangesOptions(), reason: .scheduled)
            automaticSyncError = nil
            automaticFetchBackoff.reset()
            return nil
        } catch {
            automaticSyncError = error
            let tryAgain = Self.isTransient(error) && automaticFetchBackoff.base < automaticFetchBackoff.maximum
            return (automaticFetchBackoff.next(), tryAgain)
        }
    }
}
