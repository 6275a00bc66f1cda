package logs

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"strconv"
	"strings"
)

// ChildRecord is a log line that a child process wrote in a structured
// format, taken apart so that it can be logged as a record of mcpmux's own
// log instead of as a message quoting the child's line.
type ChildRecord struct {
	Level  slog.Level
	Msg    string
	Fields []Field // the other fields, in the child's order; its time left out
}

// Field is one key and value of a ChildRecord. A value that is not a
// string in JSON is kept as its JSON text.
type Field struct{ Key, Value string }

// ParseChildLine parses a line in one of the structured formats children
// log in: slog's text handler (logfmt: time=... level=INFO msg="..." k=v)
// and one JSON object per line (slog's JSON handler, zap, logrus, pino,
// bunyan). ok is false for anything else, which is logged as it is.
func ParseChildLine(line []byte) (r ChildRecord, ok bool) {
	switch {
	case bytes.HasPrefix(line, []byte("{")):
		return parseJSONLine(line)
	case bytes.HasPrefix(line, []byte("time=")), bytes.HasPrefix(line, []byte("level=")):
		return parseLogfmtLine(line)
	}
	return ChildRecord{}, false
}

// parseLogfmtLine parses key=value pairs separated by spaces, values bare
// or Go-quoted (as slog's text handler writes them). It takes the line
// only if all of it parses and it has a level and a msg.
func parseLogfmtLine(line []byte) (ChildRecord, bool) {
	var r ChildRecord
	hasLevel, hasMsg := false, false
	s := string(line)
	for s = strings.TrimLeft(s, " "); s != ""; s = strings.TrimLeft(s, " ") {
		eq := strings.IndexByte(s, '=')
		if eq <= 0 || strings.ContainsAny(s[:eq], " \"") {
			return ChildRecord{}, false
		}
		key, rest := s[:eq], s[eq+1:]
		var value string
		if strings.HasPrefix(rest, `"`) {
			quoted, err := strconv.QuotedPrefix(rest)
			if err != nil {
				return ChildRecord{}, false
			}
			value, _ = strconv.Unquote(quoted)
			rest = rest[len(quoted):]
			if rest != "" && rest[0] != ' ' {
				return ChildRecord{}, false
			}
		} else {
			end := strings.IndexByte(rest, ' ')
			if end < 0 {
				end = len(rest)
			}
			value, rest = rest[:end], rest[end:]
		}
		switch key {
		case "time":
		case "level":
			r.Level, hasLevel = parseLevel(value), true
		case "msg":
			r.Msg, hasMsg = value, true
		default:
			r.Fields = append(r.Fields, Field{key, value})
		}
		s = rest
	}
	return r, hasLevel && hasMsg
}

// parseJSONLine parses a JSON object, keeping the order of its keys. Its
// message is "msg" or "message"; its level "level", "lvl" or "severity"
// (a name, or a number as pino and bunyan write); its time, left out,
// "time", "ts", "timestamp" or "@timestamp".
func parseJSONLine(line []byte) (ChildRecord, bool) {
	var r ChildRecord
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ChildRecord{}, false
	}
	hasMsg := false
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return ChildRecord{}, false
		}
		key, _ := t.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return ChildRecord{}, false
		}
		var value string
		if json.Unmarshal(raw, &value) != nil {
			value = string(raw) // a number, a bool, an object: its JSON
		}
		switch key {
		case "time", "ts", "timestamp", "@timestamp":
		case "msg", "message":
			if !hasMsg {
				r.Msg, hasMsg = value, true
				continue
			}
			r.Fields = append(r.Fields, Field{key, value})
		case "level", "lvl", "severity":
			r.Level = parseLevel(value)
		default:
			r.Fields = append(r.Fields, Field{key, value})
		}
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return ChildRecord{}, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return ChildRecord{}, false // more than one object
	}
	return r, hasMsg
}

// parseLevel reads a level as slog (INFO, WARN+2), other loggers (warning,
// fatal, trace) or pino and bunyan (10 to 60) write it; Info if unknown.
func parseLevel(s string) slog.Level {
	var l slog.Level
	if l.UnmarshalText([]byte(s)) == nil {
		return l
	}
	switch strings.ToLower(s) {
	case "trace", "debug", "10", "20":
		return slog.LevelDebug
	case "warning", "40":
		return slog.LevelWarn
	case "fatal", "panic", "dpanic", "critical", "crit", "alert", "emergency", "err", "50", "60":
		return slog.LevelError
	}
	return slog.LevelInfo
}
