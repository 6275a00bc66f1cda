package config

import (
	"fmt"
	"math"
	"regexp"
)

// Price is what one call of a tool costs (cost: and tool_costs: of a
// server file), for the journal and mcpmux_tool_cost_total.
type Price struct {
	PerCall  float64 `koanf:"per_call"`
	Currency string  `koanf:"currency"` // DefaultCurrency when empty
}

// DefaultCurrency is a price's currency when none is given.
const DefaultCurrency = "USD"

var currencyRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,15}$`)

func (p *Price) normalize() {
	if p != nil && p.Currency == "" {
		p.Currency = DefaultCurrency
	}
}

func (p *Price) validate(field string) error {
	if p == nil {
		return nil
	}
	if p.PerCall < 0 || math.IsNaN(p.PerCall) || math.IsInf(p.PerCall, 0) {
		return fieldErr(field+".per_call", fmt.Errorf("%v is not a price (a number, 0 or more)", p.PerCall))
	}
	if !currencyRE.MatchString(p.Currency) {
		return fieldErr(field+".currency", fmt.Errorf("%q is not a currency (a code such as USD, or a unit such as credits)", p.Currency))
	}
	return nil
}

// CallPrice is the price of a call of tool (the server's own name): its
// tool_costs entry, else the server's cost, else nil (no price).
func (s *Server) CallPrice(tool string) *Price {
	if p, ok := s.ToolCosts[tool]; ok && p != nil {
		return p
	}
	return s.Cost
}
