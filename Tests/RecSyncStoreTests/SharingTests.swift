import RecSyncModel
import RecSyncStore
import RecSyncTestSupport
import Testing

/// `RemoteStore.share` and `unshare`: a zone's participants, fetched, changed and saved.
@Suite struct SharingTests {
    let notes = Build.zone("notes")

    @Test(arguments: [StoreKind.memory, .git])
    func shareAddsOrUpdatesAParticipantAndUnshareRemovesIt(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let alice = try fixture.store(as: "alice")
        try await alice.createZones([notes])
        let shared = try await alice.share(notes, with: "bob", permission: .readOnly)
        #expect(shared.participants == [ShareParticipant(userRecordName: "bob", permission: .readOnly)])
        try await alice.share(notes, with: "bob", permission: .readWrite)
        try await alice.share(notes, with: "carol", permission: .readOnly)
        let bob = try fixture.store(as: "bob")
        let seen = try await bob.fetchAllRecordZones(scope: .shared)
        #expect(seen.map(\.zoneID) == [notes])
        #expect(seen.first?.permission(for: "bob") == .readWrite)

        let unshared = try await alice.unshare(notes, with: "bob")
        #expect(unshared.participants.map(\.userRecordName) == ["carol"])
        #expect(try await bob.fetchAllRecordZones(scope: .shared).isEmpty)
    }

    @Test func unsharingAUserTheZoneIsNotSharedWithIsAnError() async throws {
        let alice = try StoreFixture(.memory).store(as: "alice")
        try await alice.createZones([notes])
        let error = await caught { try await alice.unshare(notes, with: "bob") }
        #expect(error == .notFound("zone notes is not shared with bob") && error?.remedies == [.listZones])
    }

    @Test func sharingAZoneTheUserDoesNotOwnIsZoneNotFound() async throws {
        let fixture = try StoreFixture(.memory)
        try await fixture.store(as: "bob").createZones([Build.zone("notes", owner: "bob")])
        let alice = try fixture.store(as: "alice")
        #expect(
            await caught { try await alice.share(Build.zone("notes", owner: "bob"), with: "carol", permission: .readOnly) }
                == .zoneNotFound(Build.zone("notes", owner: "bob")))
        #expect(await caught { try await alice.share(notes, with: "carol", permission: .readOnly) } == .zoneNotFound(notes))
    }

    @Test func aBadUserNameIsRefusedAndNothingIsSaved() async throws {
        let alice = try StoreFixture(.memory).store(as: "alice")
        try await alice.createZones([notes])
        #expect(await caught { try await alice.share(notes, with: "", permission: .readOnly) } != nil)
        #expect(try await alice.fetchAllRecordZones(scope: .private).first?.participants == [])
    }
}
