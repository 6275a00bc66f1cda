package fetchserver

import (
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
)

func TestCheckAddr(t *testing.T) {
	for _, tc := range []struct {
		addr string
		// refused without and with AllowPrivateNetworks
		refused, refusedAllowed bool
	}{
		{"93.184.215.14", false, false},
		{"2606:2800:21f:cb07:6820:80da:af6b:8b2c", false, false},
		{"8.8.8.8", false, false},
		{"127.0.0.1", true, false},
		{"127.5.6.7", true, false},
		{"::1", true, false},
		{"::ffff:127.0.0.1", true, false},
		{"0.0.0.0", true, false},
		{"::", true, false},
		{"10.0.0.1", true, false},
		{"172.16.0.1", true, false},
		{"172.31.255.255", true, false},
		{"172.32.0.1", false, false},
		{"192.168.1.1", true, false},
		{"100.64.0.1", true, false},
		{"fd12:3456::1", true, false},
		{"64:ff9b::a00:1", true, false}, // NAT64 of 10.0.0.1
		{"64:ff9b::a9fe:a9fe", true, true},
		{"64:ff9b::808:808", false, false},
		// IPv4-compatible (::/96) and IPv4-translated (::ffff:0:0:0/96).
		{"::127.0.0.1", true, false},
		{"::10.1.2.3", true, false},
		{"::169.254.169.254", true, true},
		{"::100.100.100.200", true, true},
		{"::8.8.8.8", false, false},
		{"::ffff:0:127.0.0.1", true, false},
		{"::ffff:0:169.254.169.254", true, true},
		{"::ffff:169.254.169.254", true, true}, // IPv4-mapped
		{"::ffff:10.0.0.1", true, false},
		// Local-use NAT64 (64:ff9b:1::/48): a local network, and the
		// metadata service wherever the layout puts it.
		{"64:ff9b:1::808:808", true, false},
		{"64:ff9b:1::a9fe:a9fe", true, true},       // /96
		{"64:ff9b:1:a9fe:a9:fe00::", true, true},   // /48
		{"64:ff9b:1:a9:fea9:fe00::", true, true},   // /56
		{"64:ff9b:1:0:a9:fea9:fe00:0", true, true}, // /64
		{"64:ff9b:2::a9fe:a9fe", false, false},     // not NAT64: a public address
		// 6to4 (2002::/16) of the embedded IPv4 address.
		{"2002:7f00:1::1", true, false},
		{"2002:c0a8:101::", true, false},
		{"2002:a9fe:a9fe::1", true, true},
		{"2002:808:808::1", false, false},
		// Teredo (2001::/32): server, and client inverted.
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", false, false}, // RFC 4380's example: 65.54.227.120, 192.0.2.45
		{"2001:0:808:808::80ff:fffe", true, false},             // client 127.0.0.1
		{"2001:0:a9fe:a9fe::1", true, true},                    // server 169.254.169.254
		{"2001:db8::1", false, false},                          // documentation, not Teredo
		{"169.254.169.254", true, true},
		{"169.254.0.1", true, true},
		{"::ffff:169.254.169.254", true, true},
		{"fe80::1", true, true},
		{"fe80::1%eth0", true, true},
		{"fd00:ec2::254", true, true},
		{"100.100.100.200", true, true},
		{"224.0.0.1", true, true},
		{"ff02::1", true, true},
		{"255.255.255.255", true, true},
	} {
		addr := netip.MustParseAddr(tc.addr)
		if got := checkAddr(addr, false) != nil; got != tc.refused {
			t.Errorf("checkAddr(%s, private refused): refused = %v, want %v", tc.addr, got, tc.refused)
		}
		if got := checkAddr(addr, true) != nil; got != tc.refusedAllowed {
			t.Errorf("checkAddr(%s, private allowed): refused = %v, want %v", tc.addr, got, tc.refusedAllowed)
		}
	}
}

func TestDialPolicyControl(t *testing.T) {
	// What the dialer passes after resolving a name.
	g := dialPolicy{allowPrivate: false}
	var refused *refusedError
	if err := g.control("tcp4", "127.0.0.1:8080", nil); !errors.As(err, &refused) || !refused.private {
		t.Errorf("control(127.0.0.1) = %v, want a private refusal", err)
	}
	if err := g.control("tcp6", "[fe80::1%lo]:80", nil); !errors.As(err, &refused) || refused.private {
		t.Errorf("control(fe80::1) = %v, want a refusal that nothing allows", err)
	}
	if err := g.control("tcp4", "1.1.1.1:443", nil); err != nil {
		t.Errorf("control(1.1.1.1) = %v, want nil", err)
	}
	if err := (dialPolicy{allowPrivate: true}).control("tcp4", "169.254.169.254:80", nil); err == nil {
		t.Error("control(169.254.169.254) with private networks allowed = nil, want a refusal")
	}
}

func TestDescribeDNSErrors(t *testing.T) {
	f := newFetcher(&Options{})
	notFound := &net.DNSError{Err: "no such host", Name: "no-such-site.example", IsNotFound: true}
	if got := f.describe(notFound, "https://no-such-site.example/"); !strings.Contains(got, `Cannot resolve host "no-such-site.example": no such host. Check the spelling`) {
		t.Errorf("not found: %s", got)
	}
	temp := &net.DNSError{Err: "server misbehaving", Name: "example.com", IsTemporary: true}
	if got := f.describe(temp, "https://example.com/"); !strings.Contains(got, "server misbehaving") || !strings.Contains(got, "try again later") {
		t.Errorf("temporary: %s", got)
	}
}
