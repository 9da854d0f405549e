import RecSyncModel
import RecSyncSystem

extension Workspace {
    /// Checks the workspace for what `recsync doctor` looks at: leftovers of a killed write
    /// batch, sidecars that are not plain files or do not decode, sidecars without a record
    /// file that are not pending deletions, record files
    /// whose sidecar is gone though the index says they were synced, index entries for files
    /// that are gone, change tokens that do not decode.
    ///
    /// With `fix`, repairs what is safe — batch leftovers (`removeStaleTemporaryFiles`) and
    /// stale index entries — and marks those findings fixed. Call it holding the workspace
    /// lock when fixing: no sync may be writing meanwhile.
    ///
    /// A sidecar naming a synced version with no record file is a deletion waiting for a push,
    /// not a problem.
    package func check(fix: Bool) throws(RecSyncError) -> [DoctorFinding] {
        var findings = try batchLeftovers()
        if fix && !findings.isEmpty {
            let kept: [String]
            do { kept = try removeStaleTemporaryFiles() } catch {
                // A list that cannot be read: said, and the other checks still run.
                findings.append(DoctorFinding(kind: .batchLeftover, path: relative(stateDir), detail: error.message, fixable: false))
                for zone in localZones().zones { findings += try checkZone(zone, fix: false) }
                return findings + unreadableTokens()
            }
            // Temp files beside their targets, which the registry-less cleanup does not visit:
            // named with recsync's marker, never anyone's data.
            for dir in temporaryFileDirectories() {
                for name in FileIO.list(dir) where name.hasPrefix(".") && name.contains(TempFile.marker) {
                    FileIO.unlinkIfPresent("\(dir)/\(name)")
                }
            }
            for kept in kept {
                findings.append(
                    DoctorFinding(
                        kind: .batchLeftover, path: relative(kept),
                        detail:
                            """
                            a file an interrupted write left that is not what it meant to write; kept aside here: look at it\
                             and copy back what you need
                            """,
                        fixable: false))
            }
            for i in findings.indices where findings[i].fixable { findings[i].fixed = true; findings[i].detail = "removed: " + findings[i].detail }
        }
        for zone in localZones().zones {
            findings += try checkZone(zone, fix: fix)
        }
        findings += unreadableTokens()
        return findings
    }

    /// The registries and temp files an interrupted write batch left.
    func batchLeftovers() throws(RecSyncError) -> [DoctorFinding] {
        var findings = leftoverRegistries.map { (registry: String) -> DoctorFinding in
            let info: FileInfo?
            do throws(RecSyncError) { info = try FileIO.info(registry) } catch {
                // The doctor reports what it cannot look at, and goes on.
                return DoctorFinding(kind: .batchLeftover, path: relative(registry), detail: error.message, fixable: false)
            }
            guard info?.isRegular ?? true else {
                return DoctorFinding(
                    kind: .batchLeftover, path: relative(registry),
                    detail: "named like the list of files a sync writes, but not a plain file recsync wrote; look at it and move it out of .recsync",
                    fixable: false)
            }
            return DoctorFinding(
                kind: .batchLeftover, path: relative(registry),
                detail: "the list of files a killed sync was writing; the files it names are taken back", fixable: true)
        }
        for journal in pageJournalsToRecover {
            findings.append(
                DoctorFinding(
                    kind: .batchLeftover, path: relative(journal),
                    detail: "the journal of a pull that was cut off; the files it names are finished from it", fixable: true))
        }
        for dir in temporaryFileDirectories() {
            for name in FileIO.list(dir) where name.hasPrefix(".") && name.contains(TempFile.marker) {
                findings.append(
                    DoctorFinding(kind: .batchLeftover, path: relative("\(dir)/\(name)"), detail: "a temp file a killed sync left", fixable: true))
            }
        }
        return findings
    }

    /// Where a write batch puts its temp files: the sync state and every zone directory.
    func temporaryFileDirectories() -> [String] {
        var dirs = ["\(stateDir)/tokens", "\(stateDir)/index", stateDir]
        for zone in localZones().zones { dirs += [zoneDirectory(zone), "\(zoneDirectory(zone))/.system"] }
        return dirs
    }

