package sqlserver

import (
	"testing"
)

func TestNumericBinaryRoundTrip(t *testing.T) {
	cases := []struct{ name, in string }{
		{"zero", "0"},
		{"zero with a scale", "0.000"},
		{"a large integer", "18446744073709551615"},
		{"a negative fraction below one", "-0.001"},
		{"digits on both sides of the point", "1234567890123456789012345678.0123456789"},
		{"trailing zeros in the scale", "-98765.4321000000"},
		{"a power of ten thousand", "100000000"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := appendNumericBinary(nil, tc.in)
			if err != nil {
				t.Fatal(err)
			}
			got, err := decodeNumericBinary(b)
			if err != nil || got != tc.in {
				t.Errorf("round trip of %s = %q, %v", tc.in, got, err)
			}
		})
	}
}

// FuzzDecodeParam feeds arbitrary bytes as every parameter type in both
// formats: decoding may fail but never panics or allocates without bound.
func FuzzDecodeParam(f *testing.F) {
	f.Add(uint32(oidNumeric), int16(1), []byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 5})
	f.Add(uint32(oidInt4Arr), int16(1), []byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 23, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 7})
	f.Add(uint32(oidInt4Arr), int16(1), []byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 23, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1})
	f.Add(uint32(oidDate), int16(1), []byte{0x7f, 0xff, 0xff, 0xff})
	f.Add(uint32(oidTimestampTZ), int16(1), []byte{0x80, 0, 0, 0, 0, 0, 0, 0})
	f.Add(uint32(oidBytea), int16(0), []byte(`\xzz`))
	f.Fuzz(func(t *testing.T, oid uint32, format int16, data []byte) {
		if _, ok := pgTypeByOID(oid); !ok {
			oid = pgTypes[int(oid)%len(pgTypes)].OID
		}
		v, err := decodeParam(oid, format, data)
		if err == nil && oid == oidNumeric && format == 1 {
			if _, err := appendNumericBinary(nil, v.(string)); err != nil && v != "Infinity" && v != "-Infinity" {
				t.Fatalf("decoded numeric %q does not encode: %v", v, err)
			}
		}
	})
}
