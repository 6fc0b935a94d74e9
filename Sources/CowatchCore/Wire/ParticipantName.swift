/// Participant names: what people are called in notices, and the control socket's file name.
public enum ParticipantName {
    public static let maxLength = 32

    /// Checks a name: 1–32 characters of letters, digits, `.`, `_`, `-`, not starting with `.`.
    /// Throws `invalid-configuration`.
    public static func validate(_ name: String) throws(CowatchError) -> String {
        guard !name.isEmpty, name.count <= maxLength, name.first != ".",
            name.unicodeScalars.allSatisfy({ $0.isASCII && (isAlnum($0) || "._-".unicodeScalars.contains($0)) })
        else {
            throw CowatchError(
                .invalidConfiguration,
                "name \"\(name.prefix(40))\" must be 1–\(maxLength) letters, digits, '.', '_' or '-', not starting with '.'")
        }
        return name
    }

    private static func isAlnum(_ scalar: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
    }
}

/// Room names: the same characters as participant names, up to 64 of them.
public enum RoomName {
    public static let maxLength = 64

    public static func isValid(_ value: String) -> Bool {
        !value.isEmpty && value.count <= maxLength && value.first != "."
            && value.unicodeScalars.allSatisfy {
                $0.isASCII && (("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0)
                    || "._-".unicodeScalars.contains($0))
            }
    }
}
