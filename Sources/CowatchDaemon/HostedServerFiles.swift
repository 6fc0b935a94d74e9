import CowatchCore
import CowatchNet
import Foundation

/// What `cowatchd --host` keeps for its embedded room server, in `STATE/cowatch/host` (0700):
/// its TLS certificate and key (made on first start, so friends' pins stay valid across
/// restarts), its token key and its rooms' secrets and roles.
///
/// Threading: a value type, made once at start-up (blocking file I/O).
/// Errors: `unsafe-path` or `invalid-configuration` for a bad state directory or certificate.
struct HostedServerFiles {
    let state: RoomServerState
    /// nil with `--no-tls`.
    let identity: ServerIdentity?

    /// - Parameter certificate: PEM paths of a chain and its key; nil: the self-signed one.
    init(environment: [String: String], tls: Bool, certificate: CertificatePaths?) throws(CowatchError) {
        let directory = try StatePaths.defaultDirectory(environment: environment) + "/host"
        try StatePaths.ensureDirectory(directory)
        state = RoomServerState(directory: directory)
        if !tls {
            identity = nil
        } else if let certificate {
            identity = try ServerIdentity.load(certificatePath: certificate.chain, keyPath: certificate.key)
        } else {
            identity = try ServerIdentity.loadOrCreate(directory: directory, commonName: ProcessInfo.processInfo.hostName)
        }
    }
}
