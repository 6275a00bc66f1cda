// Package rewrite applies the rewrite rules of mcpmux.yaml to tool calls.
//
// A rule is of a kind (kind.go: refuse or fallback), which it names with
// kind: or, written without one, which the fields it sets tell. It is
// compiled once, when the settings are loaded, by its kind into small
// values with one job each:
//
//   - refuse: before a call, a matching tool whose arguments hold a URL
//     matching a block_urls pattern (after [NormalizeURL]) is answered with
//     the rule's message, and the server is never called;
//   - redact (a refuse rule with redact: true): after a call, URLs matching
//     the same patterns are removed from the text of a matching tool's
//     result;
//   - fallback: after a call that failed with text containing on_error, the
//     fallback tool is called instead (through the caller's pipeline, so it
//     is itself subject to refusals and the blacklist).
//
// Rules run in the order they are written. Every action of a rule goes
// through one function, [record], which logs it.
package rewrite
