import ArgumentParser
import CowatchCore
import Foundation

/// `cowatch manage`: Syncplay's "Create managed room", for a daemon in a Syncplay room.
struct Manage: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "In a Syncplay room: make it a managed room you control; prints its name (others join it) and its password.",
        discussion: """
            Only controllers (whoever has the password) pause, play, seek and change the playlist in a \
            managed Syncplay room. You move to the new room (+NAME:HASH) and control it; others join it by \
            that name. Keep the password: with cowatchd --syncplay-room-password-file it makes a daemon a \
            controller, and a Syncplay user types +NAME:HASH:PASSWORD as the room. Run again, it says the \
            same room. A Cowatch room answers unsupported: it is managed or not from its start.
            """)
    @OptionGroup var connection: ConnectionOptions

    func run() throws {
        let data = try connection.send(.manage, timeout: 30)
        if connection.json { return printJSON(data) }
        let reply = try connection.read(ManagedRoomReply.self, from: data)
        print(reply.created ? "made the managed Syncplay room \(reply.room); you control it" : "this Syncplay room is managed already, and you control it: \(reply.room)")
        print("others join it: cowatchd --join '\(reply.link)' (Syncplay users: the room \(reply.room))")
        print("its password: \(reply.password)")
        print("keep it secret: whoever has it controls the room (cowatchd --syncplay-room-password-file FILE, or \(reply.room):\(reply.password) as a Syncplay room)")
    }
}
