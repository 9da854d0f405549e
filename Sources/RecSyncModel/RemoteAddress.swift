/// The text of a store's address, whatever transport it names.
public enum RemoteAddress {
    /// `string` without the password of a `scheme://user:password@host/…` address (the user
    /// name stays): the form a workspace may keep on disk or print. Anything else, even an
    /// address recsync cannot parse, comes back unchanged apart from that password.
    public static func withoutPassword(_ string: String) -> String {
        guard let schemeEnd = string.range(of: "://") else { return string }
        let rest = string[schemeEnd.upperBound...]
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        guard let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") else { return string }
        return String(string[..<colon]) + String(string[at...])
    }
}
