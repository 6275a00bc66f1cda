package journal

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode/utf8"
)

// DefaultTask is the file stem of calls that name no task.
const DefaultTask = "_default"

// Ext is the extension of journal files; a rotated file adds ".1".
const Ext = ".jsonl"

// AlteredMark separates what is kept of an altered name (a file stem, a
// task id) from the hash of the whole original: a task's file is
// "a_b~<hash>.jsonl" for "a/b". A literal id never yields it: a task id
// with "~" is not used as a file stem as it is.
const AlteredMark = "~"

// hashHex is the length of the hash of an altered name, in hex digits:
// 96 bits, so that no one finds two ids with one file by trying.
const hashHex = 24

// AlteredSuffix returns AlteredMark and the hash of the whole of s.
func AlteredSuffix(s string) string {
	sum := sha256.Sum256([]byte(s))
	return AlteredMark + hex.EncodeToString(sum[:])[:hashHex]
}

// FileStem is the file name (without Ext) of a task's journal: the task
// id itself when it is made of letters, digits, '.', '_' and '-' only,
// does not start with '.' or '_' and is at most 128 bytes; otherwise its
// first 100 such characters (others as '_') and AlteredSuffix of the
// whole id. The mapping is one to one: an id used as it is has no "~", an
// altered one ends in the hash of the whole id.
func FileStem(task string) string {
	if task == "" {
		return DefaultTask
	}
	safe := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		}
		return '_'
	}, task)
	if safe == task && len(task) <= 128 && task[0] != '.' && task[0] != '_' {
		return task
	}
	// safe is ASCII (every other rune became one '_'): any cut is whole.
	if len(safe) > 100 {
		safe = safe[:100]
	}
	if safe[0] == '.' {
		safe = "_" + safe[1:]
	}
	return safe + AlteredSuffix(task)
}

// CutUTF8 returns the longest prefix of s of at most n bytes that does
// not end inside a UTF-8 sequence.
func CutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
