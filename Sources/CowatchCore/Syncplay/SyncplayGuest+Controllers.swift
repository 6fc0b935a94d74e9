/// Cowatch's roles as Syncplay's controllers (see `SyncplayGuest`). Syncplay calls the people who
/// may control a managed room controllers ("room operators" in its English UI); in a Cowatch room
/// the owner names operators (`cowatch op NAME`), and owners and operators alone control playback
/// in a managed room. So a Syncplay client is shown:
/// - owners and operators as controllers in the `List`;
/// - someone made an operator (or joining as an owner or operator) with `controllerAuth`'s
///   success, as Syncplay's server announces a controller to the room;
/// - someone made a member again with the whole `List` again (Syncplay has no word for losing
///   control; its client rebuilds its list from a `List`), and the owner's act in its chat.
/// A client's own claim (`controllerAuth` with a room and a password) is refused the same way
/// whatever it holds (no password oracle), with a line saying how control is given here.
extension SyncplayGuest {
    /// The client claimed control with a password.
    mutating func controllerClaim() -> [Action] {
        guard let name, let room else { return [] }
        let refusal = Action.syncplay([.set([.controllerAuth(SyncplayControllerAuth(room: room, user: name, success: false))])])
        let how = managedRoom
            ? "In this Cowatch room only its owner and the operators the owner names control playback; no password gives control. Ask the owner to make you an operator (cowatch op \(name))."
            : "Everyone in this Cowatch room controls playback already. Its owner names operators (cowatch op \(name)); no password makes one."
        return [refusal] + Self.cowatchSays(how)
    }

    /// The room's owner made `others` operators (`op`) or members again (`deop`).
    mutating func roleChanged(_ notice: Notice) -> [Action] {
        let role: Role = notice.action == .op ? .operator : .member
        for name in notice.others ?? [] {
            // The owner stays the owner (the room refuses to change it).
            if let index = participants.firstIndex(where: { $0.name == name }), participants[index].role != .owner {
                participants[index].role = role
            }
        }
        guard greeted else { return [] }
        return Self.cowatchSays(notice.text) + syncControllers()
    }

    /// Tells the client what changed in who controls the room since it was last told: a `List`
    /// when someone present lost control, else a `controllerAuth` success for each new controller.
    mutating func syncControllers() -> [Action] {
        guard greeted, let room else { return [] }
        let present = Set(participants.map(\.name))
        let controllers = Set(participants.filter(\.role.isPrivileged).map(\.name))
        if !toldControllers.intersection(present).subtracting(controllers).isEmpty { return listLines() }
        var actions: [Action] = []
        for person in participants where person.role.isPrivileged && !toldControllers.contains(person.name) {
            toldControllers.insert(person.name)
            actions.append(.syncplay([.set([.controllerAuth(SyncplayControllerAuth(room: room, user: person.name, success: true))])]))
        }
        return actions
    }

    /// The room's user list for the client; it then knows the room's controllers as they are.
    mutating func listLines() -> [Action] {
        let users = userList()
        toldControllers = Set(users.filter(\.controller).map(\.username))
        return [.syncplay([.list(users)])]
    }
}
