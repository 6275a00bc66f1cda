package rewrite

// Spec is one rewrite rule as written in the rewrite: list of mcpmux.yaml
// (package config decodes it as config.Rule). Which fields a rule uses
// decides what it does: block_urls refuses calls (and, with redact, strips
// those URLs from results), on_error with fallback retries a failed call
// with another tool. [Compile] turns specs into rules.
type Spec struct {
	Name string `koanf:"name"`
	// Tools are glob patterns matched against exposed and servers' own
	// tool names; empty matches every tool.
	Tools     []string      `koanf:"tools"`
	BlockURLs []string      `koanf:"block_urls"`
	Message   string        `koanf:"message"`
	Redact    bool          `koanf:"redact"`
	OnError   string        `koanf:"on_error"`
	Fallback  *FallbackSpec `koanf:"fallback"`
}

// FallbackSpec is the call a rule makes when a tool failed: Args values
// may use {{name}} to insert the failed call's argument name.
type FallbackSpec struct {
	Tool string         `koanf:"tool"`
	Args map[string]any `koanf:"args"`
}
