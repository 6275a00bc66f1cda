package main

import (
	"slices"
	"strings"
	"unicode"

	"github.com/mcpmux/mcpmux/aggregator"
)

// oldRank is how mcpmux__find_tools ranked before issue 31, kept here
// only to measure against: first by how many words of the query a tool
// matches, then by where (a whole word of the name counts most, then part
// of the name, a word of the description, part of the description), then
// by name.
func oldRank(entries []*aggregator.Entry, query string) []string {
	words := searchWords(query)
	type scored struct {
		e              *aggregator.Entry
		matched, score int
	}
	var all []scored
	for _, e := range entries {
		name := strings.ToLower(e.Name + " " + e.Tool + " " + e.Def.Title)
		desc := strings.ToLower(e.Def.Description)
		nameWords, descWords := searchWords(name), searchWords(desc)
		s := scored{e: e}
		for _, w := range words {
			score := 0
			switch {
			case slices.Contains(nameWords, w):
				score = 8
			case strings.Contains(name, w):
				score = 4
			}
			switch {
			case slices.Contains(descWords, w):
				score += 2
			case strings.Contains(desc, w):
				score++
			}
			if score > 0 {
				s.matched++
				s.score += score
			}
		}
		if s.matched > 0 || len(words) == 0 {
			all = append(all, s)
		}
	}
	slices.SortFunc(all, func(a, b scored) int {
		if a.matched != b.matched {
			return b.matched - a.matched
		}
		if a.score != b.score {
			return b.score - a.score
		}
		return strings.Compare(a.e.Name, b.e.Name)
	})
	out := make([]string, len(all))
	for i, s := range all {
		out[i] = s.e.Name
	}
	return out
}

// searchWords splits s into lower-case words of letters and digits.
func searchWords(s string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	var prev rune
	for _, r := range s {
		switch {
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			flush()
			cur = append(cur, r)
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			cur = append(cur, r)
		default:
			flush()
		}
		prev = r
	}
	flush()
	return words
}
