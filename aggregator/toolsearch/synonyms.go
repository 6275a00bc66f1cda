package toolsearch

import (
	"slices"
	"strings"
	"sync"
)

// synonymWeight is a synonym's weight in a query, against 1 for a word the
// query has: a tool described in the query's own words ranks first.
const synonymWeight = 0.4

// synonymGroups are words that tools and their users use for one thing.
// Each group expands a query word to the others. Kept small and general:
// words of tool vocabulary, not of any one catalog.
var synonymGroups = []string{
	"search find lookup query seek",
	"fetch download retrieve grab",
	"web internet online",
	"page website site webpage url link",
	"file document doc",
	"directory folder dir",
	"delete remove erase",
	"create make new add",
	"list enumerate show",
	"run execute exec eval",
	"code script program",
	"image picture photo img",
	"screenshot snapshot capture",
	"click press tap",
	"type fill enter input",
	"navigate go open visit browse",
	"browser chrome chromium",
	"audio sound speech voice",
	"transcribe transcription",
	"video movie clip",
	"read view open load",
	"write save store",
	"edit modify change update",
	"move rename",
	"summarize summary",
	"wait sleep pause delay",
	"close quit exit",
	"archive wayback snapshot",
	"scrape crawl extract",
	"math calculate compute",
	"repo repository",
	"issue ticket bug",
	"email mail",
	"message chat",
	"calendar event schedule meeting",
	"weather forecast",
	"translate translation",
	"sql database db",
	"spreadsheet excel csv",
	"pdf document",
	"tab window",
	"size dimension",
	"random generate",
	"sum add",
	"info information metadata detail",
	"wiki wikipedia encyclopedia",
	"reason think reasoning",
	"describe caption",
	"key keyboard",
	"upload attach",
}

var (
	synonymsOnce sync.Once
	synonymWords map[string][]string // word → its synonyms
	synonymStems map[string][]string // stem → the synonyms of its words
)

// synonymsOf returns the synonyms of a query word: of the word itself, or,
// unless exact, of any word with its stem.
func synonymsOf(w string, exact bool) []string {
	synonymsOnce.Do(func() {
		synonymWords, synonymStems = map[string][]string{}, map[string][]string{}
		for _, g := range synonymGroups {
			ws := strings.Fields(g)
			for _, w := range ws {
				for _, s := range ws {
					if s == w {
						continue
					}
					if !slices.Contains(synonymWords[w], s) {
						synonymWords[w] = append(synonymWords[w], s)
					}
					if st := stem(w); !slices.Contains(synonymStems[st], s) && stem(s) != st {
						synonymStems[st] = append(synonymStems[st], s)
					}
				}
			}
		}
	})
	if exact {
		return synonymWords[w]
	}
	return synonymStems[stem(w)]
}
