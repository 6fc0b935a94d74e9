import CowatchCore
import Crypto
import Foundation
import NIOSSL
import X509

/// The room server's TLS certificate chain and private key, and the fingerprint clients pin.
///
/// Either `loadOrCreate(directory:commonName:)`, which keeps a self-signed P-256 certificate in
/// the state directory and reuses it on later starts (so invites and `known_hosts` lines stay
/// valid), or `load(certificatePath:keyPath:)` for a certificate the operator brings (for example
/// Let's Encrypt's `fullchain.pem` and `privkey.pem`; the files may hold a chain, leaf first).
///
/// The fingerprint is the SHA-256 of the leaf's public key (SubjectPublicKeyInfo), so renewing a
/// certificate keeps it only when the key is reused (certbot: `--reuse-key`).
///
/// Threading: immutable, `Sendable`; the loaders block on the file system (call them before
/// starting the server, not on an event loop). Nothing secret is logged or put in error messages.
/// Errors: `invalid-configuration` for a file that is missing, unreadable or not a PEM
/// certificate/key, or a key that does not belong to the certificate (the message names the
/// file and what is wrong); `unsafe-path` for a state directory or key file others could read or
/// change; `io-error` when the new identity cannot be written.
public struct ServerIdentity: Sendable {
    /// The certificate chain, leaf first.
    public let certificateChain: [NIOSSLCertificate]
    public let privateKey: NIOSSLPrivateKey
    /// The pin: SHA-256 of the leaf's SubjectPublicKeyInfo.
    public let fingerprint: CertificateFingerprint

    public static let certificateFileName = "server-cert.pem"
    public static let keyFileName = "server-key.pem"

    /// Loads `DIRECTORY/server-cert.pem` and `DIRECTORY/server-key.pem`, creating them on first
    /// use: a new P-256 key (file mode 0600) and a self-signed certificate for `commonName`
    /// (also its DNS subject alternative name), valid for ten years. The directory is created
    /// 0700 and must be safe (`StatePaths.ensureDirectory`).
    ///
    /// When only the certificate is missing, a new one is made for the existing key (the
    /// fingerprint does not change). When only the key is missing, this refuses: a new key means
    /// a new fingerprint, and every client that pinned the old one would refuse the server.
    public static func loadOrCreate(directory: String, commonName: String) throws(CowatchError) -> ServerIdentity {
        try StatePaths.ensureDirectory(directory)
        let certificatePath = directory + "/" + certificateFileName
        let keyPath = directory + "/" + keyFileName
        let keyPEM = try StatePaths.readFile(keyPath, maxBytes: 64 << 10, requirePrivate: true)
        let certificatePEM = try StatePaths.readFile(certificatePath, maxBytes: 1 << 20)

        switch (certificatePEM, keyPEM) {
        case (let certificatePEM?, let keyPEM?):
            return try make(certificatePEM: certificatePEM, certificatePath: certificatePath, keyPEM: keyPEM, keyPath: keyPath)
        case (_?, nil):
            throw CowatchError(
                .invalidConfiguration,
                "\(certificatePath) exists but \(keyPath) does not; restore the key, or remove \(certificatePath) to make a new identity (clients that pinned the old one will then refuse this server until they drop its known_hosts line or get a new invite)")
        case (nil, let keyPEM?):
            let key: Certificate.PrivateKey
            do {
                key = try Certificate.PrivateKey(pemEncoded: String(decoding: keyPEM, as: UTF8.self))
            } catch {
                throw CowatchError(.invalidConfiguration, "\(keyPath) is not a PEM private key cowatch can use: \(error)")
            }
            let newCertificate = try selfSignedCertificatePEM(key: key, commonName: commonName)
            try StatePaths.writeAtomically(certificatePath, contents: newCertificate, mode: 0o644)
            return try make(certificatePEM: newCertificate, certificatePath: certificatePath, keyPEM: keyPEM, keyPath: keyPath)
        case (nil, nil):
            let signingKey = P256.Signing.PrivateKey()
            let newKey = endingInNewline(signingKey.pemRepresentation)
            let newCertificate = try selfSignedCertificatePEM(key: Certificate.PrivateKey(signingKey), commonName: commonName)
            try StatePaths.writeAtomically(keyPath, contents: newKey, mode: 0o600)
            try StatePaths.writeAtomically(certificatePath, contents: newCertificate, mode: 0o644)
            return try make(certificatePEM: newCertificate, certificatePath: certificatePath, keyPEM: newKey, keyPath: keyPath)
        }
    }

