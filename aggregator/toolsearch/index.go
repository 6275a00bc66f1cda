// Package toolsearch ranks tools for a query written as a person or a
// model would write it ("take a screenshot of the page"): BM25F over the
// fields of each tool — its exposed name split into words, title,
// description, parameter names and descriptions, and its server's name and
// instructions — with light stemming and a small synonym table. It knows
// nothing of MCP or of mcpmux: documents in, ranked keys out.
//
// An Index is immutable and safe for concurrent searches. Build reuses the
// analysis of every document an earlier index already had, so that a
// reload which adds one server analyses that server's tools only.
package toolsearch

import (
	"cmp"
	"math"
	"slices"
	"strings"
)

// Doc is one tool as the index sees it.
type Doc struct {
	// Name identifies the tool (mcpmux's exposed name); it is also
	// indexed, split into words.
	Name         string
	Title        string
	Description  string
	Server       string // the server's name
	Instructions string // the server's instructions, shared by its tools
	Params       []Param
}

// Param is one parameter of a tool's input schema.
type Param struct {
	Name, Description string
}

// The fields of a document and their weights in BM25F: a word of the
// name or title says most about what a tool does; a parameter or the
// server's instructions, least.
const (
	fName = iota
	fTitle
	fDesc
	fParams
	fServer
	fInstr
	nFields
)

var (
	fieldWeight = [nFields]float64{fName: 3, fTitle: 2, fDesc: 1, fParams: 0.4, fServer: 0.8, fInstr: 0.2}
	// fieldB is BM25's length normalisation per field: full for the
	// free-text fields, little for names, whose length says little.
	fieldB = [nFields]float64{fName: 0.3, fTitle: 0.3, fDesc: 0.75, fParams: 0.75, fServer: 0.3, fInstr: 0.75}
)

// k1 is BM25's term-frequency saturation.
const k1 = 1.2

// Options choose the analysis; the zero value is the full ranker. The
// switches exist to measure what each part adds (go run ./bench -only
// toolsearch).
type Options struct {
	NoStemming bool
	NoSynonyms bool
}

// Index ranks a fixed set of documents.
type Index struct {
	opts     Options
	docs     []*analyzed
	postings map[string][]posting
	avgLen   [nFields]float64
	byPrint  map[string]*analyzed // by fingerprint, for the next Build
}

// analyzed is what indexing keeps of one document.
type analyzed struct {
	name   string
	tf     map[string]*[nFields]float32
	length [nFields]float64
}

type posting struct {
	doc int32
	tf  *[nFields]float32
}

// Build indexes docs. Names should be unique; ties are broken by name. If
// prev is not nil, documents it indexed unchanged (with the same options)
// are not analysed again.
func Build(docs []Doc, opts Options, prev *Index) *Index {
	ix := &Index{opts: opts, postings: map[string][]posting{}, byPrint: make(map[string]*analyzed, len(docs))}
	if prev != nil && prev.opts != opts {
		prev = nil
	}
	var total [nFields]float64
	for i := range docs {
		d := &docs[i]
		fp := fingerprint(d)
		a := ix.byPrint[fp]
		if a == nil && prev != nil {
			a = prev.byPrint[fp]
		}
		if a == nil {
			a = analyze(d, opts)
		}
		ix.byPrint[fp] = a
		ix.docs = append(ix.docs, a)
		for f := range nFields {
			total[f] += a.length[f]
		}
	}
	for i, a := range ix.docs {
		for _, t := range sortedTerms(a.tf) {
			ix.postings[t] = append(ix.postings[t], posting{doc: int32(i), tf: a.tf[t]})
		}
	}
	if n := float64(len(ix.docs)); n > 0 {
		for f := range nFields {
			ix.avgLen[f] = max(total[f]/n, 1)
		}
	}
	return ix
}

// Len is the number of documents indexed.
func (ix *Index) Len() int { return len(ix.docs) }

