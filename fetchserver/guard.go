package fetchserver

import (
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
)

// The address policy. A fetch tool driven by a model is a server-side
// request forgery tool unless it refuses some addresses: a page, a prompt
// injection or a redirect can name the cloud metadata service (which hands
// out credentials) or a service on the host's private network.
//
// The authoritative check runs at dial time on the resolved address
// (dialPolicy.control), so a hostname that resolves to a refused address, a
// DNS answer that changes between two lookups (rebinding), and every hop of
// a redirect chain are all caught. checkURL checks names and literal
// addresses before any lookup, only to fail early with a clearer message.

var (
	// alwaysRefused are link-local and instance-metadata addresses, refused
	// even with AllowPrivateNetworks: nothing a fetch tool should read lives
	// there, and the metadata services give out credentials.
	alwaysRefused = []netip.Prefix{
		netip.MustParsePrefix("169.254.0.0/16"),     // IPv4 link-local, incl. 169.254.169.254 (AWS, GCP, Azure, OCI metadata)
		netip.MustParsePrefix("fe80::/10"),          // IPv6 link-local
		netip.MustParsePrefix("fd00:ec2::254/128"),  // AWS metadata over IPv6
		netip.MustParsePrefix("100.100.100.200/32"), // Alibaba Cloud metadata
	}
	// privateRanges are refused unless AllowPrivateNetworks: loopback,
	// "this host", RFC 1918 and unique-local networks, carrier-grade NAT
	// space, and deprecated site-local IPv6.
	privateRanges = []netip.Prefix{
		netip.MustParsePrefix("127.0.0.0/8"),
		netip.MustParsePrefix("::1/128"),
		thisNetwork,
		netip.MustParsePrefix("::/128"),
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("172.16.0.0/12"),
		netip.MustParsePrefix("192.168.0.0/16"),
		netip.MustParsePrefix("100.64.0.0/10"),
		netip.MustParsePrefix("fc00::/7"),
		netip.MustParsePrefix("fec0::/10"),
		localNAT64, // RFC 8215: a NAT64 of the local network
	}
	// thisNetwork is 0.0.0.0/8: connecting to 0.0.0.0 reaches this host.
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")
	broadcast   = netip.AddrFrom4([4]byte{255, 255, 255, 255})
	// localNAT64 is local-use NAT64 (RFC 8215): translated to IPv4 inside
	// the local network.
	localNAT64 = netip.MustParsePrefix("64:ff9b:1::/48")

	// metadataHosts are the names of instance-metadata services. They are
	// refused by name before any lookup, as a resolver's search domains can
	// make a short name like "metadata" resolve to anything.
	metadataHosts = map[string]bool{
		"metadata":                   true,
		"metadata.google.internal":   true,
		"metadata.goog":              true,
		"instance-data":              true,
		"instance-data.ec2.internal": true,
		"metadata.tencentyun.com":    true,
	}
)

// refusedError is a fetch refused by the address policy.
type refusedError struct {
	host string // the name or address refused
	// why completes "… is": "a loopback address", …
	why string
	// private is true when AllowPrivateNetworks would have allowed it.
	private bool
}

func (e *refusedError) Error() string {
	return fmt.Sprintf("refused to connect to %s: it is %s", e.host, e.why)
}

// ipv4Form is a kind of IPv6 address that carries an IPv4 address the
// traffic ends up at: a NAT64 gateway, a 6to4 or Teredo relay, or a stack
// that reads an IPv4-compatible address as IPv4 delivers it there. Such an
// address is refused if any IPv4 address it may carry is.
type ipv4Form struct {
	prefix netip.Prefix
	name   string
	// at lists where the IPv4 address may sit: the indexes of its four
	// bytes in the IPv6 address (several for local-use NAT64, whose
	// prefix length the network chooses).
	at [][4]int
	// xor is set when the bytes are stored inverted (a Teredo client).
	xor bool
}

