package config

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// Size is a number of bytes. In YAML it is a plain number or a number with
// a unit: "4MiB", "512 KiB", "16MB", "1.5GiB", "100B".
type Size int64

// Defaults of the limits.
const (
	DefaultMaxRequestBytes Size = 4 << 20  // HTTP request bodies
	DefaultMaxResultBytes  Size = 16 << 20 // tool results passed to clients
)

// sizeUnits maps unit suffixes, lower-cased, to their factor.
var sizeUnits = map[string]float64{
	"": 1, "b": 1,
	"k": 1 << 10, "kb": 1e3, "kib": 1 << 10,
	"m": 1 << 20, "mb": 1e6, "mib": 1 << 20,
	"g": 1 << 30, "gb": 1e9, "gib": 1 << 30,
}

// ParseSize reads a size as written in mcpmux.yaml.
func ParseSize(s string) (Size, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	}
	f, ok := sizeUnits[unit]
	n, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || num == "" {
		return 0, fmt.Errorf("%q is not a size (e.g. 4MiB, 512KiB, 1048576)", s)
	}
	return sizeOf(n * f)
}

func sizeOf(f float64) (Size, error) {
	if f < 0 || math.IsNaN(f) || f >= math.MaxInt64 {
		return 0, fmt.Errorf("size %v is out of range", f)
	}
	return Size(f), nil
}

// String writes the size in the largest binary unit that divides it.
func (s Size) String() string {
	for _, u := range []struct {
		name string
		f    Size
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if s >= u.f && s%u.f == 0 {
			return strconv.FormatInt(int64(s/u.f), 10) + u.name
		}
	}
	return strconv.FormatInt(int64(s), 10) + "B"
}

var sizeType = reflect.TypeFor[Size]()

// sizeHook decodes sizes from YAML numbers and strings.
func sizeHook(from, to reflect.Type, data any) (any, error) {
	if to != sizeType {
		return data, nil
	}
	switch v := data.(type) {
	case string:
		return ParseSize(v)
	case int:
		return sizeOf(float64(v))
	case int64:
		return sizeOf(float64(v))
	case uint64:
		return sizeOf(float64(v))
	case float64:
		return sizeOf(v)
	}
	return data, nil
}