    /// Loads a certificate chain (PEM, leaf first) and its private key (PEM: PKCS#8, SEC1 EC or
    /// PKCS#1 RSA; not encrypted). Symbolic links are followed (Let's Encrypt's `live/` files are
    /// links). Checks that the key belongs to the leaf certificate.
    public static func load(certificatePath: String, keyPath: String) throws(CowatchError) -> ServerIdentity {
        func read(_ path: String, _ what: String, maxBytes: Int) throws(CowatchError) -> [UInt8] {
            do throws(CowatchError) {
                guard let bytes = try StatePaths.readFile(path, maxBytes: maxBytes) else {
                    throw CowatchError(.invalidConfiguration, "the TLS \(what) file \(path) does not exist")
                }
                return bytes
            } catch where error.code == .ioError {
                throw CowatchError(.invalidConfiguration, "cannot read the TLS \(what) file: \(error.message)")
            }
        }
        let certificatePEM = try read(certificatePath, "certificate", maxBytes: 1 << 20)
        let keyPEM = try read(keyPath, "private key", maxBytes: 64 << 10)
        return try make(certificatePEM: certificatePEM, certificatePath: certificatePath, keyPEM: keyPEM, keyPath: keyPath)
    }

    /// A server context for these credentials: TLS 1.3 only by default (both ends are cowatch;
    /// Syncplay's clients get 1.2 too), no client certificates. Creating one is cheap (no trust
    /// store is loaded); one per server suffices.
    public func makeServerContext(minimumVersion: TLSVersion = .tlsv13) throws(CowatchError) -> NIOSSLContext {
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: certificateChain.map { .certificate($0) }, privateKey: .privateKey(privateKey))
        configuration.minimumTLSVersion = minimumVersion
        do {
            return try NIOSSLContext(configuration: configuration)
        } catch {
            throw CowatchError(.invalidConfiguration, "cannot set up TLS with this certificate and key: \(error)")
        }
    }

    // MARK: - Building

    private static func make(certificatePEM: [UInt8], certificatePath: String, keyPEM: [UInt8], keyPath: String) throws(CowatchError) -> ServerIdentity {
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMBytes(certificatePEM)
        } catch {
            throw CowatchError(.invalidConfiguration, "\(certificatePath) is not a PEM certificate (expected -----BEGIN CERTIFICATE-----): \(error)")
        }
        guard let leaf = chain.first else {
            throw CowatchError(.invalidConfiguration, "\(certificatePath) holds no certificate (expected -----BEGIN CERTIFICATE-----)")
        }
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(bytes: keyPEM, format: .pem)
        } catch {
            throw CowatchError(
                .invalidConfiguration,
                "\(keyPath) is not a PEM private key cowatch can use (expected an unencrypted -----BEGIN PRIVATE KEY-----, EC PRIVATE KEY or RSA PRIVATE KEY)")
        }
        let spki: [UInt8]
        do {
            spki = try leaf.extractPublicKey().toSPKIBytes()
        } catch {
            throw CowatchError(.invalidConfiguration, "cannot read the public key of the certificate in \(certificatePath): \(error)")
        }
        try checkKeyMatches(certificate: leaf, certificatePath: certificatePath, keyPEM: keyPEM, keyPath: keyPath)
        let identity = ServerIdentity(certificateChain: chain, privateKey: key, fingerprint: CertificateFingerprint(spkiDER: spki))
        // BoringSSL checks the key against the certificate too, and refuses what it cannot use.
        do {
            _ = try identity.makeServerContext()
        } catch {
            throw CowatchError(
                .invalidConfiguration,
                "the private key in \(keyPath) does not belong to the certificate in \(certificatePath), or cannot be used for TLS")
        }
        return identity
    }

    /// Compares the key's public half with the certificate's, when swift-certificates can read
    /// both (P-256/384/521, RSA, Ed25519); other keys are left to BoringSSL's own check.
    private static func checkKeyMatches(certificate: NIOSSLCertificate, certificatePath: String, keyPEM: [UInt8], keyPath: String) throws(CowatchError) {
        guard let key = try? Certificate.PrivateKey(pemEncoded: String(decoding: keyPEM, as: UTF8.self)),
            let der = try? certificate.toDERBytes(), let parsed = try? Certificate(derEncoded: der)
        else { return }
        guard key.publicKey == parsed.publicKey else {
            throw CowatchError(
                .invalidConfiguration,
                "the private key in \(keyPath) does not belong to the certificate in \(certificatePath) (its public key differs); give the key that was used for this certificate")
        }
    }

    /// PEM text as file bytes, ending in a newline (so files can be concatenated into a chain).
    private static func endingInNewline(_ pem: String) -> [UInt8] {
        Array((pem.hasSuffix("\n") ? pem : pem + "\n").utf8)
    }

    private static func selfSignedCertificatePEM(key: Certificate.PrivateKey, commonName: String) throws(CowatchError) -> [UInt8] {
        do {
            let name = try DistinguishedName { CommonName(commonName) }
            let now = Date()
            let isDNSName = !commonName.isEmpty && commonName.unicodeScalars.allSatisfy {
                $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-" || $0 == ".")
            }
            let extensions = try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                if isDNSName { SubjectAlternativeNames([.dnsName(commonName)]) }
            }
            let certificate = try Certificate(
                version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: key.publicKey,
                notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(10 * 366 * 24 * 3600),
                issuer: name, subject: name, extensions: extensions,
                issuerPrivateKey: key)
            return Self.endingInNewline(try certificate.serializeAsPEM().pemString)
        } catch {
            throw CowatchError(.invalidConfiguration, "cannot make a self-signed certificate for \"\(commonName.prefix(64))\": \(error)")
        }
    }
}
