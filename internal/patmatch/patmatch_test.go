package patmatch

import (
	"errors"
	"strings"
	"testing"
)

// TestBounds: M2's bounds are errors, not long matches; escapes DuckDB
// refuses are refused.
func TestBounds(t *testing.T) {
	p, err := Compile(Like, "%a_b", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Match(strings.Repeat("a", MaxWork+1)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a string past MaxWork: %v", err)
	}
	if ok, err := p.Match(strings.Repeat("a", 1<<20) + "xb"); err != nil || !ok {
		t.Errorf("1 MiB: %v %v", ok, err)
	}
	if _, err := Compile(Like, strings.Repeat("_", MaxTokens+1), ""); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a pattern past MaxTokens: %v", err)
	}
	// a pattern of literals and % only needs no tables, whatever its length
	long := "%" + strings.Repeat("ab%", MaxTokens)
	if p, err := Compile(Like, long, ""); err != nil {
		t.Errorf("a long literal pattern: %v", err)
	} else if ok, _ := p.Match(strings.Repeat("ab", MaxTokens)); !ok {
		t.Error("a long literal pattern did not match")
	}
	if _, err := Compile(Like, "a", "xy"); !errors.Is(err, ErrEscape) {
		t.Errorf("escape xy: %v", err)
	}
	if _, err := Compile(ILike, "a\\", "\\"); !errors.Is(err, ErrEscapeAtEnd) {
		t.Errorf("a dangling escape: %v", err)
	}
	if p, err := Compile(Glob, "[ab", ""); err != nil {
		t.Fatal(err)
	} else if ok, _ := p.Match("a"); ok {
		t.Error("an unclosed set matched")
	}
}
