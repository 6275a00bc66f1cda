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
	"sync"
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

// stemWeight is a match by stem only, against 1 for the word itself.
const stemWeight = 0.75

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
	byPrint  map[string]*analyzed // by fingerprint, for the next Build
	scratch  sync.Pool            // *scores, one per search at a time
}

// analyzed is what indexing keeps of one document: its terms with their
// frequency per field, and the length of each field in words.
type analyzed struct {
	name   string
	terms  []termFreq
	length [nFields]float64
}

type termFreq struct {
	term string
	tf   [nFields]float32
}

// posting is a document that has a term, with the term's BM25F frequency:
// the sum over fields of its weighted, length-normalised counts.
type posting struct {
	doc int32
	tf  float32
}

// Build indexes docs. Names should be unique; ties are broken by name. If
// prev is not nil, documents it indexed unchanged (with the same options)
// are not analysed again.
func Build(docs []Doc, opts Options, prev *Index) *Index {
	ix := &Index{opts: opts, postings: map[string][]posting{}, byPrint: make(map[string]*analyzed, len(docs))}
	if prev != nil && prev.opts != opts {
		prev = nil
	}
	stems := map[string]string{}
	var total [nFields]float64
	for i := range docs {
		d := &docs[i]
		fp := fingerprint(d)
		a := ix.byPrint[fp]
		if a == nil && prev != nil {
			a = prev.byPrint[fp]
		}
		if a == nil {
			a = analyze(d, opts, stems)
		}
		ix.byPrint[fp] = a
		ix.docs = append(ix.docs, a)
		for f := range nFields {
			total[f] += a.length[f]
		}
	}
	var avgLen [nFields]float64
	if n := float64(len(ix.docs)); n > 0 {
		for f := range nFields {
			avgLen[f] = max(total[f]/n, 1)
		}
	}
	for i, a := range ix.docs {
		var norm [nFields]float64
		for f := range nFields {
			norm[f] = fieldWeight[f] / (1 - fieldB[f] + fieldB[f]*a.length[f]/avgLen[f])
		}
		for _, t := range a.terms {
			var tf float64
			for f := range nFields {
				tf += float64(t.tf[f]) * norm[f]
			}
			ix.postings[t.term] = append(ix.postings[t.term], posting{doc: int32(i), tf: float32(tf)})
		}
	}
	n := len(ix.docs)
	ix.scratch.New = func() any { return &scores{sum: make([]float64, n), best: make([]float64, n)} }
	return ix
}

// scores are a search's per-document sums, and the best score of the
// current query word's terms.
type scores struct {
	sum, best     []float64
	docs, inGroup []int32 // documents with a sum, and with a best
}

// Len is the number of documents indexed.
func (ix *Index) Len() int { return len(ix.docs) }

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

