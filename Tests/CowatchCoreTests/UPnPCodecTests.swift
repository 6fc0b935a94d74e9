import CowatchTestSupport
import Testing

@testable import CowatchCore

private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// An HTTP response with CRLF lines and, unless told otherwise, a correct Content-Length.
private func httpResponse(_ status: String, _ headers: [String] = [], body: String, contentLength: Bool = true) -> [UInt8] {
    var lines = ["HTTP/1.1 \(status)"] + headers
    if contentLength { lines.append("Content-Length: \(body.utf8.count)") }
    return bytes(lines.joined(separator: "\r\n") + "\r\n\r\n" + body)
}

private func soapEnvelope(_ inner: String) -> String {
    "<?xml version=\"1.0\"?>\r\n<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\" "
        + "s:encodingStyle=\"http://schemas.xmlsoap.org/soap/encoding/\"><s:Body>\(inner)</s:Body></s:Envelope>\r\n"
}

private func externalIPBody(_ value: String) -> String {
    soapEnvelope(
        "<u:GetExternalIPAddressResponse xmlns:u=\"urn:schemas-upnp-org:service:WANIPConnection:1\">"
            + "<NewExternalIPAddress>\(value)</NewExternalIPAddress></u:GetExternalIPAddressResponse>")
}

private func faultBody(code: String, description: String) -> String {
    soapEnvelope(
        "<s:Fault><faultcode>s:Client</faultcode><faultstring>UPnPError</faultstring><detail>"
            + "<UPnPError xmlns=\"urn:schemas-upnp-org:control-1-0\"><errorCode>\(code)</errorCode>"
            + "<errorDescription>\(description)</errorDescription></UPnPError></detail></s:Fault>")
}

private let miniupnpdHeaders = ["Content-Type: text/xml; charset=\"utf-8\"", "Connection: close", "Server: OpenWRT/OpenWrt UPnP/1.1 MiniUPnPd/2.3.3", "Ext:"]

private func isRefused<T>(_ body: () throws(CowatchError) -> T) -> Bool {
    do {
        _ = try body()
        return false
    } catch {
        return error.code == .protocolViolation
    }
}

@Suite("UPnP-IGD codecs", .computeBound)
struct UPnPCodecTests {
    // MARK: SSDP

    static let miniupnpdReply =
        "HTTP/1.1 200 OK\r\n"
        + "CACHE-CONTROL: max-age=120\r\n"
        + "ST: urn:schemas-upnp-org:device:InternetGatewayDevice:1\r\n"
        + "USN: uuid:bc2f8e6a-7a3e-4d3b-8b0c-2c3f4b5a6d7e::urn:schemas-upnp-org:device:InternetGatewayDevice:1\r\n"
        + "EXT:\r\n"
        + "SERVER: OpenWRT/OpenWrt UPnP/1.1 MiniUPnPd/2.3.3\r\n"
        + "LOCATION: http://192.168.1.1:5000/rootDesc.xml\r\n"
        + "OPT: \"http://schemas.upnp.org/upnp/1/0/\"; ns=01\r\n"
        + "01-NLS: 1700000000\r\n"
        + "BOOTID.UPNP.ORG: 1700000000\r\n"
        + "CONFIGID.UPNP.ORG: 1337\r\n"
        + "\r\n"

    static func reply(location: String?, status: String = "HTTP/1.1 200 OK", extra: [String] = []) -> [UInt8] {
        var lines = [status, "ST: upnp:rootdevice"] + extra
        if let location { lines.append("LOCATION: \(location)") }
        return bytes(lines.joined(separator: "\r\n") + "\r\n\r\n")
    }