var ipv4Forms = []ipv4Form{
	// ::a.b.c.d, deprecated (RFC 4291); :: and ::1 are themselves.
	{prefix: netip.MustParsePrefix("::/96"), name: "an IPv4-compatible address", at: [][4]int{{12, 13, 14, 15}}},
	// ::ffff:0:a.b.c.d (SIIT, RFC 2765). IPv4-mapped ::ffff:a.b.c.d is
	// unmapped before any check.
	{prefix: netip.MustParsePrefix("::ffff:0:0:0/96"), name: "an IPv4-translated address", at: [][4]int{{12, 13, 14, 15}}},
	// The well-known NAT64 prefix (RFC 6052).
	{prefix: netip.MustParsePrefix("64:ff9b::/96"), name: "a NAT64 address", at: [][4]int{{12, 13, 14, 15}}},
	// Local-use NAT64 (RFC 8215) with the RFC 6052 layouts that fit in it:
	// /48, /56, /64, /96 (bits 64-71 are skipped).
	{prefix: localNAT64, name: "a local-use NAT64 address", at: [][4]int{{6, 7, 9, 10}, {7, 9, 10, 11}, {9, 10, 11, 12}, {12, 13, 14, 15}}},
	// 6to4 (RFC 3056): 2002:AABB:CCDD::/48 is the site of A.B.C.D.
	{prefix: netip.MustParsePrefix("2002::/16"), name: "a 6to4 address", at: [][4]int{{2, 3, 4, 5}}},
	// Teredo (RFC 4380): the server's IPv4 address, and the client's,
	// inverted, in the last 32 bits.
	{prefix: netip.MustParsePrefix("2001::/32"), name: "a Teredo address", at: [][4]int{{4, 5, 6, 7}}},
	{prefix: netip.MustParsePrefix("2001::/32"), name: "a Teredo address", at: [][4]int{{12, 13, 14, 15}}, xor: true},
}

// carried returns the IPv4 addresses f says addr may carry.
func (f *ipv4Form) carried(addr netip.Addr) []netip.Addr {
	b := addr.As16()
	out := make([]netip.Addr, 0, len(f.at))
	for _, at := range f.at {
		var v4 [4]byte
		for i, j := range at {
			v4[i] = b[j]
			if f.xor {
				v4[i] ^= 0xff
			}
		}
		out = append(out, netip.AddrFrom4(v4))
	}
	return out
}

// checkAddr applies the policy to one address; nil means allowed.
func checkAddr(addr netip.Addr, allowPrivate bool) *refusedError {
	addr = addr.Unmap().WithZone("")
	if addr.Is6() && !addr.IsLoopback() && !addr.IsUnspecified() {
		for i := range ipv4Forms {
			f := &ipv4Forms[i]
			if !f.prefix.Contains(addr) {
				continue
			}
			for _, v4 := range f.carried(addr) {
				if r := checkAddr(v4, allowPrivate); r != nil {
					r.why = fmt.Sprintf("%s for %s, which is %s", f.name, v4, r.why)
					r.host = addr.String()
					return r
				}
			}
		}
	}
	for _, p := range alwaysRefused {
		if p.Contains(addr) {
			why := "a link-local address, where cloud metadata services live"
			if !addr.IsLinkLocalUnicast() {
				why = "a cloud metadata service address"
			}
			return &refusedError{host: addr.String(), why: why}
		}
	}
	if addr.IsMulticast() || addr == broadcast {
		return &refusedError{host: addr.String(), why: "not a unicast address"}
	}
	if allowPrivate {
		return nil
	}
	for _, p := range privateRanges {
		if p.Contains(addr) {
			why := "a private network address"
			switch {
			case addr.IsLoopback():
				why = "a loopback address"
			case addr.IsUnspecified() || p == thisNetwork:
				why = "an address of this host"
			case p == localNAT64:
				why = "a local-use NAT64 address, which reaches the local network"
			}
			return &refusedError{host: addr.String(), why: why, private: true}
		}
	}
	return nil
}

// urlError is a URL fetch cannot use, said so the caller can fix it.
type urlError struct{ msg string }

func (e *urlError) Error() string { return e.msg }

// checkURL validates a URL before fetching it, and each redirect target.
func checkURL(u *url.URL, allowPrivate bool) error {
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	case "":
		return &urlError{fmt.Sprintf("%q has no scheme: give a full URL such as https://%s", u.String(), strings.TrimPrefix(u.String(), "//"))}
	default:
		return &urlError{fmt.Sprintf("the %q scheme is not supported: fetch reads http and https URLs only", u.Scheme)}
	}
	host := u.Hostname()
	if host == "" {
		return &urlError{fmt.Sprintf("%q has no host name", u.String())}
	}
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	if metadataHosts[name] {
		return &refusedError{host: host, why: "a cloud metadata service"}
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		if r := checkAddr(addr, allowPrivate); r != nil {
			return r
		}
	}
	// Names such as "localhost" are left to the dial-time check, which
	// sees what they resolve to.
	return nil
}

// dialPolicy enforces the policy on every connection the HTTP client
// makes.
type dialPolicy struct{ allowPrivate bool }

// control is a net.Dialer Control function: it runs after the name was
// resolved and before the connection is made, with the address dialed.
func (g dialPolicy) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		// Dialer always passes a resolved ip:port; refuse anything else.
		return &refusedError{host: address, why: "not an IP address the policy can check"}
	}
	if r := checkAddr(ap.Addr(), g.allowPrivate); r != nil {
		return r
	}
	return nil
}
