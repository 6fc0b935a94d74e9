import Testing

@testable import CowatchCore

@Suite("Certificate fingerprints")
struct CertificateFingerprintTests {
    /// SHA-256("abc"), FIPS 180-2's test vector, in both text forms.
    static let abcBase64URL = "sha256:ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0"
    static let abcHex = "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"

    @Test("hashes the SPKI bytes with SHA-256 and writes sha256: + 43 base64url characters")
    func knownVector() throws {
        let fingerprint = CertificateFingerprint(spkiDER: Array("abc".utf8))
        #expect(fingerprint.text == Self.abcBase64URL)
        #expect(fingerprint.text.count == 7 + 43)
        #expect(fingerprint.bytes.count == 32)
        #expect(fingerprint.bytes.first == 0xBA && fingerprint.bytes.last == 0xAD)
    }

    @Test("parses its own text and lowercase hex to the same value")
    func parsesBothForms() throws {
        let expected = CertificateFingerprint(spkiDER: Array("abc".utf8))
        #expect(CertificateFingerprint(text: Self.abcBase64URL) == expected)
        #expect(CertificateFingerprint(text: Self.abcHex) == expected)
        for seed in 0..<50 {
            let fingerprint = CertificateFingerprint(spkiDER: [UInt8(seed), 1, 2])
            #expect(CertificateFingerprint(text: fingerprint.text) == fingerprint)
        }
    }

    @Test(
        "refuses anything else",
        arguments: [
            "", "sha256:", "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0",  // no prefix
            "SHA256:ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0",  // prefix is lowercase
            "sha1:ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0",
            "sha256:ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0=",  // padding
            "sha256:ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0",  // standard alphabet
            "sha256:ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa",  // short
            "sha256:ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa1",  // stray low bits in the last character
            " sha256:ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0",
            "sha256:ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0\n",
            "sha256:BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD",  // uppercase hex
            "sha256:ba:78:16:bf:8f:01:cf:ea:41:41:40:de:5d:ae:22:23:b0:03:61:a3:96:17:7a:9c:b4:10:ff:61:f2:00:15:ad",
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015a",  // 63 digits
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ag",
        ])
    func refuses(text: String) {
        #expect(CertificateFingerprint(text: text) == nil)
    }

    @Test("matches compares every byte")
    func matches() {
        let one = CertificateFingerprint(spkiDER: Array("abc".utf8))
        #expect(one.matches(one))
        #expect(one.matches(CertificateFingerprint(text: Self.abcHex)!))
        var bytes = one.bytes
        bytes[31] ^= 1
        #expect(!one.matches(CertificateFingerprint(digest: bytes)!))
        bytes = one.bytes
        bytes[0] ^= 0x80
        #expect(!one.matches(CertificateFingerprint(digest: bytes)!))
        #expect(CertificateFingerprint(digest: [UInt8](repeating: 0, count: 31)) == nil)
    }
}
