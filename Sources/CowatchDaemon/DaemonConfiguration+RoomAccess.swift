import CowatchCore

/// The room secret and what the room may make this player open: the settings that guard the
/// viewer rather than tune playback.
extension DaemonConfiguration {
    /// The room secret, from the first of: `--room-secret-file`, `COWATCH_ROOM_SECRET_FILE`,
    /// `COWATCH_ROOM_SECRET` (the secret itself, for systemd's `EnvironmentFile=`), the config
    /// file's `room-secret-file`. There is no flag carrying the secret (others see flags in `ps`),
    /// and the config file cannot hold it (config files are often readable by others).
    ///
    /// Errors: `invalid-configuration` (both environment variables set, a bad secret, an
    /// unreadable file), `unsafe-path` (a file others may read). Messages never hold the secret.
    static func loadRoomSecret(
        flags: DaemonFlags, environment: [String: String], layered: LayeredConfig
    ) throws(CowatchError) -> RoomSecretValue? {
        let envFile = environment["COWATCH_ROOM_SECRET_FILE"].flatMap { $0.isEmpty ? nil : $0 }
        let envSecret = environment["COWATCH_ROOM_SECRET"]
        if let path = flags.roomSecretFile { return try RoomSecretReader.read(path: path) }
        if envFile != nil && envSecret != nil {
            throw CowatchError(
                .invalidConfiguration, "COWATCH_ROOM_SECRET and COWATCH_ROOM_SECRET_FILE are both set: keep one")
        }
        if let path = envFile { return try RoomSecretReader.read(path: path) }
        if let envSecret {
            do {
                return try RoomSecretValue(envSecret)
            } catch {
                throw CowatchError(error.code, "COWATCH_ROOM_SECRET: \(error.message)")
            }
        }
        if let path = try layered.string("room-secret-file"), !path.isEmpty { return try RoomSecretReader.read(path: path) }
        return nil
    }

    /// `allow-scheme` (a list: the flags' if any were given, else the environment's, else the
    /// file's; default http, https), `accept-open` (trusted, ask, operators, anyone; default
    /// trusted) and the trusted hosts (`--trust-host`, repeatable; else `COWATCH_TRUST_HOSTS`,
    /// comma-separated; else the file's `trust-host` list; default none).
    /// Errors: `invalid-configuration`.
    static func loadOpenPolicy(flags: DaemonFlags, layered: LayeredConfig) throws(CowatchError) -> OpenPolicy {
        var texts = flags.allowSchemes
        if texts.isEmpty { texts = try layered.stringArray("allow-scheme", in: 1) }
        if texts.isEmpty { texts = try layered.stringArray("allow-scheme", in: 2) }
        var schemes: [String] = []
        for text in texts where !text.isEmpty {
            let scheme = try OpenPolicy.validateScheme(text)
            if !schemes.contains(scheme) { schemes.append(scheme) }
        }
        var policy = OpenPolicy(allowedSchemes: schemes.isEmpty ? OpenPolicy.defaultSchemes : schemes)
        policy.trustedHosts = try loadTrustedHosts(flags: flags, layered: layered)
        if let accept = try layered.string("accept-open") {
            guard let parsed = OpenPolicy.Accept(rawValue: accept) else {
                throw CowatchError(
                    .invalidConfiguration, "accept-open must be trusted, ask, operators or anyone, not \"\(accept.prefix(40))\"")
            }
            policy.accept = parsed
        }
        return policy
    }

    /// The trusted hosts: the flags' if any were given, else `COWATCH_TRUST_HOSTS`'s, else the
    /// file's `trust-host`; each validated, duplicates dropped. Errors: `invalid-configuration`
    /// (a value that is not a host name or IP address, more than `TrustedHost.maximumCount`).
    static func loadTrustedHosts(flags: DaemonFlags, layered: LayeredConfig) throws(CowatchError) -> [TrustedHost] {
        var texts = flags.trustHosts
        if texts.isEmpty { texts = try layered.stringArray("trust-hosts", in: 1) }
        if texts.isEmpty { texts = try layered.stringArray("trust-host", in: 2) }
        var hosts: [TrustedHost] = []
        for text in texts where !text.isEmpty {
            let host = try TrustedHost(validating: text)
            if !hosts.contains(host) { hosts.append(host) }
            guard hosts.count <= TrustedHost.maximumCount else {
                throw CowatchError(.invalidConfiguration, "trust-host: at most \(TrustedHost.maximumCount) hosts")
            }
        }
        return hosts
    }
}
