package logs

import (
	"log/slog"
	"reflect"
	"testing"
)

func TestParseChildLine(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       *ChildRecord // nil: not a structured line
	}{
		{"slog text",
			`time=2026-12-04T08:38:22.182Z level=INFO msg="fetch server ready on stdio" timeout=30s max_bytes=10485760 allow_private_networks=false`,
			&ChildRecord{slog.LevelInfo, "fetch server ready on stdio", []Field{{"timeout", "30s"}, {"max_bytes", "10485760"}, {"allow_private_networks", "false"}}}},
		{"slog text, quotes and escapes",
			`time=2026-12-04T08:38:22.182Z level=WARN msg="said \"no\"" err="a b" g.k=v`,
			&ChildRecord{slog.LevelWarn, `said "no"`, []Field{{"err", "a b"}, {"g.k", "v"}}}},
		{"slog text without time", `level=DEBUG+2 msg=hi`, &ChildRecord{slog.LevelDebug + 2, "hi", nil}},
		{"slog JSON",
			`{"time":"2026-12-04T08:38:22Z","level":"ERROR","msg":"failed","error":"boom","n":3,"ok":true,"group":{"a":1}}`,
			&ChildRecord{slog.LevelError, "failed", []Field{{"error", "boom"}, {"n", "3"}, {"ok", "true"}, {"group", `{"a":1}`}}}},
		{"pino", `{"level":40,"time":1733301502000,"pid":7,"hostname":"h","msg":"slow"}`,
			&ChildRecord{slog.LevelWarn, "slow", []Field{{"pid", "7"}, {"hostname", "h"}}}},
		{"zap", `{"level":"fatal","ts":1733301502.5,"caller":"main.go:12","msg":"bye"}`,
			&ChildRecord{slog.LevelError, "bye", []Field{{"caller", "main.go:12"}}}},
		{"message and no level", `{"message":"hello","severity":"warning"}`, &ChildRecord{slog.LevelWarn, "hello", nil}},

		{"plain text", `Secure MCP Filesystem Server running on stdio`, nil},
		{"logfmt without msg", `level=INFO something happened`, nil},
		{"text that starts like logfmt", `time=5 is up, level=INFO msg=x`, nil},
		{"unterminated quote", `level=INFO msg="half`, nil},
		{"JSON without a message", `{"level":"info","a":1}`, nil},
		{"not JSON", `{oops`, nil},
		{"two objects", `{"msg":"a"} {"msg":"b"}`, nil},
		{"a JSON list", `["msg"]`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParseChildLine([]byte(tc.line))
			switch {
			case tc.want == nil && ok:
				t.Errorf("parsed as %+v, want a plain line", got)
			case tc.want != nil && !ok:
				t.Errorf("not parsed, want %+v", *tc.want)
			case tc.want != nil && !reflect.DeepEqual(got, *tc.want):
				t.Errorf("got %+v, want %+v", got, *tc.want)
			}
		})
	}
}
