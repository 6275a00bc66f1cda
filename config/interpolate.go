package config

import (
	"fmt"
	"strings"
)

// LookupFunc reports the value of an environment variable, like os.LookupEnv.
type LookupFunc func(name string) (string, bool)

// Expand replaces variable references in s, using lookup for values.
//
// The forms understood are those of MiroFlow's OmegaConf configs plus the
// common shell ones:
//
//	${oc.env:VAR}           ${oc.env:VAR,default}
//	${env:VAR}              ${env:VAR,default}
//	${VAR}                  ${VAR:-default}
//
// A default may be empty ("${oc.env:KEY,}") and may be quoted with ' or ".
// A reference to an unset variable without a default is an error, so that a
// missing API key is reported at load time instead of as a confusing failure
// inside the child. `\${` produces a literal `${`, and a `$` not followed by
// `{` is left alone (commands and regexps use it).
func Expand(s string, lookup LookupFunc) (string, error) { return expand(s, lookup, nil) }

// expand is Expand, telling found (if not nil) each value it substitutes:
// the config's secrets, whatever field they are in.
func expand(s string, lookup LookupFunc, found func(value string)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		if i > 0 && s[i-1] == '\\' {
			b.WriteString(s[:i-1])
			b.WriteString("${")
			s = s[i+2:]
			continue
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("unterminated %q", s[i:])
		}
		ref := s[i+2 : i+end]
		val, err := resolve(ref, lookup)
		if err != nil {
			return "", err
		}
		if found != nil {
			found(val)
		}
		b.WriteString(val)
		s = s[i+end+1:]
	}
}

// resolve evaluates the inside of one ${...} reference.
func resolve(ref string, lookup LookupFunc) (string, error) {
	name, def, hasDef := "", "", false
	switch {
	case strings.HasPrefix(ref, "oc.env:"):
		name, def, hasDef = strings.Cut(strings.TrimPrefix(ref, "oc.env:"), ",")
	case strings.HasPrefix(ref, "env:"):
		name, def, hasDef = strings.Cut(strings.TrimPrefix(ref, "env:"), ",")
	case strings.Contains(ref, ":-"):
		name, def, hasDef = strings.Cut(ref, ":-")
	case strings.Contains(ref, ":"):
		resolver, _, _ := strings.Cut(ref, ":")
		return "", fmt.Errorf("unknown resolver %q in ${%s} (supported: oc.env, env)", resolver, ref)
	default:
		name = ref
	}
	name = strings.TrimSpace(name)
	if !IsVarName(name) {
		return "", fmt.Errorf("invalid variable name %q in ${%s}", name, ref)
	}
	if v, ok := lookup(name); ok {
		return v, nil
	}
	if hasDef {
		return unquote(strings.TrimSpace(def)), nil
	}
	return "", &MissingVarError{Name: name}
}

// MissingVarError reports a referenced environment variable that is not set
// and has no default.
type MissingVarError struct{ Name string }

func (e *MissingVarError) Error() string {
	return fmt.Sprintf("environment variable %s is not set and has no default (set it, or write ${oc.env:%s,default})", e.Name, e.Name)
}

// IsVarName reports whether s is a variable name interpolation accepts:
// letters, digits and underscores, not starting with a digit.
func IsVarName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}
