import RecSyncModel
import RecSyncTestSupport
import Testing

@Suite struct TimestampsTests {
    @Test func formatsExamples() {
        #expect(Timestamps.iso8601(0) == "1970-01-01T00:00:00.000Z")
        #expect(Timestamps.iso8601(-1) == "1969-12-31T23:59:59.999Z")
        #expect(Timestamps.iso8601(-1000) == "1969-12-31T23:59:59.000Z")
        #expect(Timestamps.iso8601(1_795_341_600_000) == "2026-11-22T10:00:00.000Z")
        #expect(Timestamps.iso8601(951_782_400_000) == "2000-02-29T00:00:00.000Z")
        #expect(Timestamps.iso8601(-11_670_998_400_000) == "1600-02-29T00:00:00.000Z")
        #expect(Timestamps.iso8601(-2_203_977_600_000 + 86_400_000) == "1900-03-01T00:00:00.000Z")
        #expect(Timestamps.iso8601(1_709_210_096_789) == "2024-02-29T12:34:56.789Z")
        #expect(Timestamps.iso8601(253_402_300_799_999) == "9999-12-31T23:59:59.999Z")
        #expect(Timestamps.iso8601(-62_135_596_800_000) == "0001-01-01T00:00:00.000Z")
        #expect(Timestamps.iso8601(Timestamps.maxMilliseconds + 1) == "+10000-01-01T00:00:00.000Z")
        #expect(Timestamps.iso8601(Timestamps.minMilliseconds - 1) == "0000-12-31T23:59:59.999Z")
        // Extreme values do not trap.
        _ = Timestamps.iso8601(.min)
        _ = Timestamps.iso8601(.max)
    }

    @Test func parsesExamples() {
        #expect(Timestamps.parseISO8601("1970-01-01T00:00:00.000Z") == 0)
        #expect(Timestamps.parseISO8601("1970-01-01T00:00:00Z") == 0)
        #expect(Timestamps.parseISO8601("1969-12-31T23:59:59.999Z") == -1)
        #expect(Timestamps.parseISO8601("2000-02-29T00:00:00.000Z") == 951_782_400_000)
        #expect(Timestamps.parseISO8601("9999-12-31T23:59:59.999Z") == Timestamps.maxMilliseconds)
        #expect(Timestamps.parseISO8601("0001-01-01T00:00:00.000Z") == Timestamps.minMilliseconds)
        #expect(Timestamps.parseISO8601("2026-11-22T10:00:00.5Z") == 1_795_341_600_500)
        #expect(Timestamps.parseISO8601("2026-11-22T10:00:00.12Z") == 1_795_341_600_120)
        #expect(Timestamps.parseISO8601("2026-11-22T10:00:00.123456789Z") == 1_795_341_600_123)
        #expect(Timestamps.parseISO8601("1969-12-31T23:59:59.9999Z") == -1)
        #expect(Timestamps.parseISO8601("2026-11-22T11:00:00.000+01:00") == 1_795_341_600_000)
        #expect(Timestamps.parseISO8601("2026-11-22T15:30:00+05:30") == 1_795_341_600_000)
        #expect(Timestamps.parseISO8601("2026-11-22T02:00:00.000-08:00") == 1_795_341_600_000)
        #expect(Timestamps.parseISO8601("2026-11-22T10:00:00.000-00:00") == 1_795_341_600_000)
    }

    @Test func rejectsMalformedOrImpossible() {
        for s in [
            "", "2026-11-22", "2026-11-22T10:00:00", "2026-11-22 10:00:00Z", "2026-11-22t10:00:00Z", "2026-11-22T10:00:00z",
            "1900-02-29T00:00:00Z", "2023-02-29T00:00:00Z", "2026-04-31T00:00:00Z", "2026-13-01T00:00:00Z",
            "2026-00-01T00:00:00Z", "2026-01-00T00:00:00Z", "2026-01-01T24:00:00Z", "2026-01-01T00:60:00Z",
            "2026-01-01T00:00:60Z", "0000-01-01T00:00:00Z", "10000-01-01T00:00:00Z", "-0001-01-01T00:00:00Z",
            "2026-11-22T10:00:00.Z", "2026-11-22T10:00:00.1234567890Z", "2026-11-22T10:00:00+0100",
            "2026-11-22T10:00:00+24:00", "2026-11-22T10:00:00+01:60", "2026-11-22T10:00:00Z ", " 2026-11-22T10:00:00Z",
            "2026-1-22T10:00:00Z", "２０２６-11-22T10:00:00Z", "2026-11-22T10:00:00.000Zjunk",
        ] {
            #expect(Timestamps.parseISO8601(s) == nil, "\(s)")
        }
    }

    @Test func roundTripsEveryMillisecondInRange() {
        var g = SeededRandom(seed: 7)
        var samples: [Int64] = [Timestamps.minMilliseconds, Timestamps.maxMilliseconds, 0, -1, 1, 951_782_400_000]
        for _ in 0..<5000 {
            samples.append(Int64.random(in: Timestamps.minMilliseconds...Timestamps.maxMilliseconds, using: &g))
        }
        for ms in samples {
            let s = Timestamps.iso8601(ms)
            #expect(s.utf8.count == 24, "\(s)")
            #expect(Timestamps.parseISO8601(s) == ms, "\(s)")
        }
    }

    @Test func everyDayOfSomeYearsRoundTrips() {
        // Walk day by day across leap-year edge cases and check the calendar is consecutive.
        for start in [Int64(-62_135_596_800_000), -2_208_988_800_000, 946_684_800_000, 253_339_228_800_000] {
            var previous = Timestamps.iso8601(start)
            for d in 1..<730 {
                let ms = start + Int64(d) * 86_400_000
                let s = Timestamps.iso8601(ms)
                #expect(s > previous)
                #expect(Timestamps.parseISO8601(s) == ms)
                previous = s
            }
        }
    }
}
