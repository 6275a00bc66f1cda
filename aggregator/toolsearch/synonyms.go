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
	synonymIndex [2]map[string][]string // [stemmed, not stemmed]: term → its synonyms
)

// synonymsOf returns the synonyms of a query term, as terms of the same
// analysis.
func synonymsOf(term string, opts Options) []string {
	synonymsOnce.Do(func() {
		for i, o := range []Options{{}, {NoStemming: true}} {
			m := map[string][]string{}
			for _, g := range synonymGroups {
				var ts []string
				for _, w := range strings.Fields(g) {
					ts = append(ts, o.terms(w)...)
				}
				for _, t := range ts {
					for _, s := range ts {
						if s != t && !slices.Contains(m[t], s) {
							m[t] = append(m[t], s)
						}
					}
				}
			}
			synonymIndex[i] = m
		}
	})
	i := 0
	if opts.NoStemming {
		i = 1
	}
	return synonymIndex[i][term]
}
