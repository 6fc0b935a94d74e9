import Crypto

/// Syncplay's server password as its `Hello` carries it: the unsalted MD5 hex of the password.
///
/// That is Syncplay's own scheme, and weak: anyone who reads the line (plaintext servers, or
/// the server itself) can try passwords against it offline, and it can be replayed to the same
/// server. Cowatch sends it only to the server the user named, and only from a file.
public enum SyncplayPassword {
    /// The `password` field for `password` (its UTF-8 bytes).
    public static func hash(_ password: String) -> String {
        Hex.encode(Insecure.MD5.hash(data: Array(password.utf8)))
    }
}
