package tableschema

import (
	"encoding/json"
	"testing"
)

// A field without constraints accepts any length: the default package read
// back from JSON once reported every company_name as "above maxLength 0".
func TestAFieldWithoutConstraintsHasNoLengthLimit(t *testing.T) {
	b, _ := json.MarshalIndent(DefaultDomainPackage(), "", "  ")
	p, err := ParsePackage(b)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := p.Resources[0].Schema.NewRowChecker()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rc.SetHeader([]string{"domain", "company_name", "scraper_version", "updated_at"}); err != nil {
		t.Fatal(err)
	}
	if _, errs := rc.Check([]string{"example.com", "Example Inc", "3", "2024-01-01T00:00:00Z"}); len(errs) != 0 {
		t.Fatalf("a valid record was rejected: %v", errs)
	}
}
