/// What a person reads when the server keeps their daemon out of the room and the daemon stays
/// up: what happened, in the room's and the person's own words, and how to get in.
///
/// Threading: pure.
public enum RefusalAdvice {
    /// One line for `refusal` in room `room`, joining as `name`.
    public static func line(for refusal: CowatchError, room: String, name: String, syncplay: Bool = false) -> String {
        if syncplay {
            // A Syncplay server's own words; its password is the only secret it knows.
            let check = refusal.code == .authFailed ? " — check the file given with --syncplay-password-file" : ""
            return "out of Syncplay room \(room): \(refusal.message)\(check); cowatch join tries again"
        }
        switch refusal.code {
        case .nameTaken:
            return "the name \(name) is taken in room \(room) (someone holds it now, or held it a moment ago): "
                + "restart with --name OTHER to join under another name; cowatch join tries this one again"
        case .authFailed:
            return "room \(room) has another secret than yours: it is someone else's room, or your secret is wrong — "
                + "choose another room name, or check the secret; cowatch join tries again"
        case .roomFull:
            return "room \(room) is full: cowatch join tries again once someone leaves"
        default:
            return "out of room \(room): \(refusal.message); cowatch join tries again"
        }
    }
}
