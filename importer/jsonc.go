package importer

import "bytes"

// stripJSONC blanks out the comments and trailing commas that VS Code allows
// in its JSON files ("JSON with comments"), and a leading byte order mark,
// which Windows editors add. It replaces them with spaces instead of
// removing them, so that byte offsets, and with them the line and column of
// a JSON syntax error, stay those of the user's file. Plain JSON passes
// through unchanged.
func stripJSONC(in []byte) []byte {
	b := make([]byte, len(in))
	copy(b, in)
	if bytes.HasPrefix(b, []byte("\xef\xbb\xbf")) {
		copy(b, "   ")
	}
	blankComments(b)
	blankTrailingCommas(b)
	return b
}

func blankComments(b []byte) {
	for i := 0; i < len(b); i++ {
		switch {
		case b[i] == '"':
			i = skipString(b, i)
		case b[i] == '/' && i+1 < len(b) && b[i+1] == '/':
			for ; i < len(b) && b[i] != '\n'; i++ {
				b[i] = ' '
			}
		case b[i] == '/' && i+1 < len(b) && b[i+1] == '*':
			b[i], b[i+1] = ' ', ' '
			for i += 2; i < len(b); i++ {
				if b[i] == '*' && i+1 < len(b) && b[i+1] == '/' {
					b[i], b[i+1] = ' ', ' '
					i++
					break
				}
				if b[i] != '\n' {
					b[i] = ' '
				}
			}
		}
	}
}

func blankTrailingCommas(b []byte) {
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			i = skipString(b, i)
		case ',':
			j := i + 1
			for j < len(b) && (b[j] == ' ' || b[j] == '\t' || b[j] == '\n' || b[j] == '\r') {
				j++
			}
			if j < len(b) && (b[j] == '}' || b[j] == ']') {
				b[i] = ' '
			}
		}
	}
}

// skipString returns the index of the quote closing the string that opens
// at b[i], or the last index if it is unterminated.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return len(b) - 1
}
