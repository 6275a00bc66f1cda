package aggregator

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// MaxNameLength is the longest tool name clients accept (Claude, OpenAI:
// ^[a-zA-Z0-9_-]{1,64}$).
const MaxNameLength = 64

// hashLen is the number of hex digits of the hash suffix of shortened names.
const hashLen = 8

// ExposedName returns the client-facing name of tool on a server whose
// namespace is prefix. The result contains only [A-Za-z0-9_-] and has at most
// max bytes (MaxNameLength if max <= 0; at least minNameLength).
//
// A name that had to be changed (invalid characters, too long) gets a short
// hash of the original, so that two originals that sanitise alike still get
// different names and the mapping never depends on which other tools exist:
// it is the same on every start.
func ExposedName(prefix, sep, tool string, max int) string {
	raw := tool
	if prefix != "" {
		raw = prefix + sep + tool
	}
	clean := sanitize(raw)
	max = effectiveMax(max)
	if clean == raw && len(clean) <= max {
		return clean
	}
	return hashedName(clean, raw, max)
}

// PrefixNote explains the exposed names of a server whose namespace prefix
// holds bytes that tool names may not (a '.', say): how they come out, and
// how to get plain ones. It is "" for a prefix that needs no change.
func PrefixNote(prefix, sep string) string {
	clean := sanitize(prefix)
	if prefix == "" || clean == prefix {
		return ""
	}
	return fmt.Sprintf("tool names may hold only letters, digits, '_' and '-', so its tools are exposed as %[1]s%[2]s<tool>_<hash>, the hash keeping them apart from those of a server named %[1]q; for %[1]s%[2]s<tool>, set prefix: %[1]s in its file, or rename it",
		clean, sep)
}

// minNameLength is the smallest bound honoured: a hashed name needs room
// for one character, '_' and the hash.
const minNameLength = hashLen + 2

// effectiveMax is the bound ExposedName applies for max.
func effectiveMax(max int) int {
	switch {
	case max <= 0:
		return MaxNameLength
	case max < minNameLength:
		return minNameLength
	}
	return max
}

// hashedName keeps a readable head of clean and appends a hash of raw.
func hashedName(clean, raw string, max int) string {
	sum := sha256.Sum256([]byte(raw))
	suffix := "_" + hex.EncodeToString(sum[:])[:hashLen]
	head := clean
	if n := max - len(suffix); len(head) > n {
		head = head[:n]
	}
	return strings.TrimRight(head, "_-") + suffix
}

// sanitize replaces every byte outside [A-Za-z0-9_-] with '_'. Multi-byte
// runes become one '_' each.
func sanitize(s string) string {
	ok := true
	for i := 0; i < len(s); i++ {
		if !nameByte(s[i]) {
			ok = false
			break
		}
	}
	if ok && s != "" {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if r < 0x80 && nameByte(byte(r)) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}

func nameByte(c byte) bool {
	return c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// SplitName splits a client-supplied name into a server prefix and a tool
// name at the first separator whose left side is a known prefix, so that
// servers named "a" and "a__b" do not collide. ok is false when no known
// prefix matches; tool is then the whole name.
func SplitName(name, sep string, known func(prefix string) bool) (prefix, tool string, ok bool) {
	if sep == "" {
		return "", name, false
	}
	for i := 0; ; {
		j := strings.Index(name[i:], sep)
		if j < 0 {
			return "", name, false
		}
		i += j
		if i > 0 && known(name[:i]) {
			return name[:i], name[i+len(sep):], true
		}
		i += len(sep)
		if i >= len(name) {
			return "", name, false
		}
	}
}
