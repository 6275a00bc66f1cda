package aggregator

import "strings"

// Routing of URIs and prompt names that no server listed.
//
// A server may serve resources it does not list (any URI of its scheme, a
// subscription to a URI that appears later) and answers for prompts it
// does not know with its own error. So a request for such a URI or name
// goes to the server it most likely belongs to, which answers as it would
// directly; only a request that belongs to no server is answered by mcpmux.

// uriRoute is where a resource request goes: the server and the URI it
// knows the resource by.
type uriRoute struct {
	server, orig string
}

// routeURI finds the server of an exposed URI, in this order: a listed
// resource; an mcpmux://<server>/ URI; a matching resource template; the
// server whose listed URIs (and template heads) share the longest prefix
// with it, at least its scheme; and, when exactly one server of the
// profile serves resources (for subscriptions: supports them), that one.
func routeURI(v *view, uri string, subscribe bool) (uriRoute, bool) {
	if it := v.resources[uri]; it != nil {
		return uriRoute{it.Server, it.Orig}, true
	}
	if rest, ok := strings.CutPrefix(uri, URIPrefix); ok {
		if server, orig, ok := strings.Cut(rest, "/"); ok && v.hasServer(server) && v.cat.hasServer(server) {
			return uriRoute{server, orig}, true
		}
	}
	if it, ok := v.matchTemplate(uri); ok {
		if it.Key != it.Orig {
			return uriRoute{it.Server, strings.TrimPrefix(uri, URIPrefix+it.Server+"/")}, true
		}
		return uriRoute{it.Server, uri}, true
	}
	best, bestLen, tie := "", 0, false
	var only []string
	for _, r := range v.cat.routes {
		if !v.hasServer(r.name) || (subscribe && !r.subscribe) || !r.resources {
			continue
		}
		only = append(only, r.name)
		for _, p := range r.uriPrefixes {
			n := commonURIPrefix(uri, p)
			switch {
			case n > bestLen:
				best, bestLen, tie = r.name, n, false
			case n == bestLen && n > 0 && best != r.name:
				tie = true
			}
		}
	}
	if bestLen > 0 && !tie {
		return uriRoute{best, uri}, true
	}
	if len(only) == 1 {
		return uriRoute{only[0], uri}, true
	}
	return uriRoute{}, false
}

// commonURIPrefix is the length of the prefix a and b share, or 0 if they
// do not share at least a scheme ("x:").
func commonURIPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	colon := strings.IndexByte(a, ':')
	if colon <= 0 || n <= colon {
		return 0
	}
	return n
}

// hasServer reports whether the catalog was built with the server.
func (c *Catalog) hasServer(name string) bool {
	for _, r := range c.routes {
		if r.name == name {
			return true
		}
	}
	return false
}

// routePrompt finds the server of a prompt name no server listed: the one
// whose prefix starts it, else the only server of the profile with bare
// names that has prompts. It returns the server and its own name for the
// prompt.
func routePrompt(v *view, name string) (server, orig string, ok bool) {
	sep := v.settings.Separator
	prefixes := map[string]string{}
	var bare []string
	for _, r := range v.cat.routes {
		if !v.hasServer(r.name) {
			continue
		}
		if r.prefix == "" {
			if r.prompts {
				bare = append(bare, r.name)
			}
			continue
		}
		prefixes[r.prefix] = r.name
	}
	if prefix, rest, ok := SplitName(name, sep, func(p string) bool { _, ok := prefixes[p]; return ok }); ok {
		return prefixes[prefix], rest, true
	}
	if len(bare) == 1 {
		return bare[0], name, true
	}
	return "", "", false
}

// mapNames replaces, in a server's error message, the name it knows an
// item by with the exposed one, where it stands as a whole name (not
// inside a longer one).
func mapNames(msg, orig, exposed string) string {
	if orig == exposed || orig == "" {
		return msg
	}
	var b strings.Builder
	for {
		i := strings.Index(msg, orig)
		if i < 0 {
			b.WriteString(msg)
			return b.String()
		}
		end := i + len(orig)
		whole := (i == 0 || !nameByte(msg[i-1])) && (end == len(msg) || !nameByte(msg[end]))
		b.WriteString(msg[:i])
		if whole {
			b.WriteString(exposed)
		} else {
			b.WriteString(orig)
		}
		msg = msg[end:]
	}
}