func analyze(d *Doc, opts Options, stems map[string]string) *analyzed {
	a := &analyzed{name: d.Name}
	at := map[string]int{}
	bump := func(f int, t string) {
		i, ok := at[t]
		if !ok {
			i = len(a.terms)
			at[t] = i
			a.terms = append(a.terms, termFreq{term: t})
		}
		a.terms[i].tf[f]++
	}
	add := func(f int, text string) {
		for _, w := range contentWords(text) {
			bump(f, w)
			if !opts.NoStemming {
				st, ok := stems[w]
				if !ok {
					st = stemmed(w)
					stems[w] = st
				}
				bump(f, st)
			}
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

// Hit is one document found.
type Hit struct {
	Name  string
	Score float64
}

// Search returns the best limit documents (all if limit <= 0) that match
// at least one word of query (after stop words), best first, ties by
// name, and how many matched in all; keep, if not nil, says which
// documents may be returned and counted. An empty query, or one of stop
// words only, finds nothing.
func (ix *Index) Search(query string, keep func(name string) bool, limit int) (hits []Hit, total int) {
	qs := ix.queryTerms(query)
	if len(qs) == 0 || len(ix.docs) == 0 {
		return nil, 0
	}
	sc := ix.scratch.Get().(*scores)
	defer ix.scratch.Put(sc)
	// Each word of the query counts once per document: as itself, or as
	// its stem or a synonym, whichever scores best, so that a tool
	// described with several synonyms of one word does not outrank the tool
	// that has the word.
	endGroup := func() {
		for _, d := range sc.inGroup {
			if sc.sum[d] == 0 {
				sc.docs = append(sc.docs, d)
			}
			sc.sum[d] += sc.best[d]
			sc.best[d] = 0
		}
		sc.inGroup = sc.inGroup[:0]
	}
	n := float64(len(ix.docs))
	for i, q := range qs {
		if i > 0 && q.group != qs[i-1].group {
			endGroup()
		}
		list := ix.postings[q.term]
		if len(list) == 0 {
			continue
		}
		df := float64(len(list))
		w := q.weight * math.Log(1+(n-df+0.5)/(df+0.5))
		for _, p := range list {
			tf := float64(p.tf)
			s := w * tf / (k1 + tf)
			if sc.best[p.doc] == 0 {
				sc.inGroup = append(sc.inGroup, p.doc)
			}
			sc.best[p.doc] = max(sc.best[p.doc], s)
		}
	}
	endGroup()
	// The best limit, kept in a heap whose root is the worst of them: a
	// search of 10 000 tools sorts ten, not all that match.
	var top best
	top.limit = limit
	for _, d := range sc.docs {
		s := sc.sum[d]
		sc.sum[d] = 0
		name := ix.docs[d].name
		if keep != nil && !keep(name) {
			continue
		}
		total++
		top.offer(Hit{Name: name, Score: s})
	}
	sc.docs = sc.docs[:0]
	slices.SortFunc(top.hits, func(a, b Hit) int {
		if better(a, b) {
			return -1
		}
		return 1
	})
	return top.hits, total
}

// better orders hits: higher score first, then name.
func better(a, b Hit) bool {
	if c := cmp.Compare(a.Score, b.Score); c != 0 {
		return c > 0
	}
	return a.Name < b.Name
}

// best keeps the best limit hits offered (all if limit <= 0), as a heap
// with the worst at the root once full.
type best struct {
	limit int
	hits  []Hit
}

func (b *best) offer(h Hit) {
	if b.limit <= 0 {
		b.hits = append(b.hits, h)
		return
	}
	if len(b.hits) < b.limit {
		b.hits = append(b.hits, h)
		for i := len(b.hits) - 1; i > 0; {
			parent := (i - 1) / 2
			if !better(b.hits[parent], b.hits[i]) {
				break
			}
			b.hits[parent], b.hits[i] = b.hits[i], b.hits[parent]
			i = parent
		}
		return
	}
	if !better(h, b.hits[0]) {
		return
	}
	b.hits[0] = h
	for i := 0; ; {
		worst, l, r := i, 2*i+1, 2*i+2
		if l < len(b.hits) && better(b.hits[worst], b.hits[l]) {
			worst = l
		}
		if r < len(b.hits) && better(b.hits[worst], b.hits[r]) {
			worst = r
		}
		if worst == i {
			return
		}
		b.hits[i], b.hits[worst] = b.hits[worst], b.hits[i]
		i = worst
	}
}

type queryTerm struct {
	term   string
	weight float64
	group  int // the query word it stands for (itself or a synonym)
}

// queryTerms are the query's terms: each word once, weighted by how often
// the query has it, then (in the same group) its stem at stemWeight and its
// synonyms at synonymWeight, as words or as stems.
func (ix *Index) queryTerms(query string) []queryTerm {
	var ws []string
	count := map[string]float64{}
	for _, w := range contentWords(query) {
		if count[w] == 0 {
			ws = append(ws, w)
		}
		count[w]++
	}
	var out []queryTerm
	for g, w := range ws {
		c := count[w]
		seen := map[string]bool{}
		term := func(t string, weight float64) {
			if !seen[t] {
				seen[t] = true
				out = append(out, queryTerm{term: t, weight: c * weight, group: g})
			}
		}
		term(w, 1)
		if !ix.opts.NoStemming {
			term(stemmed(w), stemWeight)
		}
		if ix.opts.NoSynonyms {
			continue
		}
		for _, s := range synonymsOf(w, ix.opts.NoStemming) {
			if ix.opts.NoStemming {
				term(s, synonymWeight)
			} else {
				term(stemmed(s), synonymWeight)
			}
		}
	}
	return out
}
