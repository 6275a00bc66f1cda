package journal

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// DefaultTask is the file stem of calls that name no task.
const DefaultTask = "_default"

// Ext is the extension of journal files; a rotated file adds ".1".
const Ext = ".jsonl"

// FileStem is the file name (without Ext) of a task's journal: the task
// id itself when it is made of letters, digits, '.', '_' and '-' only,
// does not start with '.' or '_' and is short; otherwise those characters
// with every other one as '_', and a short hash of the id, so that two ids
// never share a file.
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
	if len(safe) > 100 {
		safe = safe[:100]
	}
	if safe[0] == '.' {
		safe = "_" + safe[1:]
	}
	sum := sha256.Sum256([]byte(task))
	return safe + "-" + hex.EncodeToString(sum[:4])
}
