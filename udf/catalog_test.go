package udf

import "testing"

// TestFunctionDocs: every table function DHSI registers is documented for
// the catalog (psql's \df), with examples for each argument.
func TestFunctionDocs(t *testing.T) {
	docs := map[string]FunctionDoc{}
	for _, d := range FunctionDocs {
		if _, dup := docs[d.Name]; dup {
			t.Errorf("%s documented twice", d.Name)
		}
		docs[d.Name] = d
	}
	for _, name := range TableFunctions {
		d, ok := docs[name]
		if !ok {
			t.Errorf("table function %s has no FunctionDoc", name)
			continue
		}
		if len(d.Example) != len(d.Args) || d.Description == "" {
			t.Errorf("%s: %d arguments, %d examples, description %q", name, len(d.Args), len(d.Example), d.Description)
		}
	}
}