func sortedTerms(m map[string]*[nFields]float32) []string {
	out := make([]string, 0, len(m))
	for t := range m {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// fingerprint identifies a document's content.
func fingerprint(d *Doc) string {
	var b strings.Builder
	for _, s := range []string{d.Name, d.Title, d.Description, d.Server, d.Instructions} {
		b.WriteString(s)
		b.WriteByte(0)
	}
	for _, p := range d.Params {
		b.WriteString(p.Name)
		b.WriteByte(1)
		b.WriteString(p.Description)
		b.WriteByte(0)
	}
	return b.String()
}

func analyze(d *Doc, opts Options) *analyzed {
	a := &analyzed{name: d.Name, tf: map[string]*[nFields]float32{}}
	add := func(f int, text string) {
		for _, t := range opts.terms(text) {
			c := a.tf[t]
			if c == nil {
				c = new([nFields]float32)
				a.tf[t] = c
			}
			c[f]++
			a.length[f]++
		}
	}
	add(fName, d.Name)
	add(fTitle, d.Title)
	add(fDesc, d.Description)
	for _, p := range d.Params {
		add(fParams, p.Name)
		add(fParams, p.Description)
	}
	add(fServer, d.Server)
	add(fInstr, d.Instructions)
	return a
}

func (o Options) terms(s string) []string {
	if !o.NoStemming {
		return terms(s)
	}
	ws := words(s)
	out := ws[:0]
	for _, w := range ws {
		if !stopWords[w] {
			out = append(out, w)
		}
	}
	return out
}

// Hit is one document found.
type Hit struct {
	Name  string
	Score float64
}

// Search returns the documents that match at least one word of query
// (after stop words), best first, ties by name; keep, if not nil, says
// which documents may be returned. An empty query, or one of stop words
// only, finds nothing.
func (ix *Index) Search(query string, keep func(name string) bool) []Hit {
	qs := ix.queryTerms(query)
	if len(qs) == 0 || len(ix.docs) == 0 {
		return nil
	}
	n := float64(len(ix.docs))
	scores := map[int32]float64{}
	for _, q := range qs {
		list := ix.postings[q.term]
		if len(list) == 0 {
			continue
		}
		df := float64(len(list))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for _, p := range list {
			d := ix.docs[p.doc]
			var tf float64
			for f := range nFields {
				if p.tf[f] == 0 {
					continue
				}
				norm := 1 - fieldB[f] + fieldB[f]*d.length[f]/ix.avgLen[f]
				tf += fieldWeight[f] * float64(p.tf[f]) / norm
			}
			scores[p.doc] += q.weight * idf * tf / (k1 + tf)
		}
	}
	hits := make([]Hit, 0, len(scores))
	for doc, s := range scores {
		name := ix.docs[doc].name
		if keep != nil && !keep(name) {
			continue
		}
		hits = append(hits, Hit{Name: name, Score: s})
	}
	if len(hits) == 0 {
		return nil
	}
	slices.SortFunc(hits, func(a, b Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return hits
}

type queryTerm struct {
	term   string
	weight float64
}

// queryTerms are the query's terms, each once, weighted by how often the
// query has it, then its synonyms at synonymWeight (unless the query has
// them itself).
func (ix *Index) queryTerms(query string) []queryTerm {
	var out []queryTerm
	at := map[string]int{}
	for _, t := range ix.opts.terms(query) {
		if i, ok := at[t]; ok {
			out[i].weight++
			continue
		}
		at[t] = len(out)
		out = append(out, queryTerm{term: t, weight: 1})
	}
	if ix.opts.NoSynonyms {
		return out
	}
	for _, q := range slices.Clone(out) {
		for _, s := range synonymsOf(q.term, ix.opts) {
			if _, ok := at[s]; ok {
				continue
			}
			at[s] = len(out)
			out = append(out, queryTerm{term: s, weight: synonymWeight})
		}
	}
	return out
}
