package rewrite

// Spec is one rewrite rule as written in the rewrite: list of mcpmux.yaml
// (package config decodes it as config.Rule). Kind says what the rule does
// (see [KindNames]): "refuse" refuses calls whose arguments hold a URL of
// block_urls (and, with redact, strips those URLs from results);
// "fallback" retries a call that failed with on_error with another tool.
// A rule without a kind is of the kind whose fields it sets. [Compile]
// turns specs into rules.
type Spec struct {
	Name string `koanf:"name"`
	// Kind is one of KindNames; "" means the kind whose fields are set.
	Kind string `koanf:"kind"`
	// Tools are glob patterns matched against exposed and servers' own
	// tool names; empty matches every tool.
	Tools []string `koanf:"tools"`
	// The fields of a refuse rule.
	BlockURLs []string `koanf:"block_urls"`
	Message   string   `koanf:"message"`
	Redact    bool     `koanf:"redact"`
	// The fields of a fallback rule.
	OnError  string        `koanf:"on_error"`
	Fallback *FallbackSpec `koanf:"fallback"`
}

// FallbackSpec is the call a rule makes when a tool failed: Args values
// may use {{name}} to insert the failed call's argument name.
type FallbackSpec struct {
	Tool string         `koanf:"tool"`
	Args map[string]any `koanf:"args"`
}
