package tableschema

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

func FuzzParsePackage(f *testing.F) {
	def, _ := json.Marshal(DefaultDomainPackage())
	for _, seed := range []string{
		string(def), `{}`, `[]`, `null`, `{"resources":[{}]}`, `{"resources":"x"}`,
		pkgWithFields(`[{"name":"a","type":"integer","constraints":{"minimum":1,"enum":[1,2]}}]`, `"primaryKey":["a"]`),
		pkgWithFields(`[{"name":"d","type":"date","format":"%Y%m%d","constraints":{"maximum":"20240101"}}]`, `"missingValues":["","-"]`),
		pkgWithFields(`[{"name":"o","type":"object","constraints":{"enum":[{"a":1}],"minLength":1}}]`),
		pkgWithFields(`[{"name":"s","constraints":{"pattern":"(a"}}]`),
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePackage(data)
		if err != nil {
			return
		}
		// Whatever was accepted must survive a rewrite unchanged.
		out, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("marshal an accepted package: %v", err)
		}
		p2, err := ParsePackage(out)
		if err != nil {
			t.Fatalf("the rewritten package does not parse: %v\n%s", err, out)
		}
		out2, err := json.Marshal(p2)
		if err != nil || !bytes.Equal(out, out2) {
			t.Fatalf("rewrite is not stable: %v\n%s\n%s", err, out, out2)
		}
		// And every field of it compiles for checking and for DuckDB.
		for _, r := range p.Resources {
			if _, err := r.Schema.NewRowChecker(); err != nil {
				t.Fatalf("validated schema does not compile: %v", err)
			}
		}
	})
}

// fuzzFields are the fields FuzzCast exercises, one per type and format.
func fuzzFields() []Field {
	var fs []Field
	for _, tc := range parityCases {
		fs = append(fs, tc.field)
	}
	return fs
}

func FuzzCast(f *testing.F) {
	fields := fuzzFields()
	for i, tc := range parityCases {
		for _, in := range tc.inputs {
			f.Add(uint8(i), in)
		}
	}
	rfc3339 := Field{Name: "back", Type: TypeDatetime}
	f.Fuzz(func(t *testing.T, which uint8, s string) {
		fd := fields[int(which)%len(fields)]
		fd.Name = "f"
		v, err := fd.Cast(s)
		if err != nil {
			return
		}
		if v != nil {
			_ = fd.CheckConstraints(v)
		}
		tm, ok := v.(time.Time)
		if !ok || fd.EffectiveType() != TypeDatetime {
			return
		}
		// RFC 3339 has four-digit years only; an offset can push an
		// instant written in year 0000 or 9999 outside them.
		if tm.Year() < 0 || tm.Year() > 9999 {
			return
		}
		text := tm.Format(time.RFC3339Nano)
		back, err := rfc3339.Cast(text)
		if err != nil {
			t.Fatalf("%q cast to %v, whose RFC 3339 form %q does not cast back: %v", s, tm, text, err)
		}
		if !back.(time.Time).Equal(tm) {
			t.Fatalf("%q: %v -> %q -> %v", s, tm, text, back)
		}
	})
}

func FuzzPattern(f *testing.F) {
	for _, seed := range [][2]string{
		{"%Y-%m-%d", "2024-01-05"}, {"%Y%m%d%H%M%S%z", "20240105103000+0100"}, {"%I:%M %p", "3:04 pm"},
		{"%Y %j", "2024 366"}, {"%d %b %y", "5 jan 69"}, {"%%%Y%%", "%2024%"}, {"%", ""}, {"%Y%Y", "20242024"},
		{"%d.%m.%Y %H:%M:%S.%f %Z", "01.02.2024 10:00:00.5 UTC"}, {"ä%Yß", "ä2024ß"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, format, s string) {
		p, err := compilePattern(format)
		if err != nil {
			return
		}
		c, ok := p.parse(s)
		if ok && !c.validDate() {
			t.Fatalf("parse(%q, %q) accepted an invalid date %+v", format, s, c)
		}
		_ = DuckDBType(Field{Type: TypeDatetime, Format: format})
		if _, err := DuckDBCast(Field{Name: "x", Type: TypeDatetime, Format: format}, "t"); err != nil {
			t.Fatalf("a datetime pattern that compiles must have a DuckDB form: %v", err)
		}
	})
}
