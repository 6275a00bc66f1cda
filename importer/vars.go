package importer

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/mcpmux/mcpmux/config"
)

// input is one entry of a VS Code file's "inputs": a value VS Code asks the
// user for when it starts the server. mcpmux cannot ask, so a reference to
// an input becomes a reference to an environment variable.
type input struct {
	ID          string `json:"id"`
	Description string `json:"description"`
	Password    bool   `json:"password"`
}

// translator rewrites the ${...} references of a client config into the
// forms mcpmux expands (see config.Expand): those it understands stay, the
// clients' own variables are replaced where their value is known, and the
// rest become environment references or literal text, each with a note.
type translator struct {
	inputs    map[string]input
	workspace string // replaces ${workspaceFolder}; empty when unknown
}

// translate returns s in mcpmux's syntax, appending to notes a note for each
// reference it had to change. Notes name references, never values.
func (t *translator) translate(s string, field, key string, notes *[]Note) string {
	if !strings.Contains(s, "${") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		if i > 0 && s[i-1] == '\\' { // already a literal ${ for mcpmux
			b.WriteString(s[:i+2])
			s = s[i+2:]
			continue
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			*notes = append(*notes, Note{field, key, `an unterminated "${" is kept as literal text`})
			b.WriteString(`\` + s[i:])
			return b.String()
		}
		ref := s[i+2 : i+end]
		b.WriteString(t.ref(ref, field, key, notes))
		s = s[i+end+1:]
	}
}

// ref translates the inside of one ${...}.
func (t *translator) ref(ref, field, key string, notes *[]Note) string {
	note := func(format string, args ...any) {
		*notes = append(*notes, Note{field, key, fmt.Sprintf(format, args...)})
	}
	kind, arg, hasArg := strings.Cut(ref, ":")
	switch {
	case ref == "userHome":
		return "${env:HOME}"
	case ref == "pathSeparator" || ref == "/":
		return "/"
	case ref == "workspaceFolder" || ref == "workspaceFolderBasename":
		if t.workspace != "" {
			if ref == "workspaceFolder" {
				return escapeRefs(t.workspace)
			}
			return escapeRefs(filepath.Base(t.workspace))
		}
		v := envName(ref)
		note("${%s} is unknown outside the editor: set %s in mcpmux's environment", ref, v)
		return "${oc.env:" + v + "}"
	case hasArg && kind == "input":
		v := envName(arg)
		what := ""
		if in, ok := t.inputs[arg]; ok && in.Description != "" {
			what = fmt.Sprintf(" (%s)", in.Description)
		}
		note("from VS Code input %q%s, which mcpmux cannot prompt for: set %s in its environment", arg, what, v)
		return "${oc.env:" + v + "}"
	case hasArg && (kind == "env" || kind == "oc.env"):
		return "${" + ref + "}"
	case !hasArg && config.IsVarName(ref):
		return "${" + ref + "}" // ${VAR}, as Claude Code writes it
	case strings.Contains(ref, ":-") && config.IsVarName(strings.SplitN(ref, ":-", 2)[0]):
		return "${" + ref + "}" // ${VAR:-default}
	}
	// Anything else mcpmux would fail to expand. The client may have meant
	// it literally (Claude Desktop expands nothing), so keep the text. The
	// note names only well-known VS Code variable kinds, since the text may
	// be part of a secret.
	if hasArg && (kind == "command" || kind == "config") {
		note("VS Code variable ${%s:…} has no equivalent in mcpmux and is kept as literal text", kind)
	} else {
		note(`a "${…}" that is not a variable reference mcpmux understands is kept as literal text`)
	}
	return `\${` + ref + "}"
}

// escapeRefs makes s literal for mcpmux's expansion.
func escapeRefs(s string) string { return strings.ReplaceAll(s, "${", `\${`) }

// envName turns an input id such as "github-token" into the environment
// variable name GITHUB_TOKEN.
func envName(id string) string {
	var b strings.Builder
	for i, r := range id {
		switch {
		case r >= 'a' && r <= 'z':
			b.WriteRune(r - 'a' + 'A')
		case r >= 'A' && r <= 'Z', r == '_':
			if i > 0 && r >= 'A' && r <= 'Z' && isLower(id[i-1]) {
				b.WriteByte('_') // workspaceFolder → WORKSPACE_FOLDER
			}
			b.WriteRune(r)
		case r >= '0' && r <= '9':
			if b.Len() == 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "INPUT"
	}
	return b.String()
}

func isLower(c byte) bool { return c >= 'a' && c <= 'z' }
