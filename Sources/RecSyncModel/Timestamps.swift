/// ISO 8601 timestamps for milliseconds since the epoch, with hand-written civil-date arithmetic.
public enum Timestamps {
    static let msPerDay: Int64 = 86_400_000

    /// The first and last millisecond of the years 0001–9999, the range `iso8601` and
    /// `parseISO8601` agree on.
    public static let minMilliseconds: Int64 = -62_135_596_800_000  // 0001-01-01T00:00:00.000Z
    public static let maxMilliseconds: Int64 = 253_402_300_799_999  // 9999-12-31T23:59:59.999Z

    /// `2026-11-22T10:00:00.000Z`: UTC, always three fraction digits.
    ///
    /// Years outside 0001–9999 are written with a sign and as many digits as they need
    /// (`-0001-…`, `+10000-…`); `parseISO8601` does not read those back.
    public static func iso8601(_ ms: Int64) -> String {
        let (days, msOfDay) = floorDivide(ms, msPerDay)
        let (y, m, d) = civil(fromDays: days)
        let h = msOfDay / 3_600_000
        let mi = (msOfDay / 60_000) % 60
        let s = (msOfDay / 1000) % 60
        let f = msOfDay % 1000
        var out: [UInt8] = []
        out.reserveCapacity(24)
        if y < 0 {
            out.append(UInt8(ascii: "-"))
            append(&out, -y, width: 4)
        } else if y > 9999 {
            out.append(UInt8(ascii: "+"))
            append(&out, y, width: 4)
        } else {
            append(&out, y, width: 4)
        }
        out.append(UInt8(ascii: "-"))
        append(&out, m, width: 2)
        out.append(UInt8(ascii: "-"))
        append(&out, d, width: 2)
        out.append(UInt8(ascii: "T"))
        append(&out, h, width: 2)
        out.append(UInt8(ascii: ":"))
        append(&out, mi, width: 2)
        out.append(UInt8(ascii: ":"))
        append(&out, s, width: 2)
        out.append(UInt8(ascii: "."))
        append(&out, f, width: 3)
        out.append(UInt8(ascii: "Z"))
        return String(decoding: out, as: UTF8.self)
    }

    /// Reads `YYYY-MM-DDTHH:MM:SS[.fraction]` followed by `Z` or `±HH:MM`, years 0001–9999.
    ///
    /// The fraction may have 1–9 digits; digits past milliseconds are dropped (truncated).
    /// Returns nil for anything else, including impossible dates such as February 30.
    public static func parseISO8601(_ s: String) -> Int64? {
        let b = Array(s.utf8)
        var i = 0
        func digits(_ n: Int) -> Int64? {
            guard i + n <= b.count else { return nil }
            var v: Int64 = 0
            for k in i..<(i + n) {
                let c = b[k]
                guard c >= 0x30 && c <= 0x39 else { return nil }
                v = v * 10 + Int64(c - 0x30)
            }
            i += n
            return v
        }
        func expect(_ c: Character) -> Bool {
            guard i < b.count, b[i] == c.asciiValue! else { return false }
            i += 1
            return true
        }
        guard let y = digits(4), expect("-"), let m = digits(2), expect("-"), let d = digits(2), expect("T"),
            let h = digits(2), expect(":"), let mi = digits(2), expect(":"), let sec = digits(2)
        else { return nil }
        guard y >= 1, m >= 1, m <= 12, d >= 1, d <= daysInMonth(y, m), h <= 23, mi <= 59, sec <= 59 else { return nil }
        var fractionMs: Int64 = 0
        if i < b.count && b[i] == UInt8(ascii: ".") {
            i += 1
            var count = 0
            while i < b.count, b[i] >= 0x30, b[i] <= 0x39 {
                if count < 3 { fractionMs = fractionMs * 10 + Int64(b[i] - 0x30) }
                count += 1
                i += 1
            }
            guard count >= 1 && count <= 9 else { return nil }
            for _ in count..<max(count, 3) { fractionMs *= 10 }
        }
        var offsetMinutes: Int64 = 0
        guard i < b.count else { return nil }
        if b[i] == UInt8(ascii: "Z") {
            i += 1
        } else if b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") {
            let sign: Int64 = b[i] == UInt8(ascii: "-") ? -1 : 1
            i += 1
            guard let oh = digits(2), expect(":"), let om = digits(2), oh <= 23, om <= 59 else { return nil }
            offsetMinutes = sign * (oh * 60 + om)
        } else {
            return nil
        }
        guard i == b.count else { return nil }
        let days = daysFromCivil(y, m, d)
        let local = days * msPerDay + ((h * 60 + mi) * 60 + sec) * 1000 + fractionMs
        return local - offsetMinutes * 60_000
    }

    // MARK: Civil-date arithmetic (proleptic Gregorian calendar)

    static func isLeapYear(_ y: Int64) -> Bool {
        y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
    }

    static func daysInMonth(_ y: Int64, _ m: Int64) -> Int64 {
        switch m {
        case 2: isLeapYear(y) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 of a civil date.
    static func daysFromCivil(_ year: Int64, _ m: Int64, _ d: Int64) -> Int64 {
        let y = m <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// The civil date of a count of days since 1970-01-01.
    static func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        let y = yoe + era * 400 + (m <= 2 ? 1 : 0)
        return (y, m, d)
    }

    private static func floorDivide(_ a: Int64, _ b: Int64) -> (Int64, Int64) {
        var q = a / b
        var r = a % b
        if r < 0 {
            q -= 1
            r += b
        }
        return (q, r)
    }

    private static func append(_ out: inout [UInt8], _ value: Int64, width: Int) {
        var digits: [UInt8] = []
        var v = value.magnitude
        repeat {
            digits.append(UInt8(v % 10) + 0x30)
            v /= 10
        } while v > 0
        if digits.count < width { out.append(contentsOf: repeatElement(0x30, count: width - digits.count)) }
        out.append(contentsOf: digits.reversed())
    }
}
