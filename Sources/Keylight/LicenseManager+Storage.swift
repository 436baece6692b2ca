/// The kept state: reading it at launch (or when the device unlocks), writing it in order off
/// the main actor, the server-time reference, and this device's per-product hash.
extension LicenseManager {
    /// Reads what the store keeps, off the main actor (one read at a time; a second caller waits
    /// for the first). False when the store cannot be read yet (the Keychain or a protected file
    /// before the first unlock): nothing is resolved, written or sent until a later read succeeds —
    /// an empty state written then would erase the license — and the read is retried on a timer.
    func loadStoredState() async -> Bool {
        if let loading { return await loading.value }
        let task = Task { await self.readStore() }
        loading = task
        let readable = await task.value
        loading = nil
        return readable
    }

    private func readStore() async -> Bool {
        // What this manager wrote last is on the store before it is read back.
        await flushWrites()
        let result: Result<(state: PersistedState, isCompact: Bool), any Error>
        let io = io
        do { result = .success(try await StoreIO.offMain { try io.load() }) } catch { result = .failure(error) }
        switch result {
        case .success(let loaded):
            stored = loaded.state
            storeLocked = false
            self.loaded = true
            // An earlier SDK's JSON: read once, kept in the compact layout from now on.
            if !loaded.isCompact { persist() }
            return true
        case .failure(let error as KeylightError) where error.code == KeylightError.storageLocked.code:
            lastError = error
            storeLocked = true
            reason = "waiting for the device to be unlocked"
            let delay = configuration.refreshPolicy.lockedStoreRetry
            scheduledRefresh?.cancel()
            scheduledRefresh = Task { [weak self] in
                try? await Task.sleep(nanoseconds: UInt64(delay * 1_000_000_000))
                guard !Task.isCancelled else { return }
                await self?.checkOnLaunch()
            }
            return false
        case .failure(let error):
            // Unreadable (corrupt) state: start again from nothing rather than never launch.
            lastError = (error as? KeylightError) ?? .storage("\(error)")
            stored = PersistedState()
            storeLocked = false
            self.loaded = true
            return true
        }
    }

    /// True once the store has been read; reads it first if it has not been (a call made before
    /// ``checkOnLaunch()`` must not write an empty state over a license).
    func ensureLoaded() async -> Bool {
        if isPreview { return false }
        if loaded && !storeLocked { return true }
        guard await loadStoredState() else { return false }
        if !isResolved { resolve() }
        return true
    }

    /// Hands the state as it is now to the store, off the main actor, after every earlier write.
    func persist() {
        guard !storeLocked, !isPreview else { return }
        writeSequence += 1
        let sequence = writeSequence, snapshot = stored, io = io, previous = lastWrite
        lastWrite = Task { [weak self] in
            await previous?.value
            do {
                try await StoreIO.offMain { try io.save(snapshot, sequence: sequence) }
            } catch {
                self?.lastError = (error as? KeylightError) ?? .storage("\(error)")
            }
        }
    }

    /// Writes the state before returning, on the caller's thread: for the synchronous offline-file
    /// calls, whose effect (a license forgotten once its deactivation proof exists) must be on the
    /// store even if the app quits right after. Ordered with ``persist()``'s writes by their numbers.
    func persistNow() {
        guard !storeLocked, !isPreview else { return }
        writeSequence += 1
        do {
            try io.save(stored, sequence: writeSequence)
        } catch {
            lastError = (error as? KeylightError) ?? .storage("\(error)")
        }
    }

    /// Waits until every state handed to ``persist()`` so far is on the store.
    func flushWrites() async {
        await lastWrite?.value
    }

    /// Records the server's own time from a verified response (a lease's or config's `issuedAt`)
    /// as the clock-rollback reference (seed 000). Only server times enter it, so a device clock
    /// that ran ahead and was corrected never poisons it; the reference written by older SDKs (local
    /// time) is no longer read, and the first verified answer sets the new one.
    func sawServer(serverTime: Int64) {
        stored.serverSeen = max(stored.serverSeen ?? serverTime, serverTime)
    }

    /// This device's per-product hash, read (or made, on first use) off the main actor. A store
    /// that cannot be read is an error, never an empty hash: the server would take "" for another machine.
    func machineHash() async throws -> String {
        let io = io, productKey = "\(configuration.tenantId)/\(configuration.productId)"
        let hash = try await StoreIO.offMain { try io.machineHash(productKey: productKey) }
        guard !hash.isEmpty else { throw KeylightError.storage("no device identity") }
        return hash
    }

    /// The same, read here: for the offline-file calls, which are synchronous.
    func machineHashNow() throws -> String {
        let hash = try io.machineHash(productKey: "\(configuration.tenantId)/\(configuration.productId)")
        guard !hash.isEmpty else { throw KeylightError.storage("no device identity") }
        return hash
    }
}
