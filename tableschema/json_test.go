package tableschema

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// sameJSONDoc compares two JSON documents by content.
func sameJSONDoc(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("unmarshal %s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("unmarshal %s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}

func TestRoundTripPreservesEveryProperty(t *testing.T) {
	tests := []struct {
		name string
		json string
	}{
		{
			name: "unknown properties survive at every level",
			json: `{
			  "name": "domain-index", "id": "urn:x", "licenses": [{"name": "CC0-1.0"}], "x-dhsi": {"width": 2},
			  "created": "2024-05-01T00:00:00Z", "keywords": ["dns"],
			  "resources": [{
			    "name": "shards", "path": "shards/*.usv", "format": "usv", "mediatype": "text/plain",
			    "encoding": "utf-8", "dialect": {"delimiter": "␟"}, "bytes": 10,
			    "schema": {
			      "fields": [
			        {"name": "domain", "type": "string", "example": "example.com", "rdfType": "http://schema.org/URL",
			         "constraints": {"required": true, "unique": true, "jsonSchema": {"x": 1}}},
			        {"name": "n", "type": "number", "decimalChar": ",", "groupChar": ".", "bareNumber": false},
			        {"name": "ok", "type": "boolean", "trueValues": ["y"], "falseValues": ["n"]},
			        {"name": "d", "type": "date", "format": "%d/%m/%Y",
			         "constraints": {"minimum": "01/01/2000", "maximum": "31/12/2099", "enum": ["01/01/2000"]}},
			        {"name": "s", "constraints": {"minLength": 0, "maxLength": 5, "pattern": "[a-z<>&]*"}}
			      ],
			      "primaryKey": ["domain"],
			      "missingValues": [],
			      "foreignKeys": [{"fields": "domain", "reference": {"resource": "", "fields": "domain"}}],
			      "x-note": "kept"
			    }
			  }]
			}`,
		},
		{
			name: "a one-element path list stays a list and a string primary key stays a string",
			json: `{"resources":[{"name":"r","path":["a.usv"],"schema":{"fields":[{"name":"a"}],"primaryKey":"a"}}]}`,
		},
		{
			name: "absent optional properties stay absent",
			json: `{"resources":[{"name":"r","path":"a.usv","schema":{"fields":[{"name":"a"}]}}]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParsePackage([]byte(tt.json))
			if err != nil {
				t.Fatal(err)
			}
			out, err := json.MarshalIndent(p, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			if !sameJSONDoc(t, []byte(tt.json), out) {
				t.Fatalf("round trip changed the document:\n%s", out)
			}
			// And again: the output is itself a valid package that
			// marshals to the same bytes.
			p2, err := ParsePackage(out)
			if err != nil {
				t.Fatal(err)
			}
			out2, _ := json.MarshalIndent(p2, "", "  ")
			if !bytes.Equal(out, out2) {
				t.Fatalf("second round trip differs:\n%s\n%s", out, out2)
			}
		})
	}
}

func TestMarshalPutsModelledPropertiesFirstAndSortsTheRest(t *testing.T) {
	f := Field{Name: "a", Type: "integer", Extra: map[string]json.RawMessage{
		"zeta": json.RawMessage(`1`), "alpha": json.RawMessage(`2`), "name": json.RawMessage(`"shadow"`),
	}}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"name":"a","type":"integer","alpha":2,"zeta":1}`; string(b) != want {
		t.Fatalf("got %s, want %s", b, want)
	}
}

func TestUnmarshalSchemaBindsMissingValues(t *testing.T) {
	var s Schema
	if err := json.Unmarshal([]byte(`{"fields":[{"name":"n","type":"integer"}],"missingValues":["-"]}`), &s); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Fields[0].Cast("-"); v != nil || err != nil {
		t.Fatalf("Cast(-) = %v, %v", v, err)
	}
}

func TestDefaultDomainPackage(t *testing.T) {
	b, err := json.MarshalIndent(DefaultDomainPackage(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	const want = `{
  "name": "domain-index",
  "profile": "tabular-data-package",
  "resources": [
    {
      "name": "shards",
      "path": "shards/*.usv",
      "profile": "tabular-data-resource",
      "format": "usv",
      "schema": {
        "fields": [
          {
            "name": "domain",
            "type": "string",
            "constraints": {
              "required": true
            }
          },
          {
            "name": "company_name",
            "type": "string"
          },
          {
            "name": "scraper_version",
            "type": "integer"
          },
          {
            "name": "updated_at",
            "type": "datetime"
          }
        ],
        "primaryKey": "domain"
      }
    }
  ]
}`
	// docs/format/datapackage.md shows these exact bytes.
	if string(b) != want {
		t.Fatalf("got\n%s", b)
	}
	p, err := ParsePackage(b)
	if err != nil {
		t.Fatalf("the default package does not validate: %v", err)
	}
	if got := p.Resources[0].Schema.FieldNames(); !reflect.DeepEqual(got, []string{"domain", "company_name", "scraper_version", "updated_at"}) {
		t.Fatalf("fields %q", got)
	}
}