    /// Sidecars, record files and index entries of one zone that do not fit together.
    func checkZone(_ zone: ZoneID, fix: Bool) throws(RecSyncError) -> [DoctorFinding] {
        let dir = zoneDirectory(zone)
        let files = Set(try FileIO.entries(dir).names.filter { !$0.hasPrefix(".") })
        let sidecars = Set(try FileIO.entries("\(dir)/.system").names.filter { $0.hasSuffix(".json") && !$0.hasPrefix(".") })
        var index = ZoneIndex.load(self, zone: zone)
        var findings: [DoctorFinding] = []
        // Every sidecar is read: one that is not a plain file or does not decode stops status,
        // push, ls, get and export of its record (or zone). Only reported: it may be all that
        // says which version the record file was synced at, and a pull does not bring it back.
        for file in sidecars.sorted() {
            let path = "\(dir)/.system/\(file)"
            let hasFile = files.contains(file)
            let remedy =
                hasFile
                ? """
                restore it from a snapshot; or delete it, and the record file reads as new: a push then reports\
                 a conflict with the store's version, to settle as any other
                """
                : "restore it from a snapshot, or delete it and pull"
            if let info = try FileIO.info(path), !info.isRegular {
                findings.append(
                    DoctorFinding(
                        kind: .damagedSidecar, path: relative(path),
                        detail:
                            """
                            is a symbolic link, directory, FIFO or device, not a plain file (recsync does not follow it, and\
                             ls, get and export of the zone stop at it); \(remedy)
                            """,
                        fixable: false))
                continue
            }
            let bytes: [UInt8]?
            do { bytes = try readRecordFile(path) } catch {
                findings.append(DoctorFinding(kind: .damagedSidecar, path: relative(path), detail: "\(error.message); \(remedy)", fixable: false))
                continue
            }
            guard let bytes else { continue }
            let system: SystemFields
            do { system = try WorkspaceEncoding.decodeSystemFields(bytes) } catch {
                findings.append(
                    DoctorFinding(
                        kind: .damagedSidecar, path: relative(path), detail: "does not decode (\(error.message)); \(remedy)", fixable: false))
                continue
            }
            if !hasFile && system.changeTag == nil {
                findings.append(
                    DoctorFinding(
                        kind: .orphanSidecar, path: relative(path),
                        detail: "names a record that was never pushed and whose file is gone; nothing uses it: delete it", fixable: false))
            }
        }
        for file in files.subtracting(sidecars).sorted() where file.hasSuffix(".json") {
            guard index[file] != nil else { continue }
            findings.append(
                DoctorFinding(
                    kind: .missingSidecar, path: relative("\(dir)/\(file)"),
                    detail:
                        """
                        was synced, but its sidecar .system/\(file) is gone: it now reads as a new record and a push\
                         would conflict with the store's version. Pull, then settle the conflict
                        """,
                    fixable: false))
        }
        var removed = false
        for file in index.indexedFiles().sorted() where !files.contains(file) && !sidecars.contains(file) {
            var finding = DoctorFinding(
                kind: .staleIndexEntry, path: relative(indexPath(zone)),
                detail: "has an entry for \(relative("\(dir)/\(file)")), which is gone with its sidecar", fixable: true)
            if fix {
                index[file] = nil
                finding.fixed = true
                finding.detail = "removed an entry for \(relative("\(dir)/\(file)")), which is gone with its sidecar"
                removed = true
            }
            findings.append(finding)
        }
        if removed { try index.save() }
        return findings
    }

    /// Change token files that do not decode.
    func unreadableTokens() -> [DoctorFinding] {
        var paths = [scopeTokenPath(.private), scopeTokenPath(.shared)]
        paths += zonesWithTokens().map(zoneTokenPath)
        var findings: [DoctorFinding] = []
        for path in paths {
            do {
                guard let token = try loadToken(path) else { continue }
                _ = try ChangeTokenContent.decode(token)
            } catch {
                findings.append(
                    DoctorFinding(
                        kind: .unreadableToken, path: relative(path), detail: "\(error.message); delete it and the next pull fetches in full",
                        fixable: false))
            }
        }
        return findings
    }
}
