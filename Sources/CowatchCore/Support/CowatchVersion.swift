/// The release every binary reports with `--version`, kept in one place (`make deb` reads the
/// number from here too).
public enum CowatchVersion {
    public static let number = "0.13.0"

    /// What `--version` prints. The protocol versions tell a script or a friend's build which
    /// requests and peers this build understands.
    public static let text =
        "\(number) (control protocol \(controlProtocolVersion), room protocol \(wireProtocolVersion))"
}
