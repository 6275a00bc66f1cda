package aggregator

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"

	"github.com/mcpmux/mcpmux/aggregator/toolsearch"
)

// searchIndex is a catalog's index for mcpmux__find_tools (package
// toolsearch), built at the first search rather than with the catalog:
// most clients never search, and a catalog is rebuilt at every change of
// any server's list. Building it reuses the analysis of every tool the
// previous catalog's index had, so that after a reload only new and
// changed tools are analysed.
type searchIndex struct {
	once sync.Once
	mu   sync.Mutex        // guards ix and prev
	ix   *toolsearch.Index // nil until built
	prev *toolsearch.Index // the latest index of an earlier catalog, until ix is built
}

// SearchIndex returns the catalog's search index, building it on first
// use. Meta tools are not in it.
func (c *Catalog) SearchIndex() *toolsearch.Index {
	c.search.once.Do(func() {
		docs := c.SearchDocs()
		c.search.mu.Lock()
		prev := c.search.prev
		c.search.mu.Unlock()
		ix := toolsearch.Build(docs, toolsearch.Options{}, prev)
		c.search.mu.Lock()
		c.search.ix, c.search.prev = ix, nil
		c.search.mu.Unlock()
	})
	c.search.mu.Lock()
	defer c.search.mu.Unlock()
	return c.search.ix
}

// SearchDocs are the catalog's tools as its search index sees them, in
// list order.
func (c *Catalog) SearchDocs() []toolsearch.Doc {
	instructions := make(map[string]string, len(c.Instructions))
	for _, in := range c.Instructions {
		instructions[in.Server] = in.Text
	}
	docs := make([]toolsearch.Doc, 0, len(c.entries))
	for _, e := range c.entries {
		docs = append(docs, toolsearch.Doc{Name: e.Name, Title: e.Def.Title, Description: e.Def.Description,
			Server: e.Server, Instructions: instructions[e.Server], Params: e.params})
	}
	return docs
}

// latest is the index a later catalog may reuse: this one's if built,
// else the one it would have reused itself.
func (s *searchIndex) latest() *toolsearch.Index {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ix != nil {
		return s.ix
	}
	return s.prev
}

// paramsOf lists the top-level parameters of an input schema, by name.
func paramsOf(schema json.RawMessage) []toolsearch.Param {
	var s struct {
		Properties map[string]struct {
			Description string `json:"description"`
			Title       string `json:"title"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil || len(s.Properties) == 0 {
		return nil
	}
	out := make([]toolsearch.Param, 0, len(s.Properties))
	for name, p := range s.Properties {
		d := p.Description
		if d == "" {
			d = p.Title
		}
		out = append(out, toolsearch.Param{Name: name, Description: d})
	}
	slices.SortFunc(out, func(a, b toolsearch.Param) int { return strings.Compare(a.Name, b.Name) })
	return out
}