    @Test("the M-SEARCH datagram")
    func searchRequest() {
        let request = SSDP.searchRequest(searchTarget: SSDP.gatewaySearchTargets[1], maxWaitSeconds: 2)
        #expect(
            request
                == bytes(
                    "M-SEARCH * HTTP/1.1\r\nHOST: 239.255.255.250:1900\r\nMAN: \"ssdp:discover\"\r\nMX: 2\r\n"
                        + "ST: urn:schemas-upnp-org:device:InternetGatewayDevice:1\r\n\r\n"))
        #expect(SSDP.multicastAddress == "239.255.255.250" && SSDP.port == 1900)
        #expect(SSDP.gatewaySearchTargets.first == "urn:schemas-upnp-org:device:InternetGatewayDevice:2")
        // MX clamped to 1–5; a target cannot smuggle in header lines.
        #expect(String(decoding: SSDP.searchRequest(searchTarget: "x", maxWaitSeconds: 0), as: UTF8.self).contains("MX: 1\r\n"))
        #expect(String(decoding: SSDP.searchRequest(searchTarget: "x", maxWaitSeconds: 99), as: UTF8.self).contains("MX: 5\r\n"))
        let injected = String(decoding: SSDP.searchRequest(searchTarget: "a\r\nEVIL: 1", maxWaitSeconds: 2), as: UTF8.self)
        #expect(injected.contains("ST: aEVIL: 1\r\n\r\n") && injected.split(separator: "\r\n").count == 5)
    }

    @Test("a miniupnpd reply parses")
    func miniupnpdReply() throws {
        let response = try SSDP.parseResponse(bytes(Self.miniupnpdReply), from: "192.168.1.1")
        #expect(response.location.host == "192.168.1.1" && response.location.port == 5000 && response.location.path == "/rootDesc.xml")
        #expect(response.location.text == "http://192.168.1.1:5000/rootDesc.xml")
        #expect(response.searchTarget == "urn:schemas-upnp-org:device:InternetGatewayDevice:1")
        #expect(response.server == "OpenWRT/OpenWrt UPnP/1.1 MiniUPnPd/2.3.3")
    }

    @Test("header names in any case, bare LF, no final blank line, IPv4-mapped and IPv6 responders")
    func lenientButChecked() throws {
        let lowercase = bytes("HTTP/1.1 200 OK\nlocation: http://10.0.0.1/desc.xml\nSt: upnp:rootdevice")
        let response = try SSDP.parseResponse(lowercase, from: "::ffff:10.0.0.1")
        #expect(response.location.port == 80 && response.searchTarget == "upnp:rootdevice" && response.server == nil)
        let v6 = try SSDP.parseResponse(Self.reply(location: "http://[FE80::1]:49152/igd.xml"), from: "fe80::1%en0")
        #expect(v6.location.host == "fe80::1" && v6.location.authority == "[fe80::1]:49152")
    }

    @Test("LOCATION elsewhere, https, user information, overlong or missing is refused")
    func refusedReplies() {
        let responder = "192.168.1.1"
        let refused: [[UInt8]] = [
            Self.reply(location: "http://192.168.1.2:5000/rootDesc.xml"),  // another host
            Self.reply(location: "http://203.0.113.9/rootDesc.xml"),
            Self.reply(location: "https://192.168.1.1:5000/rootDesc.xml"),
            Self.reply(location: "http://admin:pw@192.168.1.1:5000/rootDesc.xml"),
            Self.reply(location: "http://router.lan:5000/rootDesc.xml"),  // a name, not an address
            Self.reply(location: "http://192.168.1.1:0/rootDesc.xml"),
            Self.reply(location: "http://192.168.1.1:65536/rootDesc.xml"),
            Self.reply(location: "http://192.168.1.1:5000"),  // no path
            Self.reply(location: "http://192.168.1.1:5000/root Desc.xml"),
            Self.reply(location: "http://192.168.1.1:5000/rootDesc.xml#x"),
            Self.reply(location: "http://0192.168.1.1:5000/rootDesc.xml"),
            Self.reply(location: "file:///etc/passwd"),
            Self.reply(location: "http://192.168.1.1:5000/" + String(repeating: "a", count: 600)),
            Self.reply(location: "http://192.168.1.1/x", extra: [String(repeating: "X-Pad: y", count: 1) + String(repeating: "y", count: 2100)]),
            Self.reply(location: nil),
            Self.reply(location: "http://192.168.1.1/x", extra: ["LOCATION: http://192.168.1.1/y"]),
            Self.reply(location: "http://192.168.1.1/x", status: "HTTP/1.1 404 Not Found"),
            Self.reply(location: "http://192.168.1.1/x", status: "NOTIFY * HTTP/1.1"),
            Self.reply(location: "http://192.168.1.1/x", extra: Array(repeating: "X: y", count: 65)),
            Self.reply(location: "http://192.168.1.1/x", extra: ["X: a\u{1B}[2Jb"]),
            Self.reply(location: "http://192.168.1.1/x", extra: [" folded"]),
            [],
        ]
        for reply in refused {
            #expect(isRefused { () throws(CowatchError) in try SSDP.parseResponse(reply, from: responder) }, "\(String(decoding: reply.prefix(120), as: UTF8.self))")
        }
        #expect(throws: CowatchError(.invalidArgument, "")) { try SSDP.parseResponse(bytes(Self.miniupnpdReply), from: "router.lan") }
    }

    @Test("HTTPLocation parses only plain http on an IP literal")
    func locations() throws {
        let v6 = try HTTPLocation(parsing: "HTTP://[2001:db8::1]/a?b=c")
        #expect(v6.host == "2001:db8::1" && v6.port == 80 && v6.path == "/a?b=c" && v6.text == "http://[2001:db8::1]:80/a?b=c")
        #expect(try HTTPLocation(parsing: "http://10.1.2.3:1/%41").path == "/%41")
        for text in [
            "http://[fe80::1%25en0]/x", "http://[10.0.0.1]/x", "http://fe80::1/x", "http://10.0.0.1:/x", "http://10.0.0.1:+80/x",
            "http://10.0.0.1/%4", "http://10.0.0.1/a\"b", "http://10.0.0.1/a\u{0}", "http://10.0.0.1/é", "http://@10.0.0.1/x",
            "http://10.0.0.1?x", "", "http://", "http:///x",
        ] {
            #expect(isRefused { () throws(CowatchError) in try HTTPLocation(parsing: text) }, "\(text)")
        }
    }

    @Test("control URLs resolve against the description's location, never to another host")
    func resolving() throws {
        let base = try HTTPLocation(parsing: "http://192.168.1.1:5000/dyn/rootDesc.xml?v=1")
        #expect(try base.resolving("/ctl/IPConn") == HTTPLocation(parsing: "http://192.168.1.1:5000/ctl/IPConn"))
        #expect(try base.resolving("  ctl/IPConn\n") == HTTPLocation(parsing: "http://192.168.1.1:5000/dyn/ctl/IPConn"))
        #expect(try base.resolving("?x=2").path == "/dyn/rootDesc.xml?x=2")
        #expect(try base.resolving("http://192.168.1.1:5000/upnp/control/WANIPConn1").path == "/upnp/control/WANIPConn1")
        #expect(try base.resolving("http://[::ffff:192.168.1.1]:5000/c").host == "192.168.1.1")
        #expect(try base.resolving("//192.168.1.1:5000/c").path == "/c")
        for hostile in [
            "http://192.168.1.2:5000/ctl", "http://192.168.1.1:5001/ctl", "http://192.168.1.1/ctl", "https://192.168.1.1:5000/ctl",
            "//evil.example/ctl", "file:///etc/passwd", "javascript:alert(1)", "", "   ", "#frag", "/a b", "/" + String(repeating: "x", count: 600),
        ] {
            #expect(isRefused { () throws(CowatchError) in try base.resolving(hostile) }, "\(hostile)")
        }
    }

    // MARK: Description

    static let rootDesc = """
        <?xml version="1.0"?>
        <root xmlns="urn:schemas-upnp-org:device-1-0" configId="1337">
        <specVersion><major>1</major><minor>1</minor></specVersion>
        <device>
        <deviceType>urn:schemas-upnp-org:device:InternetGatewayDevice:1</deviceType>
        <friendlyName>OpenWrt router</friendlyName>
        <manufacturer>OpenWrt</manufacturer>
        <manufacturerURL>https://openwrt.org/</manufacturerURL>
        <modelDescription>OpenWrt router</modelDescription>
        <modelName>OpenWrt router</modelName>
        <modelNumber>1</modelNumber>
        <modelURL>https://openwrt.org/</modelURL>
        <serialNumber>00000000</serialNumber>
        <UDN>uuid:bc2f8e6a-7a3e-4d3b-8b0c-2c3f4b5a6d7e</UDN>
        <serviceList>
        <service>
        <serviceType>urn:schemas-upnp-org:service:Layer3Forwarding:1</serviceType>
        <serviceId>urn:upnp-org:serviceId:L3Forwarding1</serviceId>
        <SCPDURL>/L3F.xml</SCPDURL>
        <controlURL>/ctl/L3F</controlURL>
        <eventSubURL>/evt/L3F</eventSubURL>
        </service>
        </serviceList>
        <deviceList>
        <device>
        <deviceType>urn:schemas-upnp-org:device:WANDevice:1</deviceType>
        <friendlyName>WANDevice</friendlyName>
        <UDN>uuid:bc2f8e6a-7a3e-4d3b-8b0c-2c3f4b5a6d7f</UDN>
        <serviceList>
        <service>
        <serviceType>urn:schemas-upnp-org:service:WANCommonInterfaceConfig:1</serviceType>
        <serviceId>urn:upnp-org:serviceId:WANCommonIFC1</serviceId>
        <SCPDURL>/WANCfg.xml</SCPDURL>
        <controlURL>/ctl/CmnIfCfg</controlURL>
        <eventSubURL>/evt/CmnIfCfg</eventSubURL>
        </service>
        </serviceList>
        <deviceList>
        <device>
        <deviceType>urn:schemas-upnp-org:device:WANConnectionDevice:1</deviceType>
        <friendlyName>WANConnectionDevice</friendlyName>
        <UDN>uuid:bc2f8e6a-7a3e-4d3b-8b0c-2c3f4b5a6d80</UDN>
        <serviceList>
        <service>
        <serviceType>urn:schemas-upnp-org:service:WANIPConnection:1</serviceType>
        <serviceId>urn:upnp-org:serviceId:WANIPConn1</serviceId>
        <SCPDURL>/WANIPCn.xml</SCPDURL>
        <controlURL>/ctl/IPConn</controlURL>
        <eventSubURL>/evt/IPConn</eventSubURL>
        </service>
        <service>
        <serviceType>urn:schemas-upnp-org:service:WANIPv6FirewallControl:1</serviceType>
        <serviceId>urn:upnp-org:serviceId:WANIPv6Firewall1</serviceId>
        <SCPDURL>/WANIP6FC.xml</SCPDURL>
        <controlURL>/ctl/IP6FCtl</controlURL>
        <eventSubURL>/evt/IP6FCtl</eventSubURL>
        </service>
        </serviceList>
        </device>
        </deviceList>
        </device>
        </deviceList>
        <presentationURL>http://192.168.1.1/</presentationURL>
        </device>
        </root>

        """

    static func description(services: [(type: String, url: String)]) -> String {
        let list = services.map {
            "<service><serviceType>\($0.type)</serviceType><serviceId>x</serviceId><controlURL>\($0.url)</controlURL></service>"
        }
        return "<?xml version=\"1.0\"?><root><device><serviceList>\(list.joined())</serviceList></device></root>"
    }

    @Test("a miniupnpd rootDesc.xml gives WANIPConnection:1 and its control URL")
    func miniupnpdDescription() throws {
        let service = try IGDDescription.connectionService(in: bytes(Self.rootDesc))
        #expect(service == IGDService(serviceType: "urn:schemas-upnp-org:service:WANIPConnection:1", controlURL: "/ctl/IPConn"))
        let location = try HTTPLocation(parsing: "http://192.168.1.1:5000/rootDesc.xml")
        #expect(try location.resolving(service.controlURL).text == "http://192.168.1.1:5000/ctl/IPConn")
    }

    @Test("WANIPConnection:2 over :1 over WANPPPConnection:1; prefixes, entities, CDATA and comments")
    func preference() throws {
        let ppp = ("urn:schemas-upnp-org:service:WANPPPConnection:1", "/ppp")
        let ip1 = ("urn:schemas-upnp-org:service:WANIPConnection:1", "/ip1")
        let ip2 = ("urn:schemas-upnp-org:service:WANIPConnection:2", "/ip2")
        #expect(try IGDDescription.connectionService(in: bytes(Self.description(services: [ppp, ip1, ip2]))).controlURL == "/ip2")
        #expect(try IGDDescription.connectionService(in: bytes(Self.description(services: [ppp, ip1]))).controlURL == "/ip1")
        #expect(try IGDDescription.connectionService(in: bytes(Self.description(services: [ppp]))).controlURL == "/ppp")
        let fancy = """
            <?xml version="1.0" encoding="utf-8"?><!-- a router --><d:root xmlns:d="urn:schemas-upnp-org:device-1-0">
            <d:service a='>' b="/>"><d:serviceType> urn:schemas-upnp-org:service:WANIPConnection:1 </d:serviceType>
            <d:controlURL><![CDATA[/upnp/control?a=1]]>&amp;b=2</d:controlURL></d:service><empty/></d:root>
            """
        let service = try IGDDescription.connectionService(in: bytes(fancy))
        #expect(service.serviceType == "urn:schemas-upnp-org:service:WANIPConnection:1" && service.controlURL == "/upnp/control?a=1&b=2")
    }

    @Test("a description without a port-mapping service is unsupported")
    func noService() {
        let firewall = ("urn:schemas-upnp-org:service:WANIPv6FirewallControl:1", "/fw")
        #expect(throws: CowatchError(.unsupported, "")) {
            try IGDDescription.connectionService(in: bytes(Self.description(services: [firewall])))
        }
        #expect(throws: CowatchError(.unsupported, "")) {
            try IGDDescription.connectionService(in: bytes("<root><device><deviceType>urn:x:MediaRenderer:1</deviceType></device></root>"))
        }
    }

    @Test("hostile descriptions are refused")
    func hostileDescriptions() {
        let ip1 = "urn:schemas-upnp-org:service:WANIPConnection:1"
        let deep = String(repeating: "<a>", count: 40) + String(repeating: "</a>", count: 40)
        let hostile: [String] = [
            "<!DOCTYPE root [<!ENTITY x \"y\">]><root/>",
            Self.description(services: [(ip1, "/a&ent;b")]),
            Self.description(services: [(ip1, "/a&#47;b")]),
            Self.description(services: [(ip1, "/a\u{1}b")]),
            Self.description(services: [(ip1, "/a\u{85}b")]),
            Self.description(services: [(ip1, "/a b")]),
            Self.description(services: [(ip1, "")]),
            Self.description(services: [(ip1, "/" + String(repeating: "c", count: 3000))]),
            Self.description(services: [(String(repeating: "t", count: 3000), "/x")]),
            "<root>" + deep + "</root>",
            "<root><service></root></service>",
            "<root><service>",
            "<root></root><root></root>",
            "text<root/>",
            "<root><1bad/></root>",
            "<root a=\"<\"/>",
            "<root><!-- never closed </root>",
            "<root><service><service><serviceType>\(ip1)</serviceType><controlURL>/x</controlURL></service></service></root>",
            "<root><service><serviceType>\(ip1)</serviceType><serviceType>\(ip1)</serviceType><controlURL>/x</controlURL></service></root>",
            "",
            "<root>" + String(repeating: " ", count: IGDDescription.maxBytes) + "</root>",
        ]
        for document in hostile {
            #expect(isRefused { () throws(CowatchError) in try IGDDescription.connectionService(in: bytes(document)) }, "\(document.prefix(100))")
        }
    }

    // MARK: SOAP requests

    static let control = try! HTTPLocation(parsing: "http://192.168.1.1:5000/ctl/IPConn")
    static let ip1 = "urn:schemas-upnp-org:service:WANIPConnection:1"

    static func split(_ request: [UInt8]) -> (head: [String], body: String) {
        let text = String(decoding: request, as: UTF8.self)
        let parts = text.split(separator: "\r\n\r\n", maxSplits: 1, omittingEmptySubsequences: false)
        return (parts[0].split(separator: "\r\n").map(String.init), parts.count > 1 ? String(parts[1]) : "")
    }

    @Test("AddPortMapping: the envelope, the headers, and a Content-Length that is the body's length")
    func addPortMapping() throws {
        let request = try UPnPSOAP.addPortMapping(
            control: Self.control, serviceType: Self.ip1, externalPort: 7433, internalPort: 7433, internalClient: "192.168.1.20",
            leaseSeconds: 3600, description: "cowatch & friends")
        let (head, body) = Self.split(request)
        #expect(
            head == [
                "POST /ctl/IPConn HTTP/1.1", "Host: 192.168.1.1:5000", "Content-Type: text/xml; charset=\"utf-8\"",
                "SOAPAction: \"urn:schemas-upnp-org:service:WANIPConnection:1#AddPortMapping\"", "Content-Length: \(body.utf8.count)",
                "Connection: close",
            ])
        #expect(
            body
                == soapEnvelope(
                    "<u:AddPortMapping xmlns:u=\"urn:schemas-upnp-org:service:WANIPConnection:1\"><NewRemoteHost></NewRemoteHost>"
                        + "<NewExternalPort>7433</NewExternalPort><NewProtocol>TCP</NewProtocol><NewInternalPort>7433</NewInternalPort>"
                        + "<NewInternalClient>192.168.1.20</NewInternalClient><NewEnabled>1</NewEnabled>"
                        + "<NewPortMappingDescription>cowatch &amp; friends</NewPortMappingDescription>"
                        + "<NewLeaseDuration>3600</NewLeaseDuration></u:AddPortMapping>"))
        // Our own body passes our own scanner.
        var scanner = UPnPXMLScanner(bytes(body))
        var events = 0
        while try scanner.next() != nil { events += 1 }
        #expect(events > 20)
    }

    @Test("the mapping description is printable ASCII, at most 64 characters, escaped")
    func mappingDescription() throws {
        let hostile = "<evil>\r\n\u{1B}[31m" + String(repeating: "é", count: 3) + String(repeating: "x", count: 100)
        let (_, body) = Self.split(
            try UPnPSOAP.addPortMapping(
                control: Self.control, serviceType: Self.ip1, externalPort: 1, internalPort: 65535, internalClient: "10.0.0.2",
                leaseSeconds: 0, description: hostile))
        let kept = "&lt;evil&gt;[31m" + String(repeating: "x", count: 64 - 10)
        #expect(body.contains("<NewPortMappingDescription>\(kept)</NewPortMappingDescription>"))
    }

    @Test("DeletePortMapping and GetExternalIPAddress; bad arguments refused")
    func otherRequests() throws {
        let v6Control = try HTTPLocation(parsing: "http://[fd00::1]:49000/upnp/control/WANIPConn1")
        let (deleteHead, deleteBody) = Self.split(try UPnPSOAP.deletePortMapping(control: v6Control, serviceType: Self.ip1, externalPort: 7433))
        #expect(deleteHead.prefix(2) == ["POST /upnp/control/WANIPConn1 HTTP/1.1", "Host: [fd00::1]:49000"])
        #expect(deleteHead.contains("SOAPAction: \"\(Self.ip1)#DeletePortMapping\""))
        #expect(deleteBody.contains("<NewRemoteHost></NewRemoteHost><NewExternalPort>7433</NewExternalPort><NewProtocol>TCP</NewProtocol></u:DeletePortMapping>"))
        let (ipHead, ipBody) = Self.split(try UPnPSOAP.getExternalIPAddress(control: Self.control, serviceType: Self.ip1))
        #expect(ipHead.contains("Content-Length: \(ipBody.utf8.count)"))
        #expect(ipBody.contains("<u:GetExternalIPAddress xmlns:u=\"\(Self.ip1)\"></u:GetExternalIPAddress>"))

        let invalid = CowatchError(.invalidArgument, "")
        #expect(throws: invalid) { try UPnPSOAP.deletePortMapping(control: Self.control, serviceType: Self.ip1, externalPort: 0) }
        #expect(throws: invalid) { try UPnPSOAP.deletePortMapping(control: Self.control, serviceType: Self.ip1 + "\r\nX: y", externalPort: 1) }
        #expect(throws: invalid) { try UPnPSOAP.getExternalIPAddress(control: Self.control, serviceType: "\"><x") }
        for (internalPort, client, lease) in [(70000, "10.0.0.2", 0), (1, "host.lan", 0), (1, "fd00::2", 0), (1, "10.0.0.2", -1), (1, "10.0.0.2", 604_801)] {
            #expect(throws: invalid) {
                try UPnPSOAP.addPortMapping(
                    control: Self.control, serviceType: Self.ip1, externalPort: 1, internalPort: internalPort, internalClient: client,
                    leaseSeconds: lease, description: "")
            }
        }
    }

    @Test("fetching the description: the GET request and the HTTP body")
    func descriptionFetch() throws {
        let location = try HTTPLocation(parsing: "http://192.168.1.1:5000/rootDesc.xml")
        #expect(UPnPSOAP.getRequest(location) == bytes("GET /rootDesc.xml HTTP/1.1\r\nHost: 192.168.1.1:5000\r\nConnection: close\r\n\r\n"))
        let response = httpResponse("200 OK", ["Content-Type: text/xml"], body: Self.rootDesc)
        #expect(UPnPSOAP.isComplete(response))
        let (status, body) = try UPnPSOAP.httpBody(response)
        #expect(status == 200 && body == bytes(Self.rootDesc))
        #expect(try IGDDescription.connectionService(in: body).controlURL == "/ctl/IPConn")
        #expect(try UPnPSOAP.httpBody(httpResponse("404 Not Found", body: "")).status == 404)
        #expect(isRefused { () throws(CowatchError) in try UPnPSOAP.httpBody(Array(response.dropLast())) })
    }

    // MARK: SOAP responses

    static let externalIPResponse = httpResponse("200 OK", miniupnpdHeaders, body: externalIPBody("203.0.113.7"))
    static let conflictResponse = httpResponse("500 Internal Server Error", miniupnpdHeaders, body: faultBody(code: "718", description: "ConflictInMappingEntry"))

    static func chunked(_ body: String, sizes: [Int]) -> [UInt8] {
        var rest = Substring(body)
        var out = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/xml\r\n\r\n"
        var index = 0
        while !rest.isEmpty {
            let size = min(sizes[index % sizes.count], rest.utf8.count)
            let piece = String(rest.utf8.prefix(size))!
            out += String(size, radix: 16) + (index == 1 ? ";ext=1" : "") + "\r\n" + piece + "\r\n"
            rest = rest.dropFirst(piece.count)
            index += 1
        }
        return bytes(out + "0\r\nX-Trailer: t\r\n\r\n")
    }

    @Test("GetExternalIPAddress 200 gives NewExternalIPAddress")
    func externalIP() throws {
        #expect(try UPnPSOAP.parseResponse(Self.externalIPResponse) == .ok(["NewExternalIPAddress": "203.0.113.7"]))
        #expect(UPnPSOAP.isComplete(Self.externalIPResponse))
        let empty = httpResponse("200 OK", body: soapEnvelope("<u:AddPortMappingResponse xmlns:u=\"\(Self.ip1)\"/>"))
        #expect(try UPnPSOAP.parseResponse(empty) == .ok([:]))
        // HTTP/1.0, no Content-Length: the body runs to the close; entities decoded, whitespace trimmed.
        let old = bytes("HTTP/1.0 200 OK\r\n\r\n" + externalIPBody("\n  a&amp;b  "))
        #expect(!UPnPSOAP.isComplete(old))
        #expect(try UPnPSOAP.parseResponse(old) == .ok(["NewExternalIPAddress": "a&b"]))
    }

    @Test("a 500 with UPnP error 718 is a fault, with readable text")
    func conflictFault() throws {
        #expect(try UPnPSOAP.parseResponse(Self.conflictResponse) == .fault(code: 718, description: "ConflictInMappingEntry"))
        #expect(UPnPSOAP.faultName(code: 718) == "ConflictInMappingEntry")
        #expect(UPnPSOAP.faultSummary(code: 718, description: "x") == "718 ConflictInMappingEntry: the router already forwards that port to another machine")
        for code in [402, 501, 606, 724, 725] { #expect(UPnPSOAP.faultExplanation(code: code) != nil) }
        #expect(UPnPSOAP.faultSummary(code: 899, description: "Weird\u{1B}[2J thing") == "899 Weird [2J thing")
        // The description cleaned: printable ASCII, at most 120; none given → the code's name.
        let messy = httpResponse("500 Internal Server Error", body: faultBody(code: " 606 ", description: "\u{202E}bad\u{85}" + String(repeating: "z", count: 500)))
        guard case .fault(606, let description) = try UPnPSOAP.parseResponse(messy) else {
            Issue.record("expected a fault")
            return
        }
        #expect(description.count == 120 && description.hasPrefix("?bad zzz") && description.utf8.allSatisfy { (0x20...0x7E).contains($0) })
        let bare = httpResponse("500 Internal Server Error", body: faultBody(code: "725", description: ""))
        #expect(try UPnPSOAP.parseResponse(bare) == .fault(code: 725, description: "OnlyPermanentLeasesSupported"))
    }

    @Test("a chunked body")
    func chunkedBody() throws {
        let response = Self.chunked(externalIPBody("198.51.100.4"), sizes: [7, 100, 1, 64])
        #expect(UPnPSOAP.isComplete(response))
        #expect(try UPnPSOAP.parseResponse(response) == .ok(["NewExternalIPAddress": "198.51.100.4"]))
        #expect(!UPnPSOAP.isComplete(Array(response.dropLast(2))))
    }

    @Test("isComplete waits for the announced body")
    func completeness() {
        let full = Self.externalIPResponse
        let headEnd = UPnPBytes.find(bytes("\r\n\r\n"), in: full, from: 0)! + 4
        #expect(!UPnPSOAP.isComplete([]))
        #expect(!UPnPSOAP.isComplete(Array(full.prefix(headEnd - 1))))
        #expect(!UPnPSOAP.isComplete(Array(full.prefix(headEnd))))
        #expect(!UPnPSOAP.isComplete(Array(full.dropLast())))
        #expect(UPnPSOAP.isComplete(full + bytes("extra")))
        // More bytes cannot help: stop reading and let parseResponse refuse.
        #expect(UPnPSOAP.isComplete(bytes("HTTP/1.1 200 OK\r\nX: \u{1}\r\n")))
        #expect(UPnPSOAP.isComplete(bytes("garbage\r\n")))
        #expect(UPnPSOAP.isComplete([UInt8](repeating: 0x41, count: UPnPSOAP.maxResponseBytes + 1)))
    }

    @Test("hostile responses are refused")
    func hostileResponses() {
        let tooLongValue = String(repeating: "1", count: 257)
        let hostile: [[UInt8]] = [
            httpResponse("200 OK", body: externalIPBody("203.0.113.7\u{1}")),
            httpResponse("200 OK", body: externalIPBody("203.0.\u{85}113.7")),
            httpResponse("200 OK", body: externalIPBody("203.0.\u{7F}113.7")),
            httpResponse("200 OK", body: externalIPBody("203.0.113.7\r\n\r\nX")),
            httpResponse("200 OK", body: externalIPBody(tooLongValue)),
            httpResponse("200 OK", body: externalIPBody(String(repeating: "9", count: 60_000))),
            httpResponse("200 OK", body: externalIPBody("<b>nested</b>")),
            httpResponse("200 OK", body: externalIPBody("&#49;")),
            httpResponse("200 OK", body: soapEnvelope("<u:XResponse><\(String(repeating: "N", count: 65))>1</\(String(repeating: "N", count: 65))></u:XResponse>")),
            httpResponse("200 OK", body: soapEnvelope("<u:XResponse><A>1</A><A>2</A></u:XResponse>")),
            httpResponse("200 OK", body: soapEnvelope("<u:XResponse><A>1</A></u:XResponse><u:YResponse/>")),
            httpResponse("200 OK", body: soapEnvelope("<u:Other/>")),
            httpResponse("200 OK", body: "<html>hello</html>"),
            httpResponse("200 OK", body: "<!DOCTYPE lol [<!ENTITY a \"aaaa\">]><s:Envelope/>"),
            httpResponse("200 OK", body: ""),
            httpResponse("404 Not Found", body: "no"),
            httpResponse("401 Unauthorized", body: externalIPBody("1.2.3.4")),
            httpResponse("500 Internal Server Error", body: "oops"),
            httpResponse("500 Internal Server Error", body: faultBody(code: "seven", description: "x")),
            httpResponse("500 Internal Server Error", body: soapEnvelope("<s:Fault><faultstring>x</faultstring></s:Fault>")),
            httpResponse("500 Internal Server Error", body: externalIPBody("1.2.3.4")),
            httpResponse("200 OK", ["Transfer-Encoding: chunked"], body: "5\r\nhello\r\n0\r\n\r\n"),  // with Content-Length too
            httpResponse("200 OK", ["Transfer-Encoding: gzip"], body: "x", contentLength: false),
            httpResponse("200 OK", ["Content-Length: 5"], body: "x"),
            httpResponse("200 OK", ["Content-Length: -1"], body: "x", contentLength: false),
            httpResponse("200 OK", ["Content-Length: 99999999"], body: "x", contentLength: false),
            httpResponse("200 OK", ["Transfer-Encoding: chunked"], body: "fffffff\r\nx", contentLength: false),
            httpResponse("200 OK", ["Transfer-Encoding: chunked"], body: "zz\r\nx\r\n0\r\n\r\n", contentLength: false),
            httpResponse("200 OK", ["Transfer-Encoding: chunked"], body: "2\r\nxyz\r\n0\r\n\r\n", contentLength: false),
            bytes("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n"),  // the head never ends
            bytes("HTTP/2 200\r\n\r\n"),
            httpResponse("200 OK", Array(repeating: "X: y", count: 65), body: externalIPBody("1.2.3.4")),
            httpResponse("200 OK", body: externalIPBody("1.2.3.4") + String(repeating: " ", count: UPnPSOAP.maxResponseBytes)),
        ]
        for response in hostile {
            #expect(isRefused { () throws(CowatchError) in try UPnPSOAP.parseResponse(response) }, "\(String(decoding: response.prefix(160), as: UTF8.self))")
        }
    }

    // MARK: Truncation and noise

    @Test("every truncation is refused or incomplete, never a trap")
    func truncations() throws {
        let ssdp = bytes(Self.miniupnpdReply)
        for length in 0..<ssdp.count {
            if let response = try? SSDP.parseResponse(Array(ssdp.prefix(length)), from: "192.168.1.1") {
                #expect(response.location.host == "192.168.1.1")
            }
        }
        let description = bytes(Self.rootDesc)
        let fullService = try IGDDescription.connectionService(in: description)
        for length in 0..<description.count {
            if let service = try? IGDDescription.connectionService(in: Array(description.prefix(length))) {
                #expect(service == fullService)  // only once </root> has arrived
            }
        }
        let chunkedResponse = Self.chunked(externalIPBody("198.51.100.4"), sizes: [5, 40])
        for full in [Self.externalIPResponse, Self.conflictResponse, chunkedResponse] {
            let result = try UPnPSOAP.parseResponse(full)
            for length in 0..<full.count {
                let prefix = Array(full.prefix(length))
                #expect(!UPnPSOAP.isComplete(prefix))
                if let partial = try? UPnPSOAP.parseResponse(prefix) {
                    // Only a chunked body whose trailers were cut is whole without its end.
                    #expect(partial == result && full == chunkedResponse)
                }
            }
        }
    }

    @Test("random bytes and mutated messages never trap")
    func noise() {
        var random = SeededRandom(seed: 0x5EED_1900)
        let samples = [
            bytes(Self.miniupnpdReply), bytes(Self.rootDesc), Self.externalIPResponse, Self.conflictResponse,
            Self.chunked(externalIPBody("198.51.100.4"), sizes: [3, 17]),
        ]
        let tokens = [
            "<", ">", "</", "/>", "&amp;", "&", ";", "<![CDATA[", "]]>", "<!--", "-->", "<?", "?>", "\"", "'", "\r\n", "\n", ":", "0\r\n",
            "HTTP/1.1 200 OK\r\n", "HTTP/1.1 500 x\r\n", "Content-Length: 10\r\n", "Transfer-Encoding: chunked\r\n", "\r\n\r\n",
            "<s:Envelope>", "<s:Body>", "<u:AResponse>", "<s:Fault>", "<UPnPError>", "<errorCode>", "</errorCode>", "<service>",
            "<serviceType>urn:schemas-upnp-org:service:WANIPConnection:1</serviceType>", "<controlURL>", "</controlURL>",
            "LOCATION: http://10.0.0.1:80/", "ffff\r\n",
        ].map(bytes)
        func check(_ input: [UInt8]) {
            if let response = try? SSDP.parseResponse(input, from: "10.0.0.1") { #expect(response.location.host == "10.0.0.1") }
            _ = try? IGDDescription.connectionService(in: input)
            _ = UPnPSOAP.isComplete(input)
            if case .ok(let arguments)? = try? UPnPSOAP.parseResponse(input) {
                for (name, value) in arguments {
                    #expect(name.utf8.count <= 64 && value.utf8.count <= 256)
                    #expect(!value.unicodeScalars.contains(where: ControlCharacters.isControl))
                }
            }
        }
        for _ in 0..<1500 { check(random.bytes(random.below(400))) }
        for _ in 0..<1500 {
            var input: [UInt8] = []
            for _ in 0..<random.below(60) { input += random.below(4) == 0 ? random.bytes(random.below(6)) : tokens[random.below(tokens.count)] }
            check(input)
        }
        for _ in 0..<1500 {
            var input = samples[random.below(samples.count)]
            for _ in 0...random.below(4) {
                let at = random.below(input.count + 1)
                switch random.below(3) {
                case 0: if at < input.count { input[at] = UInt8(truncatingIfNeeded: random.next()) }
                case 1: input.insert(contentsOf: tokens[random.below(tokens.count)], at: at)
                default: input.removeSubrange(at..<min(input.count, at + random.below(20)))
                }
            }
            check(input)
        }
    }
}
